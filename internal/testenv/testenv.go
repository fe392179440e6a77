// Package testenv is what the project's tests share about the machine they
// run on: the Docker engine and the offline base image, the host tools a
// test needs, and golden files. A test that cannot run here is skipped with
// a message naming what is missing, except under
// FLIGHTDECK_REQUIRE_DOCKER=1 (CI), where it fails: there a missing engine,
// image or tool is the machine's fault, never a silent pass.
//
// Only tests import it. sandbox's own tests, inside package sandbox, keep
// a copy of Engine (this package imports sandbox).
package testenv

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flightdeck/flightdeck/internal/hostgit"
	"github.com/flightdeck/flightdeck/sandbox"
)

// Every engine a test process opens, and every process it starts, makes a
// test suite's objects (sandbox.LabelTest): no reaper of a real run takes
// them, and no test's reaper takes a user's.
func init() {
	if os.Getenv(sandbox.TestEnv) == "" {
		os.Setenv(sandbox.TestEnv, "go-test")
	}
}

// RequireEnv names the variable that turns every "cannot run here" skip
// into a failure.
const RequireEnv = "FLIGHTDECK_REQUIRE_DOCKER"

// BaseImage is the offline image the project's test images build from
// (`make base-image`).
const BaseImage = "flightdeck/base:bookworm"

// Required reports whether tests must not skip for a missing engine, image
// or tool.
func Required() bool { return os.Getenv(RequireEnv) == "1" }

// Missing skips the test, saying what is missing, or fails it under
// FLIGHTDECK_REQUIRE_DOCKER=1.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if Required() {
		t.Fatalf("%s (%s=1: a test that needs it fails)", msg, RequireEnv)
	}
	t.Skip(msg)
}

// Tool returns the path of a host program the test needs; see Missing.
func Tool(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		Missing(t, "%s is not installed on this machine", name)
	}
	return path
}

// Short skips an engine test under -short, which touches no engine.
func Short(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("engine tests do not run with -short")
	}
}

// Engine connects to the Docker engine, closed when the test ends; see
// Missing. Engine tests do not run with -short. The base image must be
// there: its absence fails the test, with what to run.
func Engine(t testing.TB) *sandbox.Docker {
	t.Helper()
	Short(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eng, err := sandbox.New(ctx)
	if err != nil {
		Missing(t, "no Docker engine: %v", err)
	}
	t.Cleanup(func() { eng.Close() })
	if _, err := eng.InspectImage(ctx, BaseImage); err != nil {
		t.Fatalf("the offline base image %s is missing (%v): run `make base-image`", BaseImage, err)
	}
	return eng
}

// Git runs git in dir for a test's fixture repository, with no user or
// system configuration, and returns its trimmed output; a failure fails
// the test.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=fixture", "-c", "user.email=fixture@example.invalid",
		"-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(hostgit.PlainEnv(os.Environ()), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// Golden compares got with the golden file at path, or, when update (a
// test package's -update flag), rewrites the file with got.
func Golden(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden file %s: %v (run the test with -update to write it)", path, err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs from what the code produces (rerun with -update to accept, then review the diff):\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}

// RunState describes what the engine holds of a run, for a failed wait on
// it: each of the run's containers (by its flightdeck.run label) with its
// trial, phase, state and, when it runs, its processes, then the
// machine's load average. Whoever reads only CI's log tells a product bug
// (a phase that never came) from a slow machine (everything there, late).
func RunState(runID string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "engine state of run %s:\n", runID)
	out, err := exec.Command("docker", "ps", "-a", "--filter", "label="+sandbox.LabelRun+"="+runID, "--format",
		`{{.ID}}	trial={{.Label "`+sandbox.LabelTrial+`"}} phase={{.Label "flightdeck.phase"}} {{.State}} ({{.Status}}) {{.Image}}`).CombinedOutput()
	switch {
	case err != nil:
		fmt.Fprintf(&b, "  docker ps: %v: %s\n", err, bytes.TrimSpace(out))
	case len(bytes.TrimSpace(out)) == 0:
		b.WriteString("  no container of the run\n")
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if err != nil || line == "" {
			break
		}
		fmt.Fprintf(&b, "  %s\n", line)
		if !strings.Contains(line, " running (") {
			continue
		}
		id, _, _ := strings.Cut(line, "\t")
		top, err := exec.Command("docker", "top", id, "-eo", "pid,etime,args").CombinedOutput()
		for i, p := range strings.Split(strings.TrimSpace(string(top)), "\n") {
			if i > 8 {
				b.WriteString("      …\n")
				break
			}
			fmt.Fprintf(&b, "      %s\n", Clip(p, 160))
		}
		if err != nil {
			fmt.Fprintf(&b, "      docker top: %v\n", err)
		}
	}
	b.WriteString(LoadAverage())
	return b.String()
}

// LoadAverage is the machine's load average and core count, as one line.
func LoadAverage() string {
	load, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return fmt.Sprintf("load average: %v\n", err)
	}
	f := strings.Fields(string(load))
	if len(f) > 3 {
		f = f[:3]
	}
	return fmt.Sprintf("load average %s on %d cores\n", strings.Join(f, " "), runtime.NumCPU())
}

// Tail is the last n of lines, joined, for a failure message.
func Tail(lines []string, n int) string {
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("… (%d line(s) before)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// Clip cuts s to at most n bytes, marking the cut.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Await polls cond every interval until it holds or within has passed; then
// the test fails with what was awaited and, from explain, the state that
// says why it never came (RunState, a command's output so far). Unlike
// require.Eventually, the explanation is taken when the wait fails, not
// when it begins.
func Await(t testing.TB, within, interval time.Duration, what string, cond func() bool, explain func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s: %s never happened\n%s", within, what, explain())
		}
		time.Sleep(interval)
	}
}

// Buffer is a bytes.Buffer that a command writes while a test reads it.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
