package trial

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/testenv"
	"github.com/flightdeck/flightdeck/runner/results"
)

// newWorkDir makes a seeded work dir with its base commits, without an
// engine: files are written as a seed would have copied them.
func newWorkDir(t *testing.T, files map[string]string) *WorkDir {
	t.Helper()
	return newWorkDirs(t, files, 1)[0]
}

// newWorkDirs prepares a seed holding files once, as a run does, and n work
// dirs copied from it.
func newWorkDirs(t *testing.T, files map[string]string, n int) []*WorkDir {
	t.Helper()
	testenv.Tool(t, "git")
	root := t.TempDir()
	tree, scratch := filepath.Join(root, "seed", "tree"), filepath.Join(root, "seed")
	require.NoError(t, os.MkdirAll(tree, 0o755))
	for name, content := range files {
		writeTestFile(t, filepath.Join(tree, name), content)
	}
	seed, err := prepareSeed(context.Background(), tree, scratch, true)
	require.NoError(t, err)
	var ws []*WorkDir
	for i := range n {
		host, git := filepath.Join(root, fmt.Sprint(i), "workdir"), filepath.Join(root, fmt.Sprint(i), "git")
		require.NoError(t, os.MkdirAll(host, 0o755))
		require.NoError(t, os.MkdirAll(git, 0o755))
		w, err := prepareWorkDir(seed, "/app", host, git)
		require.NoError(t, err)
		ws = append(ws, w)
	}
	return ws
}

// Work dirs copied from one prepared seed share its base commits but
// nothing else, and the copied index vouches for no file: a same-size
// change with the seed's modification time is still seen.
func TestWorkDirsFromOneSeed(t *testing.T) {
	ws := newWorkDirs(t, map[string]string{"src/a.py": "a = 1\n", "README": "seed\n"}, 2)
	a, b := ws[0], ws[1]
	assert.Equal(t, a.Base, b.Base)
	assert.Len(t, a.Base, 40)
	ctx := context.Background()

	path := filepath.Join(a.Host, "src", "a.py")
	fi, err := os.Stat(path)
	require.NoError(t, err)
	writeTestFile(t, path, "a = 2\n")
	require.NoError(t, os.Chtimes(path, fi.ModTime(), fi.ModTime()))
	files, patch, err := a.change(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"src/a.py"}, files)
	assert.Contains(t, string(patch), "+a = 2")

	gitIn(t, a.Host, "commit", "-qam", "Change a")
	commits, err := a.commits(ctx)
	require.NoError(t, err)
	require.Len(t, commits, 1)
	assert.Equal(t, "Change a", commits[0].Subject)

	files, patch, err = b.change(ctx)
	require.NoError(t, err)
	assert.Empty(t, files, "the other work dir is untouched")
	assert.Empty(t, patch)
	commits, err = b.commits(ctx)
	require.NoError(t, err)
	assert.Empty(t, commits)
	assert.Equal(t, "a = 1\n", readFile(t, filepath.Join(b.Host, "src", "a.py")))
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

// gitIn runs git in dir as an agent would (its own identity).
func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=a", "-c", "user.email=a@b"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
}

func TestWorkDirChangeAndCommits(t *testing.T) {
	w := newWorkDir(t, map[string]string{"README": "seed\n", "src/a.py": "a = 1\n", ".gitignore": "*.log\n"})
	assert.Len(t, w.Base, 40)
	ctx := context.Background()

	files, patch, err := w.change(ctx)
	require.NoError(t, err)
	assert.Empty(t, files, "nothing changed yet")
	assert.Empty(t, patch)

	writeTestFile(t, filepath.Join(w.Host, "docs/plan.md"), "plan\n")
	gitIn(t, w.Host, "add", "docs/plan.md")
	gitIn(t, w.Host, "commit", "-qm", "Plan it")
	writeTestFile(t, filepath.Join(w.Host, "src/a.py"), "a = 2\n")
	writeTestFile(t, filepath.Join(w.Host, "src/b.py"), "b = 1\n")
	gitIn(t, w.Host, "add", "-A")
	gitIn(t, w.Host, "commit", "-qm", "Code it")
	writeTestFile(t, filepath.Join(w.Host, "notes.txt"), "uncommitted\n")
	writeTestFile(t, filepath.Join(w.Host, "debug.log"), "ignored\n")
	require.NoError(t, os.Remove(filepath.Join(w.Host, "README")))

	files, patch, err = w.change(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"README", "docs/plan.md", "notes.txt", "src/a.py", "src/b.py"}, files,
		"committed and uncommitted paths since the base, ignored files left out")
	assert.Contains(t, string(patch), "+a = 2")
	assert.Contains(t, string(patch), "deleted file mode")

	commits, err := w.commits(ctx)
	require.NoError(t, err)
	require.Len(t, commits, 2)
	assert.Equal(t, "Plan it", commits[0].Subject)
	assert.Equal(t, []string{"docs/plan.md"}, commits[0].Files)
	assert.Equal(t, []string{"src/a.py", "src/b.py"}, commits[1].Files)

	events := recoveredEvents(commits, files)
	var got []string
	for _, e := range events {
		got = append(got, e.Kind+" "+e.Path+e.Message)
	}
	assert.Equal(t, []string{
		"edit docs/plan.md", "git.commit Plan it",
		"edit src/a.py", "edit src/b.py", "git.commit Code it",
		"edit README", "edit notes.txt",
	}, got)
	for i, e := range events {
		assert.Equal(t, i+1, e.Seq)
	}
}

