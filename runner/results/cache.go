package results

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/flightdeck/flightdeck/internal/files"
)

// cacheDirName is the results dir's subdirectory of cache pointers.
const cacheDirName = ".cache"

// CacheIndex is a results dir's index of finished trials across runs:
// .cache/<key>.json points at the result.json that key produced.
type CacheIndex struct{ ResultsDir string }

type cachePointer struct {
	Key    string `json:"key"`
	Result string `json:"result"` // "<run-id>/<trial>/result.json", relative to the results dir
}

func (c CacheIndex) file(key string) string {
	return filepath.Join(c.ResultsDir, cacheDirName, strings.TrimPrefix(key, "sha256:")+".json")
}

// Lookup returns the finished result for key and its trial directory, when
// one exists and still reads as a complete result for that key. Results of
// infrastructure errors and refused tasks are never reused.
func (c CacheIndex) Lookup(key string) (*Result, string, bool) {
	data, err := os.ReadFile(c.file(key))
	if err != nil {
		return nil, "", false
	}
	var p cachePointer
	if json.Unmarshal(data, &p) != nil || p.Key != key || !filepath.IsLocal(p.Result) {
		return nil, "", false
	}
	path := filepath.Join(c.ResultsDir, p.Result)
	r, err := ReadResult(path)
	if err != nil || r.CacheKey != key || r.Outcome.Ungraded() {
		return nil, "", false
	}
	return r, filepath.Dir(path), true
}

// Store records that key's result is in runID/trial.
func (c CacheIndex) Store(key, runID, trial string) error {
	if err := os.MkdirAll(filepath.Join(c.ResultsDir, cacheDirName), 0o755); err != nil {
		return fmt.Errorf("cache index: %w", err)
	}
	return WriteJSONFile(c.file(key), cachePointer{Key: key, Result: filepath.ToSlash(filepath.Join(runID, trial, ResultFile))})
}

// LinkTrialFiles links (or copies) a trial's files into dst, its
// result.json aside: the caller writes its own.
func LinkTrialFiles(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case rel == ResultFile || !d.Type().IsRegular():
			return nil
		}
		return files.LinkOrCopy(p, target)
	})
}
