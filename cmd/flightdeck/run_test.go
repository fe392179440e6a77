package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/internal/testenv"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/sandbox"
)

var runFixtures = filepath.Join("..", "..", "fixtures", "runner")

// runEngine connects to the engine for a run test, skipping without one
// unless FLIGHTDECK_REQUIRE_DOCKER=1; it needs the offline base image.
func runEngine(t *testing.T) *sandbox.Docker {
	t.Helper()
	return testenv.Engine(t)
}

// writeRunSuite writes a suite over the runner's fixtures into a temp dir.
func writeRunSuite(t *testing.T, body string) (dir, suite string) {
	t.Helper()
	fixtures, err := filepath.Abs(runFixtures)
	require.NoError(t, err)
	dir = t.TempDir()
	suite = filepath.Join(dir, "suite.yaml")
	require.NoError(t, os.WriteFile(suite, []byte(strings.ReplaceAll(body, "FIXTURES", fixtures)), 0o644))
	return dir, suite
}

// A refused task is not the user's mistake: the run records it refused,
// with the reason, lists it in the summary and exits 4. With only refused
// tasks nothing needs the engine.
func TestRunRefusedTasks(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := runCLI(t, dir, "run", "--path", harborRefused("gpus"), "--path", harborRefused("steps"), "--results", "res")
	require.Equal(t, exitTask, code, stderr)
	assert.Contains(t, stderr, "refused  gpus__oracle__1  "+filepath.Join(harborRefused("gpus"), "task.toml")+": [environment].gpus: GPUs are not supported")
	assert.Contains(t, out, "refused tasks (not run, left out of every rate):\n  gpus: "+filepath.Join(harborRefused("gpus"), "task.toml")+": [environment].gpus: GPUs are not supported")
	assert.Contains(t, out, "  steps: "+filepath.Join(harborRefused("steps"), "task.toml")+": [[steps]]: multi-step tasks are graded Harbor's way: a flightdeck-native task ([flightdeck.grader]) has no per-step grading")

	code, out, stderr = runCLI(t, dir, "run", "--path", harborRefused("gpus"), "--results", "res", "--json")
	require.Equal(t, exitTask, code, stderr)
	var rec results.RunRecord
	require.NoError(t, json.Unmarshal([]byte(out), &rec))
	assert.Equal(t, exitTask, rec.ExitCode)
	require.Len(t, rec.Refused, 1)
	assert.Equal(t, "gpus", rec.Refused[0].ID)
	assert.Equal(t, "[environment].gpus", rec.Refused[0].Field)

	code, out, stderr = runCLI(t, dir, "report", "--results", "res", rec.RunID)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, out, "  gpus: "+filepath.Join(harborRefused("gpus"), "task.toml"))
}

// harborRefused is a task of fixtures/harbor/refused, absolute.
func harborRefused(name string) string {
	abs, _ := filepath.Abs(filepath.Join("..", "..", "fixtures", "harbor", "refused", name))
	return abs
}

func TestRunUnknownVariantFlag(t *testing.T) {
	dir, suite := writeRunSuite(t, "name: v\ntasks: [FIXTURES/answer]\nvariants:\n  oracle: {agent: oracle}\n")
	code, _, stderr := runCLI(t, dir, "run", suite, "--variant", "mystery")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "--variant mystery: not a built-in agent (oracle, nop), nor a variant of the suite (it has oracle)")

	// A task dir alone has no suite file: the built-in agents are what
	// can be named, and a misspelt one is named back.
	fixtures, err := filepath.Abs(runFixtures)
	require.NoError(t, err)
	code, _, stderr = runCLI(t, dir, "run", "--path", filepath.Join(fixtures, "answer"), "--variant", "orcale")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "--variant orcale: not a built-in agent (oracle, nop) and there is no suite file to define it in")
	assert.Contains(t, stderr, "did you mean oracle?")
	assert.NotContains(t, stderr, "(it has )")
}

