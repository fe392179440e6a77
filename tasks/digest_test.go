package tasks

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The digest test vectors: small task directories under fixtures/digest with
// their expected digests in fixtures/digest/digests.golden.
var vectorsDir = filepath.Join("..", "fixtures", "digest")

const vectorsHeader = `# flightdeck's digest test vectors: DIR TASK_DIGEST FILES_DIGEST, one task a line.
# Each DIR under fixtures/digest is a small task directory. Other tools must compute the same.
# Regenerate (after a deliberate change) with: go test ./tasks -run TestDigestVectors -update
`

func vectorDirs(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(vectorsDir)
	require.NoError(t, err)
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
		}
	}
	require.GreaterOrEqual(t, len(dirs), 6)
	return dirs
}

func readGoldenDigests(t *testing.T) map[string][2]string {
	t.Helper()
	f, err := os.Open(filepath.Join(vectorsDir, "digests.golden"))
	require.NoError(t, err)
	defer f.Close()
	golden := map[string][2]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		require.Len(t, fields, 3, "golden line %q", line)
		golden[fields[0]] = [2]string{fields[1], fields[2]}
	}
	require.NoError(t, sc.Err())
	return golden
}

func TestDigestVectors(t *testing.T) {
	dirs := vectorDirs(t)
	if *update {
		var b strings.Builder
		b.WriteString(vectorsHeader)
		for _, d := range dirs {
			td, err := TaskDigest(filepath.Join(vectorsDir, d))
			require.NoError(t, err)
			fd, err := FilesDigest(filepath.Join(vectorsDir, d))
			require.NoError(t, err)
			fmt.Fprintf(&b, "%s %s %s\n", d, td, fd)
		}
		require.NoError(t, os.WriteFile(filepath.Join(vectorsDir, "digests.golden"), []byte(b.String()), 0o644))
	}
	golden := readGoldenDigests(t)
	assert.Len(t, golden, len(dirs), "every vector has a golden line and every golden line a vector")
	for _, d := range dirs {
		t.Run(d, func(t *testing.T) {
			want, ok := golden[d]
			require.True(t, ok, "no golden line for %s", d)
			dir := filepath.Join(vectorsDir, d)
			td, err := TaskDigest(dir)
			require.NoError(t, err)
			fd, err := FilesDigest(dir)
			require.NoError(t, err)
			assert.Equal(t, want[0], td, "task_digest")
			assert.Equal(t, want[1], fd, "files_digest")

			task, err := Load(dir, LoadOptions{Local: true})
			require.NoError(t, err)
			assert.Equal(t, want[0], task.Digest)
			assert.Equal(t, want[1], task.FilesDigest)
		})
	}
}

// TestDigestVectorsMatchPython computes the vectors with an independent
// Python implementation of the spec (testdata/digest.py).
func TestDigestVectorsMatchPython(t *testing.T) {
	py := python3WithTomllib(t)
	dirs := vectorDirs(t)
	args := []string{filepath.Join("testdata", "digest.py"), "digest"}
	for _, d := range dirs {
		args = append(args, filepath.Join(vectorsDir, d))
	}
	out, err := exec.Command(py, args...).Output()
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	require.Len(t, lines, len(dirs))
	golden := readGoldenDigests(t)
	for i, d := range dirs {
		want := golden[d]
		assert.Equal(t, want[0]+" "+want[1], lines[i], d)
	}
}

