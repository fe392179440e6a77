package files

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/flightdeck/flightdeck/internal/atomicfile"
)

// digestCacheLines bounds the digests a cache file keeps, newest first.
const digestCacheLines = 16

// CachedSHA256 is SHA256 of path, remembered in cacheFile by path, size and
// modification time, so that a large file that has not changed (flightdeck's
// own executable, hashed by every run) is read once. A cache that cannot be
// read or written only costs the hash.
func CachedSHA256(path, cacheFile string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	key := fmt.Sprintf("%d %d %s", fi.Size(), fi.ModTime().UnixNano(), path)
	var keep []string
	if data, err := os.ReadFile(cacheFile); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			digest, k, ok := strings.Cut(line, " ")
			if ok && k == key {
				return digest, nil
			}
			if ok && !strings.HasSuffix(k, " "+path) {
				keep = append(keep, line)
			}
		}
	}
	digest, err := SHA256(path)
	if err != nil {
		return "", err
	}
	lines := append([]string{digest + " " + key}, keep...)
	if len(lines) > digestCacheLines {
		lines = lines[:digestCacheLines]
	}
	if os.MkdirAll(filepath.Dir(cacheFile), 0o755) == nil {
		_ = atomicfile.WriteFile(cacheFile, []byte(strings.Join(lines, "\n")+"\n"))
	}
	return digest, nil
}
