package main

import (
	"bufio"
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/internal/testenv"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/sandbox"
)

// signalsAt feeds an interrupts the signals given, each after the one
// before by its gap, and returns what it wrote, the codes it exited with,
// and whether its contexts are done.
func signalsAt(t *testing.T, guarded bool, sigs []os.Signal, gaps []time.Duration) (said string, exits []int, stopped, hurried bool) {
	t.Helper()
	var out bytes.Buffer
	ctx, stop := context.WithCancel(context.Background())
	hurry, hurried2 := context.WithCancel(context.Background())
	t.Cleanup(func() { stop(); hurried2() })
	in := &interrupts{stderr: &out, window: repeatWindow, guarded: guarded, stop: stop, hurry: hurried2,
		exit: func(code int) { exits = append(exits, code) }, last: map[os.Signal]time.Time{}}
	at := time.Unix(1000, 0)
	for i, sig := range sigs {
		if i > 0 {
			at = at.Add(gaps[i-1])
		}
		in.receive(sig, at)
	}
	assert.Equal(t, len(sigs) > 0, in.interrupted())
	return out.String(), exits, ctx.Err() != nil, hurry.Err() != nil
}

func TestInterrupts(t *testing.T) {
	const ms = time.Millisecond
	sigint, sigterm := os.Interrupt, os.Signal(syscall.SIGTERM)
	t.Run("the same signal within the window is one", func(t *testing.T) {
		said, exits, stopped, hurried := signalsAt(t, true, []os.Signal{sigint, sigint, sigint}, []time.Duration{ms, 900 * ms})
		assert.True(t, stopped)
		assert.False(t, hurried)
		assert.Empty(t, said)
		assert.Empty(t, exits)
	})
	t.Run("again past the window: hurry, never exit", func(t *testing.T) {
		said, exits, stopped, hurried := signalsAt(t, true, []os.Signal{sigint, sigint, sigint, sigint}, []time.Duration{1500 * ms, 1500 * ms, 1500 * ms})
		assert.True(t, stopped)
		assert.True(t, hurried)
		assert.Empty(t, exits, "a command that cleans up is never ended by a signal")
		assert.Contains(t, said, "flightdeck: stopping now (a second signal, SIGINT): removing the run's containers and masking its files first")
		assert.Equal(t, 2, strings.Count(said, "flightdeck: still stopping"))
	})
	t.Run("another signal at once counts", func(t *testing.T) {
		said, exits, _, hurried := signalsAt(t, true, []os.Signal{sigterm, sigint}, []time.Duration{10 * ms})
		assert.True(t, hurried)
		assert.Contains(t, said, "a second signal, SIGINT")
		assert.Empty(t, exits)
	})
	t.Run("a command with nothing to clean up ends at the second", func(t *testing.T) {
		_, exits, stopped, _ := signalsAt(t, false, []os.Signal{sigint, sigint}, []time.Duration{ms})
		assert.True(t, stopped)
		assert.Empty(t, exits, "the same press twice")
		_, exits, _, _ = signalsAt(t, false, []os.Signal{sigint, sigint}, []time.Duration{1500 * ms})
		assert.Equal(t, []int{exitInterrupted}, exits)
	})
}

func TestCleansUp(t *testing.T) {
	for args, want := range map[string]bool{
		"run": true, "run --resume x": true, "build": true, "images save": true, "task verify d": true,
		"task check d": false, "report x": false, "gc": false, "": false, "version": false,
	} {
		assert.Equal(t, want, cleansUp(strings.Fields(args)), args)
	}
}

// leakSecret is what the agents of leakSuite print, write and echo.
const leakSecret = "fd-leak-7f3a9c2e51"

