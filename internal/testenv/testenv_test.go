package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGoldenUpdatesThenCompares(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "out.golden")
	Golden(t, path, []byte("one\n"), true)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "one\n", string(data))

	inner := &testing.T{}
	done := make(chan struct{})
	go func() { defer close(done); Golden(inner, path, []byte("two\n"), false) }()
	<-done
	assert.True(t, inner.Failed(), "a difference fails the test")
}

func TestToolFindsAProgram(t *testing.T) {
	assert.NotEmpty(t, Tool(t, "sh"))
}

func TestRequired(t *testing.T) {
	t.Setenv(RequireEnv, "1")
	assert.True(t, Required())
	t.Setenv(RequireEnv, "")
	assert.False(t, Required())
}

// fatalRecorder keeps what a helper fails a test with.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// A wait that never ends says what it waited for and, taken when it
// failed, why: here a run with a trial whose agent phase runs a command
// and another whose container never started.
func TestAwaitSaysWhyWithTheRunsState(t *testing.T) {
	Engine(t)
	run := fmt.Sprintf("testenv-%d", time.Now().UnixNano())
	t.Cleanup(func() {
		ids, _ := exec.Command("docker", "ps", "-aq", "--filter", "label=flightdeck.run="+run).Output()
		if f := strings.Fields(string(ids)); len(f) > 0 {
			_ = exec.Command("docker", append([]string{"rm", "-f"}, f...)...).Run()
		}
	})
	labels := func(trial, phase string) []string {
		return []string{"--label", "flightdeck.run=" + run, "--label", "flightdeck.trial=" + trial, "--label", "flightdeck.phase=" + phase}
	}
	out, err := exec.Command("docker", append(append([]string{"run", "-d"}, labels("t1", "agent")...), BaseImage, "sleep", "600")...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.Command("docker", append(append([]string{"create"}, labels("t2", "grade")...), BaseImage, "true")...).CombinedOutput()
	require.NoError(t, err, "%s", out)

	rec := &fatalRecorder{TB: t}
	calls := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		Await(rec, 100*time.Millisecond, 10*time.Millisecond, "the grade phase starting",
			func() bool { calls++; return false }, func() string { return RunState(run) })
	}()
	<-done
	assert.Greater(t, calls, 1, "the condition is polled")
	assert.Contains(t, rec.msg, "waited 100ms: the grade phase starting never happened")
	assert.Regexp(t, `trial=t1 phase=agent running \(Up [^)]*\) `+regexp.QuoteMeta(BaseImage), rec.msg)
	assert.Contains(t, rec.msg, "sleep 600", "a running container's processes")
	assert.Regexp(t, `trial=t2 phase=grade created \(Created\)`, rec.msg)
	assert.Regexp(t, `load average [0-9.]+ [0-9.]+ [0-9.]+ on \d+ cores`, rec.msg)

	assert.Contains(t, RunState(run+"-none"), "no container of the run")
}

func TestTail(t *testing.T) {
	assert.Equal(t, "a\nb", Tail([]string{"a", "b"}, 2))
	assert.Equal(t, "… (1 line(s) before)\nb\nc", Tail([]string{"a", "b", "c"}, 2))
	assert.Equal(t, "ab…", Clip("abc", 2))
}