// A report and a recorded verdict on a run made of hand-written results.
func TestReportAndSpecRecord(t *testing.T) {
	resultsDir := t.TempDir()
	runDir := filepath.Join(resultsDir, "run-1")
	trial := "t1__treatment__1"
	require.NoError(t, os.MkdirAll(filepath.Join(runDir, trial), 0o755))
	writeJSONFile(t, filepath.Join(runDir, "run.json"), map[string]any{
		"schema": 1, "run_id": "run-1", "suite": "s", "status": "finished",
		"config": map[string]any{"attempts": 1, "variants": []map[string]any{{"name": "treatment", "agent": "command", "command": "x"}}},
		"trials": []map[string]any{{"trial": trial, "task_id": "t1", "variant": "treatment", "attempt": 1}},
	})
	writeJSONFile(t, filepath.Join(runDir, trial, "result.json"), map[string]any{
		"schema": 1, "run_id": "run-1", "trial": trial, "task_id": "t1", "variant": "treatment", "attempt": 1,
		"outcome": "passed", "outcome_class": "unavailable", "reward": 1,
		"specs": []map[string]any{{"spec_id": "t1.quality", "status": "unknown", "reason": "pending"}},
	})

	code, out, stderr := runCLI(t, resultsDir, "report", "--results", resultsDir, "run-1")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, out, "t1.quality:unknown")
	assert.Contains(t, out, "unavailable")

	code, out, stderr = runCLI(t, resultsDir, "spec", "record", "--results", resultsDir, "run-1", trial, "t1.quality", "pass", "--note", "reads well", "--by", "ana")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, out, "outcome class now passed")

	code, out, stderr = runCLI(t, resultsDir, "report", "--json", "--results", resultsDir, "run-1")
	require.Equal(t, exitOK, code, stderr)
	var rep results.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Len(t, rep.Trials, 1)
	require.Len(t, rep.Trials[0].Specs, 1)
	v := rep.Trials[0].Specs[0]
	assert.Equal(t, "pass", v.Status)
	assert.Equal(t, "ana", v.RecordedBy)
	assert.Equal(t, "reads well", v.Note)
	assert.EqualValues(t, "passed", rep.Trials[0].OutcomeClass)

	code, _, stderr = runCLI(t, resultsDir, "spec", "record", "--results", resultsDir, "run-1", trial, "t1.other", "pass", "--note", "n")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "was not judged on spec t1.other (its specs: t1.quality)")
}

// A report names a trial whose result.json is corrupt with the reason,
// apart from a trial that simply has none, and says how to rerun it.
func TestReportUnreadableResult(t *testing.T) {
	resultsDir := t.TempDir()
	runDir := filepath.Join(resultsDir, "run-2")
	corrupt, absent := "t1__v__1", "t1__v__2"
	require.NoError(t, os.MkdirAll(runDir, 0o755))
	writeJSONFile(t, filepath.Join(runDir, "run.json"), map[string]any{
		"schema": 1, "run_id": "run-2", "suite": "s", "status": "finished",
		"config":  map[string]any{"attempts": 2, "variants": []map[string]any{{"name": "v", "agent": "nop"}}},
		"trials":  []map[string]any{{"trial": corrupt, "task_id": "t1", "variant": "v", "attempt": 1}},
		"not_run": []string{absent},
	})
	require.NoError(t, os.MkdirAll(filepath.Join(runDir, corrupt), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(runDir, corrupt, "result.json"), []byte(`{"schema": 1, "task_`), 0o644))

	code, out, stderr := runCLI(t, resultsDir, "report", "--results", resultsDir, "run-2")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, out, "no result: "+corrupt+", "+absent)
	assert.Contains(t, out, "unreadable result of "+corrupt+": "+filepath.Join(runDir, corrupt, "result.json")+": not a valid result")
	assert.NotContains(t, out, "unreadable result of "+absent)
	assert.Contains(t, out, "flightdeck run --resume run-2")

	code, out, stderr = runCLI(t, resultsDir, "report", "--json", "--results", resultsDir, "run-2")
	require.Equal(t, exitOK, code, stderr)
	var rep results.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.Equal(t, []string{corrupt, absent}, rep.Missing)
	assert.Len(t, rep.Unreadable, 1)
	assert.Contains(t, rep.Unreadable[corrupt], "not a valid result")
}

func writeJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o644))
}

// task verify: the oracle passes and nop fails on a good task. (The
// fixture uses the base image as it is: these tests build no image.)
func TestTaskVerify(t *testing.T) {
	runEngine(t)
	dir := t.TempDir()
	code, out, stderr := runCLI(t, dir, "task", "verify", "--repeat", "1", "--results", filepath.Join(dir, "results"), mustAbs(t, filepath.Join(runFixtures, "script")))
	require.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", out, stderr)
	assert.Contains(t, out, "ok   script (")
	assert.Regexp(t, `(?m)^ +oracle +ok +passed 1 of 1 runs: reward 1$`, out)
	assert.Regexp(t, `(?m)^ +nop +ok +the empty attempt scores reward 0$`, out)
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	require.NoError(t, err)
	return abs
}