// leakSuite runs two trials at once, one in each container model, whose
// agents print the secret (from --env-file, and as a variant's ${NAME})
// again and again, split across writes, write it into their work dir and,
// in Harbor's model, into /logs/agent, which is the trial dir on the host.
// PREPARE is more of the command, run first. The agents print until they
// are stopped (the test's signals), so the two overlap however late the
// second starts: the Harbor trial builds its image first, which on a cold,
// busy engine takes longer than any fixed loop of the other. Their timeout
// (ten times the tasks' 60 s) outlasts the test's own deadlines.
const leakSuite = `
name: leak
tasks: [FIXTURES/script, FIXTURES/harbor]
variants:
  leak:
    agent: command
    command: 'PREPARE echo "$LEAK_KEY" > leak.txt; if [ -d /logs/agent ]; then echo "$API_KEY" > /logs/agent/token.txt; fi; while :; do echo "token $LEAK_KEY"; printf "split %s" "${API_KEY:0:7}"; sleep 0.01; printf "%s\n" "${API_KEY:7}"; done'
    env: {API_KEY: "${LEAK_KEY}"}
concurrency: 2
timeout_multiplier: {agent: 10}
results: out
`

// slowCleanup makes an interrupted run of leakSuite busy for a while after
// its first signal: a big file with the secret at its end, in the Harbor
// trial's dir, which the run must read and mask before it exits.
const slowCleanup = `if [ -d /logs/agent ]; then { head -c 60000000 /dev/zero | tr "\\0" x; echo "$LEAK_KEY"; } > /logs/agent/big.txt; fi;`

// interruptedRun is a run of leakSuite stopped by signals.
type interruptedRun struct {
	dir, runID, runDir string
	stderr             []string
	code               int
	took               time.Duration // from the first signal to the exit
}

// interruptLeakingRun starts leakSuite, waits until both agents print the
// secret, then calls signal with a function that sends a signal to the
// run's process group (false: the process was gone), and waits for the
// process to exit.
func interruptLeakingRun(t *testing.T, prepare string, signal func(send func(syscall.Signal) bool)) interruptedRun {
	t.Helper()
	runEngine(t)
	bin := filepath.Join(t.TempDir(), "flightdeck")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	dir, suiteFile := writeRunSuite(t, strings.Replace(leakSuite, "PREPARE", prepare, 1))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "keys.env"), []byte("LEAK_KEY="+leakSecret+"\n"), 0o600))

	cmd := exec.Command(bin, "run", suiteFile, "--env-file", "keys.env")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "FLIGHTDECK_CACHE_DIR="+filepath.Join(dir, "cache"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	r := interruptedRun{dir: dir}
	// A test that fails before its signals leaves no agent printing: the
	// process group is killed and the run's objects are removed.
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if r.runID != "" {
			removeRunObjects(r.runID)
		}
	})
	lines := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()

	deadline := time.After(5 * time.Minute)
	for started := 0; started < 2; {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "the run ended before its trials started:\n%s", strings.Join(r.stderr, "\n"))
			r.stderr = append(r.stderr, l)
			if strings.HasPrefix(l, "run ") && r.runID == "" {
				r.runID = strings.TrimSuffix(strings.Fields(l)[1], ":")
			}
			if strings.HasPrefix(l, "start ") {
				started++
			}
		case <-deadline:
			t.Fatalf("the trials did not start within 5m:\n%s\n%s", testenv.Tail(r.stderr, 40), testenv.LoadAverage())
		}
	}
	require.NotEmpty(t, r.runID)
	r.runDir = filepath.Join(dir, "out", r.runID)
	drained := make(chan struct{})
	// What the run printed while it is waited on, and what the engine
	// holds: the reason when a wait fails.
	var mu sync.Mutex
	go func() {
		for l := range lines {
			mu.Lock()
			r.stderr = append(r.stderr, l)
			mu.Unlock()
		}
		close(drained)
	}()
	explain := func() string {
		mu.Lock()
		defer mu.Unlock()
		return "the run's stderr:\n" + testenv.Tail(r.stderr, 40) + "\n" + testenv.RunState(r.runID)
	}
	testenv.Await(t, 3*time.Minute, 50*time.Millisecond, "both agents printing the secret at once",
		func() bool { return leakingAgents(r.runID) == 2 }, explain)
	testenv.Await(t, 2*time.Minute, 50*time.Millisecond, "the Harbor agent writing the secret into the trial's dir", func() bool {
		_, err := os.Stat(filepath.Join(r.runDir, "harbor__leak__1", "logs", "agent", "token.txt"))
		return err == nil
	}, explain)
	time.Sleep(300 * time.Millisecond) // their output reaches the disk
	checkLogsMasked(t, r.runDir)

	exited := make(chan error, 1)
	ended := make(chan struct{})
	rest := make(chan []string, 1)
	go func() {
		<-drained
		err := cmd.Wait()
		close(ended)
		mu.Lock()
		rest <- r.stderr
		mu.Unlock()
		exited <- err
	}()
	sent := time.Now()
	signal(func(sig syscall.Signal) bool {
		select {
		case <-ended:
			return false
		default:
			return syscall.Kill(-cmd.Process.Pid, sig) == nil
		}
	})
	select {
	case err := <-exited:
		r.took = time.Since(sent)
		r.stderr = <-rest
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "an interrupted run does not exit 0:\n%s", strings.Join(r.stderr, "\n"))
		r.code = ee.ExitCode()
	case <-time.After(2 * time.Minute):
		t.Fatalf("the run did not exit within 2m of the signals:\n%s", explain())
	}
	return r
}

