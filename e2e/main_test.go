package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/internal/testenv"
	"github.com/flightdeck/flightdeck/runner"
	"github.com/flightdeck/flightdeck/sandbox"
)

// Switches read from the environment.
const (
	envRequireDocker = "FLIGHTDECK_REQUIRE_DOCKER" // "1": no engine is a failure, not a skip
	envSlow          = "FLIGHTDECK_SLOW"           // "1": run the slow set
	envKeep          = "FLIGHTDECK_E2E_KEEP"       // "1": keep the tests' temp dir (runs, results) and say where
)

// cliTimeout bounds one flightdeck invocation: a hung one fails its test
// before the package's own timeout, and a slow one on a loaded machine (the
// shared attack run's 44 trials took over 10 minutes beside the runner's
// engine tests on 2 cores) does not.
const cliTimeout = 30 * time.Minute

// harness is what the tests of this process share: the binary, built once,
// and the engine. Task images stay: they are a cache the test processes of
// other packages, running at the same time, share.
var harness struct {
	dir string // temp dir for the binary

	buildOnce sync.Once
	bin       string
	buildErr  error

	engineOnce sync.Once
	eng        *sandbox.Docker
	engineErr  error
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "flightdeck-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	harness.dir = dir
	code := m.Run()
	if harness.eng != nil {
		harness.eng.Close()
	}
	if os.Getenv(envKeep) == "1" {
		fmt.Fprintf(os.Stderr, "e2e: kept %s\n", dir)
	} else {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// binary builds flightdeck once for the test process.
func binary(t *testing.T) string {
	t.Helper()
	harness.buildOnce.Do(func() {
		bin := filepath.Join(harness.dir, "flightdeck")
		cmd := exec.Command("go", "build", "-ldflags", "-X main.version=e2e", "-o", bin, "../cmd/flightdeck")
		out, err := cmd.CombinedOutput()
		if err != nil {
			harness.buildErr = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		harness.bin = bin
	})
	require.NoError(t, harness.buildErr)
	return harness.bin
}

// requireEngine returns the engine, skipping without one unless
// FLIGHTDECK_REQUIRE_DOCKER=1; it needs the docker CLI (to kill and list
// containers as a user would) and the offline base image.
func requireEngine(t *testing.T) *sandbox.Docker {
	t.Helper()
	testenv.Short(t)
	harness.engineOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		harness.eng, harness.engineErr = sandbox.New(ctx)
		if harness.engineErr == nil {
			_, harness.engineErr = exec.LookPath("docker")
		}
	})
	if harness.engineErr != nil {
		if os.Getenv(envRequireDocker) == "1" {
			t.Fatalf("%s=1 but no engine: %v", envRequireDocker, harness.engineErr)
		}
		t.Skipf("no Docker engine: %v", harness.engineErr)
	}
	if _, err := harness.eng.InspectImage(context.Background(), runner.FallbackImage); err != nil {
		t.Fatalf("the offline base image %s is missing: run `make base-image` (%v)", runner.FallbackImage, err)
	}
	return harness.eng
}

// requireSlow skips a test of the slow set unless FLIGHTDECK_SLOW=1.
func requireSlow(t *testing.T) {
	t.Helper()
	if os.Getenv(envSlow) != "1" {
		t.Skipf("slow: runs with %s=1", envSlow)
	}
}

// fixedBug fails a test that meets a bug once known and since fixed (ok is
// false): the message names the bug, so a regression says what came back.
func fixedBug(t *testing.T, ok bool, bug string, detail ...any) {
	t.Helper()
	if ok {
		return
	}
	msg := ""
	if len(detail) > 0 {
		msg = ": " + fmt.Sprint(detail...)
	}
	t.Fatalf("a fixed bug is back: %s (see docs/security.md)%s", bug, msg)
}

// cliRun is one finished flightdeck invocation.
type cliRun struct {
	code           int
	stdout, stderr string
	peakKB         int64 // the process's VmHWM, last seen
	signaled       bool  // killed by a signal
}

// flightdeck runs the binary in dir with extra environment and waits.
func flightdeck(t *testing.T, dir string, env []string, args ...string) cliRun {
	t.Helper()
	p := startFlightdeck(t, dir, env, args...)
	return p.wait(t, cliTimeout)
}

// process is a flightdeck process in flight, in its own process group.
type process struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	lines  chan string // stderr, line by line
	seen   []string    // stderr lines read so far (by the test goroutine)
	errBuf *testenv.Buffer
	peakKB chan int64
	done   chan error
}

func startFlightdeck(t *testing.T, dir string, env []string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &process{cmd: cmd, lines: make(chan string, 100000), errBuf: &testenv.Buffer{}, peakKB: make(chan int64, 1), done: make(chan error, 1)}
	cmd.Stdout = &p.stdout
	pipe, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pipe)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.errBuf.Write(append(sc.Bytes(), '\n'))
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
		close(p.lines)
	}()
	stop := make(chan struct{})
	go func() { p.peakKB <- watchPeak(cmd.Process.Pid, stop) }()
	go func() {
		<-scanned
		err := cmd.Wait()
		close(stop)
		p.done <- err
	}()
	return p
}

// watchPeak polls a process's VmHWM (its peak resident memory) until stop.
func watchPeak(pid int, stop <-chan struct{}) int64 {
	var peak int64
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if kb := vmHWM(pid); kb > peak {
			peak = kb
		}
		select {
		case <-stop:
			return peak
		case <-tick.C:
		}
	}
}

func vmHWM(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb
		}
	}
	return 0
}

// waitLine reads stderr until a line satisfies match, and returns it.
func (p *process) waitLine(t *testing.T, within time.Duration, match func(string) bool) string {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("flightdeck ended before the expected line; stderr:\n%s", p.errBuf.String())
			}
			p.seen = append(p.seen, l)
			if match(l) {
				return l
			}
		case <-deadline:
			t.Fatalf("no expected line within %s; stderr:\n%s\n%s", within, p.errBuf.String(), testenv.LoadAverage())
		}
	}
}

// runID reads the run id from the "run <id>: N trials" progress line.
func (p *process) runID(t *testing.T) string {
	t.Helper()
	l := p.waitLine(t, 5*time.Minute, func(l string) bool { return strings.HasPrefix(l, "run ") })
	return strings.TrimSuffix(strings.Fields(l)[1], ":")
}

// signal sends sig to flightdeck itself (not its group).
func (p *process) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(sig))
}

// trySignal sends sig and reports whether it landed: false when the
// process had already finished.
func (p *process) trySignal(t *testing.T, sig syscall.Signal) bool {
	t.Helper()
	err := p.cmd.Process.Signal(sig)
	if errors.Is(err, os.ErrProcessDone) {
		return false
	}
	require.NoError(t, err)
	return true
}

// wait waits for the process to end.
func (p *process) wait(t *testing.T, within time.Duration) cliRun {
	t.Helper()
	var err error
	select {
	case err = <-p.done:
	case <-time.After(within):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		t.Fatalf("flightdeck %s did not end within %s; stderr:\n%s", strings.Join(p.cmd.Args[1:], " "), within, p.errBuf.String())
	}
	r := cliRun{stdout: p.stdout.String(), stderr: p.errBuf.String(), peakKB: <-p.peakKB}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.signaled = true
		}
	} else if err != nil {
		t.Fatalf("flightdeck: %v", err)
	}
	return r
}