func TestWorkDirExistingRepository(t *testing.T) {
	testenv.Tool(t, "git")
	root := t.TempDir()
	host := filepath.Join(root, "w")
	writeTestFile(t, filepath.Join(host, "a"), "1\n")
	gitIn(t, root, "init", "-q", "w")
	gitIn(t, host, "add", "-A")
	gitIn(t, host, "commit", "-qm", "upstream")
	w := &WorkDir{Host: host, scratch: filepath.Join(root, "g")}
	require.NoError(t, os.MkdirAll(w.scratch, 0o755))
	require.NoError(t, w.baseCommit(context.Background()))
	out, err := exec.Command("git", "-C", host, "log", "--format=%s").Output()
	require.NoError(t, err)
	assert.Equal(t, "upstream\n", string(out), "a clean repository keeps its history and HEAD is the base")

	writeTestFile(t, filepath.Join(host, "b"), "dirty\n")
	require.NoError(t, w.baseCommit(context.Background()))
	out, err = exec.Command("git", "-C", host, "log", "--format=%s").Output()
	require.NoError(t, err)
	assert.Equal(t, "flightdeck: base\nupstream\n", string(out), "a dirty one gets a base commit on top")
}

// An agent's repository that configures a filter is not read by host git,
// and the filter never runs.
func TestCommitsRefusesAnUnsafeRepository(t *testing.T) {
	w := newWorkDir(t, map[string]string{"a": "1\n"})
	marker := filepath.Join(t.TempDir(), "ran")
	gitIn(t, w.Host, "config", "filter.x.clean", "touch "+marker)
	writeTestFile(t, filepath.Join(w.Host, ".gitattributes"), "* filter=x\n")
	_, err := w.commits(context.Background())
	assert.ErrorContains(t, err, "filter.x.clean")
	files, _, err := w.change(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{".gitattributes"}, files)
	assert.NoFileExists(t, marker, "the shadow repository never runs the agent's filter")
}

func TestParseCommitLog(t *testing.T) {
	out := []byte("\x1eaaa\x1fone two\x00\na\x00x y\x00\x1ebbb\x1fthree\x00\nc\x00d/e\x00")
	cs := parseCommitLog(out)
	require.Len(t, cs, 2)
	assert.Equal(t, commitRecord{Hash: "aaa", Subject: "one two", Files: []string{"a", "x y"}}, cs[0])
	assert.Equal(t, commitRecord{Hash: "bbb", Subject: "three", Files: []string{"c", "d/e"}}, cs[1])
	assert.Empty(t, parseCommitLog(nil))
}

func TestWriteEvidence(t *testing.T) {
	dir := t.TempDir()
	code := 0
	ev := &grader.Evidence{
		Events:    []grader.Event{{Seq: 1, Kind: "command", Command: "make", ExitCode: &code}},
		DiffFiles: []string{"a", "b/c"},
	}
	require.NoError(t, writeEvidence(dir, ev, []byte("patch")))
	assert.Equal(t, "{\"seq\":1,\"kind\":\"command\",\"command\":\"make\",\"exit_code\":0}\n", readFile(t, filepath.Join(dir, results.EventsFile)))
	assert.Equal(t, "a\nb/c\n", readFile(t, filepath.Join(dir, results.DiffFiles)))
	assert.Equal(t, "patch", readFile(t, filepath.Join(dir, results.DiffPatch)))
}

func TestDiffFileLine(t *testing.T) {
	tests := map[string]string{
		"calc/__init__.py":   "calc/__init__.py",
		"calc/__init__.py ":  `"calc/__init__.py "`,
		"calc/__init__.py\n": `"calc/__init__.py\n"`,
		"a\"b":               `"a\"b"`,
		"bad\xffname":        `"bad\xffname"`,
		"ünïcode.md":         "ünïcode.md",
	}
	for name, want := range tests {
		assert.Equal(t, want, diffFileLine(name), "%q", name)
	}
}

func TestSplitNULKeepsNames(t *testing.T) {
	assert.Equal(t, []string{"a ", "b\n", " c"}, splitNUL([]byte("a \x00b\n\x00 c\x00")))
}

func TestCappedBuffer(t *testing.T) {
	c := &cappedBuffer{max: 5}
	for _, s := range []string{"abc", "defg", "hij"} {
		n, err := c.Write([]byte(s))
		assert.NoError(t, err)
		assert.Equal(t, len(s), n, "a capped buffer takes every write whole")
	}
	assert.Equal(t, "abcde", c.buf.String())
	assert.Equal(t, int64(5), c.dropped)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}