// SIGINT during a run: the process exits promptly, leaves no container of
// its run, keeps the finished trial, and --resume completes the rest.
func TestRunInterruptAndResume(t *testing.T) {
	eng := runEngine(t)
	bin := filepath.Join(t.TempDir(), "flightdeck")
	build := exec.Command("go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	dir, suite := writeRunSuite(t, `
name: interrupt
tasks: [FIXTURES/script]
variants:
  oracle: {agent: oracle, expect: passed}
  slow: {agent: command, command: "until [ -e /tmp/flightdeck-go ]; do sleep 0.1; done; echo 42 > answer.txt", expect: passed}
concurrency: 1
timeout_multiplier: {agent: 10}
results: results
`)
	cmd := exec.Command(bin, "run", suite)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })

	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	runID, seen := waitForSlowTrial(t, lines)
	require.NoError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGINT))
	seen = waitInterruptedExit(t, cmd, lines, seen)
	assert.Contains(t, strings.Join(seen, "\n"), "--resume "+runID)

	reaped, err := eng.Reap(context.Background(), sandbox.ReapOptions{RunID: runID})
	require.NoError(t, err)
	assert.Zero(t, reaped.Containers, "containers left behind: %v", reaped.Removed)

	runDir := filepath.Join(dir, "results", runID)
	assert.FileExists(t, filepath.Join(runDir, "script__oracle__1", "result.json"), "the finished trial is kept")
	assert.NoFileExists(t, filepath.Join(runDir, "script__slow__1", "result.json"), "the interrupted trial has no result")

	// The resumed slow trial waits at its gate until the test opens it:
	// the run ends by construction, not by a sleep outlasting the test.
	resume := exec.Command(bin, "run", "--resume", runID)
	resume.Dir = dir
	var resumed testenv.Buffer
	resume.Stdout, resume.Stderr = &resumed, &resumed
	require.NoError(t, resume.Start())
	t.Cleanup(func() { _ = resume.Process.Kill() })
	var agent string
	testenv.Await(t, 5*time.Minute, 50*time.Millisecond, "the resumed slow trial's agent at its gate", func() bool {
		agent = slowAgent(runID)
		return agent != ""
	}, func() string { return "resume's output:\n" + resumed.String() + "\n" + testenv.RunState(runID) })
	out, err = exec.Command("docker", "exec", agent, "touch", "/tmp/flightdeck-go").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NoError(t, resume.Wait(), "%s", resumed.String())
	assert.Contains(t, resumed.String(), "kept     script__oracle__1")
	r, err := results.ReadResult(filepath.Join(runDir, "script__slow__1", "result.json"))
	require.NoError(t, err)
	assert.Equal(t, "passed", string(r.Outcome))
	rec, err := results.ReadRunRecord(runDir)
	require.NoError(t, err)
	assert.Equal(t, results.StatusFinished, rec.Status)
	assert.Len(t, rec.Trials, 2)
}

// waitForSlowTrial reads the run's stderr lines until the slow trial
// starts, then waits for its command to run in its container. It returns
// the run's id and the lines seen.
func waitForSlowTrial(t *testing.T, lines <-chan string) (runID string, seen []string) {
	t.Helper()
	deadline := time.After(5 * time.Minute)
wait:
	for {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "the run ended before the slow trial started:\n%s", strings.Join(seen, "\n"))
			seen = append(seen, l)
			if strings.HasPrefix(l, "run ") && runID == "" {
				runID = strings.TrimSuffix(strings.Fields(l)[1], ":")
			}
			if strings.HasPrefix(l, "start    script__slow__1") {
				break wait
			}
		case <-deadline:
			t.Fatalf("no progress line for the slow trial:\n%s", strings.Join(seen, "\n"))
		}
	}
	require.NotEmpty(t, runID)
	testenv.Await(t, 5*time.Minute, 50*time.Millisecond, "the slow trial's command waiting at its gate",
		func() bool { return slowAgent(runID) != "" },
		func() string { return "the run's stderr:\n" + testenv.Tail(seen, 40) + "\n" + testenv.RunState(runID) })
	return runID, seen
}

// slowAgent is the run's container whose command waits at its gate, or "".
func slowAgent(runID string) string {
	out, err := exec.Command("docker", "ps", "-q", "--filter", "label=flightdeck.run="+runID).Output()
	if err != nil {
		return ""
	}
	for _, id := range strings.Fields(string(out)) {
		top, err := exec.Command("docker", "top", id, "-eo", "pid,args").Output()
		if err == nil && strings.Contains(string(top), "until [ -e /tmp/flightdeck-go ]") {
			return id
		}
	}
	return ""
}

// waitInterruptedExit waits for the interrupted run to exit, with the exit
// code of an interruption (130), and returns seen with the rest of its stderr lines.
func waitInterruptedExit(t *testing.T, cmd *exec.Cmd, lines <-chan string, seen []string) []string {
	t.Helper()
	exited := make(chan error, 1)
	go func() {
		for l := range lines {
			seen = append(seen, l)
		}
		exited <- cmd.Wait()
	}()
	select {
	case err := <-exited:
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "an interrupted run does not exit 0")
		assert.Equal(t, exitInterrupted, ee.ExitCode())
	case <-time.After(60 * time.Second):
		t.Fatalf("the run did not exit after SIGINT:\n%s", strings.Join(seen, "\n"))
	}
	return seen
}