// removeRunObjects removes what a run left on the engine, for a test that
// ended before the run did.
func removeRunObjects(runID string) {
	filter := "label=" + sandbox.LabelRun + "=" + runID
	if ids, err := exec.Command("docker", "ps", "-aq", "--filter", filter).Output(); err == nil && len(strings.Fields(string(ids))) > 0 {
		_ = exec.Command("docker", append([]string{"rm", "-f"}, strings.Fields(string(ids))...)...).Run()
	}
	if ids, err := exec.Command("docker", "network", "ls", "-q", "--filter", filter).Output(); err == nil && len(strings.Fields(string(ids))) > 0 {
		_ = exec.Command("docker", append([]string{"network", "rm"}, strings.Fields(string(ids))...)...).Run()
	}
}

// leakingAgents counts the run's containers whose agent command runs.
// (docker top shows bash -c's whole command line, the loop's included.)
func leakingAgents(runID string) int {
	out, err := exec.Command("docker", "ps", "-q", "--filter", "label=flightdeck.run="+runID).Output()
	if err != nil {
		return 0
	}
	n := 0
	for _, id := range strings.Fields(string(out)) {
		top, err := exec.Command("docker", "top", id, "-eo", "pid,args").Output()
		if err == nil && strings.Contains(string(top), "while :; do echo \"token") {
			n++
		}
	}
	return n
}

// checkStoppedClean checks what an interrupted run must leave: exit code
// 130, run.json interrupted, nothing of the run's on the engine, no work
// dir, and the secret in no file under the results dir, nor on stderr.
func checkStoppedClean(t *testing.T, r interruptedRun) {
	t.Helper()
	all := strings.Join(r.stderr, "\n")
	assert.Equal(t, exitInterrupted, r.code, "the exit code:\n%s", all)
	rec, err := results.ReadRunRecord(r.runDir)
	require.NoError(t, err, "run.json:\n%s", all)
	assert.Equal(t, results.StatusInterrupted, rec.Status)
	assert.Equal(t, exitInterrupted, rec.ExitCode, "run.json's exit code is the process's")
	html, err := os.ReadFile(filepath.Join(r.runDir, "report.html"))
	require.NoError(t, err)
	assert.Contains(t, string(html), "interrupted, exit code 130")
	t.Logf("exit %d, run.json %s, %.1fs after the first signal", r.code, rec.Status, r.took.Seconds())
	assert.Contains(t, all, "--resume "+r.runID+" --results out")
	for _, what := range [][]string{{"ps", "-a"}, {"network", "ls"}} {
		out, err := exec.Command("docker", append(what, "-q", "--filter", "label=flightdeck.run="+r.runID)...).Output()
		require.NoError(t, err)
		assert.Empty(t, strings.TrimSpace(string(out)), "docker %s: the run's objects are left", what[0])
	}
	assert.NoDirExists(t, filepath.Join(r.runDir, ".work"))
	files := 0
	err = filepath.WalkDir(filepath.Join(r.dir, "out"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		files++
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		assert.NotContains(t, string(data), leakSecret, "%s holds the secret", p)
		return nil
	})
	require.NoError(t, err)
	assert.Greater(t, files, 3)
	assert.NotContains(t, all, leakSecret)
}