// TestDigestVectorsMeanWhatTheySay checks each vector's point against a
// variant of it: CRLF hashes as LF, binary files as they are, compiled Python
// not at all, files_digest not at all.
func TestDigestVectorsMeanWhatTheySay(t *testing.T) {
	golden := readGoldenDigests(t)
	copyVector := func(t *testing.T, name string) string {
		t.Helper()
		dst := filepath.Join(t.TempDir(), name)
		require.NoError(t, os.CopyFS(dst, os.DirFS(filepath.Join(vectorsDir, name))))
		return dst
	}
	rewrite := func(t *testing.T, dir string, fn func(rel string, b []byte) []byte) {
		t.Helper()
		require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			require.NoError(t, err)
			if d.IsDir() {
				return nil
			}
			rel, _ := filepath.Rel(dir, p)
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			return os.WriteFile(p, fn(filepath.ToSlash(rel), b), 0o644)
		}))
	}
	digests := func(t *testing.T, dir string) [2]string {
		t.Helper()
		td, err := TaskDigest(dir)
		require.NoError(t, err)
		fd, err := FilesDigest(dir)
		require.NoError(t, err)
		return [2]string{td, fd}
	}

	t.Run("crlf-text hashes as LF", func(t *testing.T) {
		dir := copyVector(t, "crlf-text")
		rewrite(t, dir, func(_ string, b []byte) []byte { return bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n")) })
		assert.Equal(t, golden["crlf-text"], digests(t, dir))
	})
	t.Run("binary-file is not normalized", func(t *testing.T) {
		dir := copyVector(t, "binary-file")
		rewrite(t, dir, func(_ string, b []byte) []byte { return bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n")) })
		got := digests(t, dir)
		assert.NotEqual(t, golden["binary-file"][0], got[0])
		assert.NotEqual(t, golden["binary-file"][1], got[1])
	})
	t.Run("pycache is skipped", func(t *testing.T) {
		dir := copyVector(t, "pycache")
		for _, p := range []string{"tests/__pycache__", "tests/old.pyc", "environment/pkg"} {
			require.NoError(t, os.RemoveAll(filepath.Join(dir, p)))
		}
		assert.Equal(t, golden["pycache"], digests(t, dir))
	})
	t.Run("files_digest is left out of task_digest", func(t *testing.T) {
		dir := copyVector(t, "files-digest-recorded")
		p := filepath.Join(dir, TaskFile)
		src, err := os.ReadFile(p)
		require.NoError(t, err)
		var kept []string
		for _, line := range strings.SplitAfter(string(src), "\n") {
			if !strings.HasPrefix(line, "files_digest") {
				kept = append(kept, "# reformatted\n"+line)
			}
		}
		require.NoError(t, os.WriteFile(p, []byte(strings.Join(kept, "")), 0o644))
		assert.Equal(t, golden["files-digest-recorded"], digests(t, dir))
	})
}

func TestDigestTree(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"task.toml":      "",
		"instruction.md": "x\n",
		"tests/test.sh":  "echo\r\n",
		"tests/a/b.txt":  "b",
	})
	fd, err := FilesDigest(dir)
	require.NoError(t, err)
	tree, err := DigestTree(filepath.Join(dir, "tests"), "tests")
	require.NoError(t, err)
	assert.Equal(t, fd, tree, "FilesDigest(dir) == DigestTree(dir/tests, \"tests\")")
	assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, fd)

	bare, err := DigestTree(filepath.Join(dir, "tests"), "")
	require.NoError(t, err)
	want, err := hashParts([]part{{name: "test.sh", data: []byte("echo\n")}, {name: "a/b.txt", data: []byte("b")}})
	require.NoError(t, err)
	assert.Equal(t, want, bare, "no prefix: parts named by their relative path alone")

	_, err = DigestTree(filepath.Join(dir, "missing"), "x")
	assert.Error(t, err)
}

func TestHashPartsFormat(t *testing.T) {
	// sha256("b\x001\x00B" + "a\x000\x00") in byte order of the names: a first.
	got, err := hashParts([]part{{name: "b", data: []byte("B")}, {name: "a"}})
	require.NoError(t, err)
	want, err := hashParts([]part{{name: "a", data: []byte{}}, {name: "b", data: []byte("B")}})
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Equal(t, "sha256:"+sha256Hex("a\x000\x00b\x001\x00B"), got)
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestDigestRefusesSymlinks(t *testing.T) {
	for _, where := range []string{"tests/link", "environment/link", "tests/sub/link"} {
		t.Run(where, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, map[string]string{"task.toml": "", "instruction.md": "", "tests/test.sh": "", "environment/Dockerfile": ""})
			p := filepath.Join(dir, filepath.FromSlash(where))
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.Symlink("../task.toml", p))
			_, err := TaskDigest(dir)
			assert.ErrorContains(t, err, "symlink")
		})
	}
}

func TestDigestMissingDirsAndFiles(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"task.toml": "", "instruction.md": ""})
	fd, err := FilesDigest(dir)
	require.NoError(t, err)
	none, err := hashParts(nil)
	require.NoError(t, err)
	assert.Equal(t, none, fd, "no tests/: the digest of no parts")
	_, err = TaskDigest(dir)
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(dir, InstructionFile)))
	_, err = TaskDigest(dir)
	assert.Error(t, err)
}

func TestNormalizeText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a\r\nb\r\n", "a\nb\n"},
		{"lone\rcr", "lone\rcr"},
		{"nul\x00\r\n", "nul\x00\r\n"},
		{"\xff\r\n", "\xff\r\n"},
		{"é\r\n", "é\n"},
		{"", ""},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, string(normalizeText([]byte(tt.in))), "%q", tt.in)
	}
}

// A task without instruction.md cannot be digested: the error names the
// file and says what it is for, not the system call that failed.
func TestDigestNamesAMissingInstruction(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, TaskFile), []byte("schema_version = \"1.4\"\n"), 0o644))
	_, err := TaskDigest(dir)
	require.Error(t, err)
	assert.Equal(t, filepath.Join(dir, InstructionFile)+": missing: a task's instruction to the agent (a multi-step task's are under steps/ and its task.toml has [[steps]])", err.Error())
	assert.NotContains(t, err.Error(), "lstat")
}
