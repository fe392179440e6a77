package vtrace

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tracer runs a command with its children, records what they executed
// and opened (read or written), and exits with the command's code.
func TestTrace(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the tracer runs on linux/amd64 only")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "check.sh")
	require.NoError(t, os.WriteFile(script, []byte("cat data.txt >/dev/null\necho out > written.txt\nexit 3\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "data.txt"), []byte("x\n"), 0o644))
	out := filepath.Join(dir, "trace.jsonl")
	var stderr bytes.Buffer
	code := Main([]string{out, "--", "sh", "-c", "cd " + dir + " && bash check.sh; exit $?"}, &stderr)
	assert.Equal(t, 3, code, stderr.String())
	f, err := os.Open(out)
	require.NoError(t, err)
	defer f.Close()
	events, err := Read(f)
	require.NoError(t, err)
	has := func(want Event) bool {
		return slices.ContainsFunc(events, func(e Event) bool {
			return e.Op == want.Op && e.Path == want.Path && e.Write == want.Write &&
				(want.Argv == nil || slices.Equal(e.Argv, want.Argv))
		})
	}
	assert.True(t, has(Event{Op: "open", Path: script}), "the script bash read: %v", events)
	assert.True(t, has(Event{Op: "open", Path: filepath.Join(dir, "data.txt")}), "a file cat read, by its relative path: %v", events)
	assert.True(t, has(Event{Op: "open", Path: filepath.Join(dir, "written.txt"), Write: true}), "a file written: %v", events)
	assert.True(t, slices.ContainsFunc(events, func(e Event) bool {
		return e.Op == "exec" && strings.HasSuffix(e.Path, "/bash") && slices.Equal(e.Argv, []string{"bash", "check.sh"}) && e.Cwd == dir
	}), "bash's exec with its argv and cwd: %v", events)
	assert.False(t, has(Event{Op: "open", Path: filepath.Join(dir, "missing")}))
	// What the script printed, into a file here, is its run's: a stub in
	// its place prints the same.
	printed, ok := Printed(events, script)
	assert.True(t, ok, "check.sh's output: %v", events)
	assert.Equal(t, "out\n", printed)
	_, ok = Printed(events, filepath.Join(dir, "data.txt"))
	assert.False(t, ok)

	code = Main([]string{filepath.Join(dir, "t2"), "--", "/nonexistent/cmd"}, &stderr)
	assert.Equal(t, 127, code)
	assert.Equal(t, 2, Main([]string{"out"}, &stderr))
}

func TestTargets(t *testing.T) {
	events := []Event{
		{Op: "exec", Path: "/usr/bin/python3", Argv: []string{"python3", "-I", "verify.py"}, Cwd: "/app"},
		{Op: "open", Path: "/app/verify.py"},
		{Op: "open", Path: "/app/helpers/util.py"},
		{Op: "open", Path: "/app/data.csv"},
		{Op: "open", Path: "/app/out.py", Write: true},
		{Op: "open", Path: "/usr/lib/python3.11/json/__init__.py"},
		{Op: "open", Path: "/tests/test_x.py"},
		{Op: "exec", Path: "/app/run-checks", Argv: []string{"/app/run-checks"}},
		{Op: "exec", Path: "/bin/bash", Argv: []string{"bash", "-c", "echo"}},
		{Op: "exec", Path: "/usr/bin/python3", Argv: []string{"python3", "-m", "pytest"}},
		{Op: "open", Path: "/app/solution.py"},
		{Op: "open", Path: "/app/verify.py"},
		{Op: "open", Path: "/tmp/grade.1/semver.py", Write: true},
		{Op: "open", Path: "/tmp/grade.1/semver.py"},
	}
	got := Targets(events, func(p string) bool { return p == "/app/solution.py" })
	assert.Equal(t, []Target{
		{Path: "/app/verify.py", How: "interpreted"},
		{Path: "/app/run-checks", How: "executed"},
		{Path: "/app/helpers/util.py", How: "loaded"},
	}, sortedByHow(got))
}

// sortedByHow orders targets as the test lists them: interpreted, executed,
// loaded.
func sortedByHow(ts []Target) []Target {
	order := map[string]int{"interpreted": 0, "executed": 1, "loaded": 2}
	out := slices.Clone(ts)
	slices.SortStableFunc(out, func(a, b Target) int { return order[a.How] - order[b.How] })
	return out
}

func TestScriptArg(t *testing.T) {
	for _, tt := range []struct {
		argv []string
		want string
	}{
		{[]string{"python3", "x.py"}, "x.py"},
		{[]string{"/usr/bin/python3.11", "-I", "-B", "/app/v.py", "arg"}, "/app/v.py"},
		{[]string{"python3", "-m", "pytest"}, ""},
		{[]string{"bash", "-c", "x"}, ""},
		{[]string{"node", "check.js"}, "check.js"},
		{[]string{"pythonista", "x.py"}, ""},
		{[]string{"cat", "x.py"}, ""},
		{[]string{"python3"}, ""},
	} {
		assert.Equal(t, tt.want, scriptArg(tt.argv), "%v", tt.argv)
	}
}

func TestUse(t *testing.T) {
	events := []Event{
		{Op: "exec", Path: "/bin/bash", Argv: []string{"bash", "/tests/test.sh"}, Cwd: "/app"},
		{Op: "open", Path: "/tests/test.sh"},
		{Op: "open", Path: "/tests/data.txt"},
		{Op: "open", Path: "/tests/helper.py"},
		{Op: "open", Path: "/tests/out.txt", Write: true},
		{Op: "exec", Path: "/tests/run"},
	}
	for file, want := range map[string]string{
		"/tests/test.sh": "code", "/tests/data.txt": "data", "/tests/helper.py": "code",
		"/tests/out.txt": "", "/tests/run": "code", "/tests/unused.txt": "",
	} {
		assert.Equal(t, want, Use(events, file), file)
	}
}

// DataFiles are what a verifier compares with, not the files of the code
// it runs, its caches or its own writes.
func TestDataFiles(t *testing.T) {
	events := []Event{
		{Op: "exec", Path: "/usr/bin/python3", Argv: []string{"python3", "/tests/check.py"}, Cwd: "/"},
		{Op: "open", Path: "/tests/check.py"},
		{Op: "open", Path: "/opt/task/expected.json"},
		{Op: "open", Path: "/opt/task/expected.json"},
		{Op: "open", Path: "/app/out.txt"},
		{Op: "open", Path: "/srv/venv/lib/python3.11/site-packages/pkg/__init__.py"},
		{Op: "open", Path: "/srv/venv/share/data.txt"},
		{Op: "open", Path: "/root/.cache/uv/wheel.json"},
		{Op: "open", Path: "/data/lib/_speedups.cpython-311.so"},
		{Op: "open", Path: "/data/answers.txt"},
		{Op: "open", Path: "/data/made.txt", Write: true},
		{Op: "open", Path: "/data/made.txt"},
		{Op: "open", Path: "/etc/passwd"},
		{Op: "open", Path: "/var/cache/x"},
		{Op: "open", Path: "/tmp/.flightdeck-vtrace/x"},
	}
	// An answer kept in a hidden directory is found; a tool's cache, read
	// file after file, and a repository's files are not.
	events = append(events, Event{Op: "open", Path: "/srv/.cache/out.sha256"}, Event{Op: "open", Path: "/data/.git/HEAD"})
	for i := range 4 {
		events = append(events, Event{Op: "open", Path: fmt.Sprintf("/data/.uv/entry%d.json", i)})
	}
	oracleWrote := func(p string) bool { return p == "/app/out.txt" }
	assert.Equal(t, []string{"/opt/task/expected.json", "/data/answers.txt", "/srv/.cache/out.sha256"}, DataFiles(events, oracleWrote))

	// Code the verifier runs from /app makes /app's data that code's own.
	events = append(events, Event{Op: "open", Path: "/app/main.py"}, Event{Op: "open", Path: "/app/config.txt"})
	assert.NotContains(t, DataFiles(events, oracleWrote), "/app/config.txt")
}

// The watcher reports the files opened while its command ran, and only
// those, and exits with the command's code.
func TestWatch(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the watcher runs on linux only")
	}
	dir := t.TempDir()
	read, unread := filepath.Join(dir, "read.txt"), filepath.Join(dir, "unread.txt")
	require.NoError(t, os.WriteFile(read, []byte("x\n"), 0o644))
	require.NoError(t, os.WriteFile(unread, []byte("y\n"), 0o644))
	out := filepath.Join(dir, "opened")
	var stderr bytes.Buffer
	// Read once before: a cached read is an open all the same.
	_, err := os.ReadFile(read)
	require.NoError(t, err)
	code := WatchMain([]string{out, read, unread, filepath.Join(dir, "missing"), "--", "sh", "-c", "cat " + read + " >/dev/null; exit 4"}, &stderr)
	assert.Equal(t, 4, code, stderr.String())
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, read+"\n", string(got))
	// A second run appends.
	assert.Equal(t, 0, WatchMain([]string{out, unread, "--", "cat", unread}, &stderr))
	got, _ = os.ReadFile(out)
	assert.Equal(t, read+"\n"+unread+"\n", string(got))
	assert.Equal(t, 2, WatchMain([]string{out, "--"}, &stderr))
	// A command that cannot start leaves no record at all.
	none := filepath.Join(dir, "none")
	assert.Equal(t, 127, WatchMain([]string{none, read, "--", filepath.Join(dir, "no-such-command")}, &stderr))
	assert.NoFileExists(t, none)
}