// Two SIGINTs to the process group within milliseconds (timeout -s INT,
// a Ctrl-C that reaches a shell too) are one Ctrl-C: the run stops as from
// one, and leaves nothing behind, nothing unmasked.
func TestInterruptTwiceAtOnce(t *testing.T) {
	r := interruptLeakingRun(t, "", func(send func(syscall.Signal) bool) {
		require.True(t, send(syscall.SIGINT))
		time.Sleep(2 * time.Millisecond)
		send(syscall.SIGINT)
	})
	checkStoppedClean(t, r)
	assert.NotContains(t, strings.Join(r.stderr, "\n"), "stopping now", "the same press twice")

	// The run is found where the suite put it (out/), from the suite's dir
	// and wherever --results names it; elsewhere the error says where to look.
	code, out, stderr := runCLI(t, r.dir, "report", r.runID)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stderr, "found run "+r.runID+" in out (suite.yaml's results dir); name it with --results out")
	assert.Contains(t, out, "script__leak__1")
	code, _, stderr = runCLI(t, r.dir, "report", "--html", r.runID)
	require.Equal(t, exitOK, code, stderr)
	elsewhere := t.TempDir()
	code, _, stderr = runCLI(t, elsewhere, "report", r.runID)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "no run "+r.runID+" in results (run.json not found)")
	assert.Contains(t, stderr, "add --results DIR")
	code, _, stderr = runCLI(t, elsewhere, "report", "--results", filepath.Join(r.dir, "out"), r.runID)
	assert.Equal(t, exitOK, code, stderr)
}

// A second SIGINT past the window makes cleanup hurry; it still removes
// everything and masks everything.
func TestInterruptAgainLater(t *testing.T) {
	landed := false
	r := interruptLeakingRun(t, slowCleanup, func(send func(syscall.Signal) bool) {
		require.True(t, send(syscall.SIGINT))
		time.Sleep(1500 * time.Millisecond)
		landed = send(syscall.SIGINT)
	})
	checkStoppedClean(t, r)
	t.Logf("the second SIGINT came while the run cleaned up: %t", landed)
	if landed {
		assert.Contains(t, strings.Join(r.stderr, "\n"), "flightdeck: stopping now (a second signal, SIGINT)")
	}
}

// SIGTERM, then SIGINT: the second signal, whichever it is.
func TestInterruptTermThenInt(t *testing.T) {
	landed := false
	r := interruptLeakingRun(t, "", func(send func(syscall.Signal) bool) {
		require.True(t, send(syscall.SIGTERM))
		time.Sleep(100 * time.Millisecond)
		landed = send(syscall.SIGINT)
	})
	checkStoppedClean(t, r)
	t.Logf("the SIGINT came while the run cleaned up: %t", landed)
	if landed {
		assert.Contains(t, strings.Join(r.stderr, "\n"), "flightdeck: stopping now (a second signal, SIGINT)")
	}
}

// checkLogsMasked checks, while the agents run, that no log flightdeck
// writes (agent.log, each command's output in .work, grader.log) holds the
// secret: they are masked as they are written.
func checkLogsMasked(t *testing.T, runDir string) {
	t.Helper()
	logs := 0
	filepath.WalkDir(runDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || !strings.HasSuffix(p, ".log") {
			return nil
		}
		data, _ := os.ReadFile(p)
		if strings.Contains(string(data), "token ") {
			logs++
		}
		assert.NotContains(t, string(data), leakSecret, "%s holds the secret while the run runs", p)
		return nil
	})
	assert.Positive(t, logs, "the agents' output is on disk")
}
