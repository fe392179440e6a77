package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/testenv"
	"github.com/flightdeck/flightdeck/runner/results"
)

// Agent commands the fault tests use on the native target.
const (
	// solve writes the correct calc.add: the trial passes.
	solve = `printf 'def add(a, b):\n    return a + b\n' >calc/__init__.py`
	// slowImport writes a correct calc.add whose import takes 8 s, so the
	// grade runs long enough to be killed.
	slowImport = `printf 'import time\ntime.sleep(8)\n\ndef add(a, b):\n    return a + b\n' >calc/__init__.py`
)

// faultSuite writes a suite over the native target with these variants.
func faultSuite(t *testing.T, dir string, variants map[string]map[string]any, concurrency, retry int) string {
	t.Helper()
	return writeSuite(t, dir, suiteFile{
		Name: "faults", Tasks: []string{taskDir(t, nativeTask)}, Variants: variants,
		Concurrency: concurrency, Retries: retries(retry),
	})
}

// The engine not answering at start: exit 3 (infrastructure) and one line
// that says so, and nothing written.
func TestEngineNotAnswering(t *testing.T) {
	dir := t.TempDir()
	suiteFile := faultSuite(t, dir, map[string]map[string]any{"nop": {"agent": "nop"}}, 1, 0)
	env := []string{"DOCKER_HOST=unix://" + filepath.Join(dir, "no-engine.sock")}
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"run", suiteFile}, results.ExitInfra},
		{[]string{"task", "verify", "--results", filepath.Join(dir, "results"), taskDir(t, nativeTask)}, results.ExitInfra},
		{[]string{"gc"}, results.ExitInfra},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			r := flightdeck(t, dir, env, tc.args...)
			assert.Equal(t, tc.code, r.code, r.stderr)
			assertOneLine(t, r.stderr, "no Docker engine answers")
			assert.NoDirExists(t, filepath.Join(dir, "results"), "nothing is written before the engine answers")
		})
	}
}

// An engine that accepts connections and never answers: the same, after
// flightdeck's own timeout.
func TestEngineHangs(t *testing.T) {
	requireSlow(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "hang.sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		var held []net.Conn
		for {
			c, err := l.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, c)
		}
	}()
	suiteFile := faultSuite(t, dir, map[string]map[string]any{"nop": {"agent": "nop"}}, 1, 0)
	r := flightdeck(t, dir, []string{"DOCKER_HOST=unix://" + sock}, "run", suiteFile)
	assert.Equal(t, results.ExitInfra, r.code, r.stderr)
	assertOneLine(t, r.stderr, "no Docker engine answers")
	assert.NoDirExists(t, filepath.Join(dir, "results"))
}

func assertOneLine(t *testing.T, stderr, want string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	assert.Len(t, lines, 1, "one line:\n%s", stderr)
	assert.Contains(t, stderr, want)
	assert.NotContains(t, stderr, "panic:")
}

// The agent's container killed from outside mid-agent: an infrastructure
// error, retried; the run goes on.
func TestFaultAgentContainerKilled(t *testing.T) {
	requireSlow(t)
	requireEngine(t)
	dir := t.TempDir()
	suiteFile := faultSuite(t, dir, map[string]map[string]any{
		"victim": command(gate + solve),
		"nop":    {"agent": "nop"},
	}, 2, 1)
	p := startFlightdeck(t, dir, nil, "run", suiteFile)
	id := p.runID(t)
	victim := trialName(nativeTask, "victim")
	killed := waitContainer(t, id, victim, "agent", 5*time.Minute)
	docker(t, "kill", killed)
	// The retry's agent, in a container of its own, goes on.
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no retry of %s within 5m\n%s", victim, testenv.RunState(id))
		}
		if c := waitContainer(t, id, victim, "agent", 5*time.Minute); c != killed {
			openGate(t, c)
			break
		}
	}
	r := p.wait(t, cliTimeout)
	run := readResults(t, r, filepath.Join(dir, "results", id))
	assertHonestFail(t, run, nativeTask, "nop")
	assertNoLeftovers(t, id)
	res := run.result(t, nativeTask, "victim")
	assert.Equal(t, grader.OutcomePassed, res.Outcome, "the retry passes: %s %s", res.Error, res.AgentPhase.Failed)
	assert.Equal(t, 2, res.Tries, "the killed try is an infra_error, retried")
}

// The grading container killed from outside mid-grade: an infrastructure
// error, retried (the retry passes); the run goes on.
func TestFaultGraderContainerKilled(t *testing.T) {
	requireSlow(t)
	requireEngine(t)
	dir := t.TempDir()
	suiteFile := faultSuite(t, dir, map[string]map[string]any{
		"victim": command(slowImport),
		"nop":    {"agent": "nop"},
	}, 2, 1)
	p := startFlightdeck(t, dir, nil, "run", suiteFile)
	id := p.runID(t)
	victim := trialName(nativeTask, "victim")
	grading := waitContainer(t, id, victim, "grade", 2*time.Minute)
	waitProcess(t, grading, "python", time.Minute) // into the grader's command
	docker(t, "kill", grading)
	r := p.wait(t, cliTimeout)
	assert.Contains(t, r.stderr, "retry    "+victim+": infra_error")
	run := readResults(t, r, filepath.Join(dir, "results", id))
	res := run.result(t, nativeTask, "victim")
	assert.Equal(t, 2, res.Tries)
	assert.Equal(t, grader.OutcomePassed, res.Outcome, res.Error)
	assertHonestFail(t, run, nativeTask, "nop")
	assertNoLeftovers(t, id)
}

// A container killed by its memory limit is recorded as such: in the agent
// phase (the agent's command) and in the grade (the code under test).
func TestFaultOutOfMemory(t *testing.T) {
	requireSlow(t)
	requireEngine(t)
	dir := t.TempDir()
	task := copyTask(t, taskDir(t, nativeTask), dir, "attack-oom", func(toml string) string {
		return strings.Replace(toml, "memory_mb = 1024", "memory_mb = 128", 1)
	})
	suiteFile := writeSuite(t, dir, suiteFile{
		Name: "oom", Tasks: []string{task}, Concurrency: 2, Retries: retries(0),
		Variants: map[string]map[string]any{
			"agent-oom": command(`python3 -c 'x = bytearray(1 << 30)'`),
			"grade-oom": command(`printf 'x = bytearray(1 << 30)\n\ndef add(a, b):\n    return a + b\n' >calc/__init__.py`),
		},
	})
	run := runFlightdeck(t, suiteFile)
	assertNoLeftovers(t, run.id)

	agent := run.result(t, "attack-oom", "agent-oom")
	assert.Equal(t, grader.OutcomeFailed, agent.Outcome, agent.Error)
	if assert.NotNil(t, agent.AgentPhase.ExitCode) {
		assert.Equal(t, 137, *agent.AgentPhase.ExitCode, "the allocating process was killed")
	}
	grade := run.result(t, "attack-oom", "grade-oom")
	assert.Equal(t, grader.OutcomeFailed, grade.Outcome, grade.Error)

	agentJSON, _ := json.Marshal(agent.AgentPhase)
	gradeJSON, _ := json.Marshal(grade.GradePhase)
	agentRecorded := strings.Contains(strings.ToLower(string(agentJSON)), "oom") ||
		strings.Contains(strings.ToLower(agent.AgentPhase.Failed), "out of memory")
	fixedBug(t, agentRecorded && grade.GradePhase.OOMKilled,
		"an out-of-memory kill that the container survives is not recorded, in the agent phase or the grade "+
			"(the engine's OOMKilled flag is set only when the container exits)",
		fmt.Sprintf("agent_phase %s; grade_phase %s", agentJSON, gradeJSON))
}

// gate holds a command agent until the test opens it (openGate): what
// the test needs running at a given moment runs then, however slow the
// machine.
const gate = `until [ -e /tmp/flightdeck-go ]; do sleep 0.1; done; `

// openGate lets a gated agent in container go on.
func openGate(t *testing.T, container string) {
	t.Helper()
	docker(t, "exec", container, "touch", "/tmp/flightdeck-go")
}

// interruptRun starts a run of a fast trial (oracle) and slow ones (gated
// agents, with 10 × the agent's timeout), waits until the fast one has its
// result and the slow ones' agents run, and returns the process, its run
// id and dir.
func interruptRun(t *testing.T, slow int) (*process, string, string) {
	t.Helper()
	requireSlow(t)
	requireEngine(t)
	dir := t.TempDir()
	variants := map[string]map[string]any{"oracle": {"agent": "oracle"}}
	for i := 1; i <= slow; i++ {
		variants[fmt.Sprintf("slow%d", i)] = command(gate + solve)
	}
	suiteFile := writeSuite(t, dir, suiteFile{
		Name: "faults", Tasks: []string{taskDir(t, nativeTask)}, Variants: variants,
		Concurrency: slow + 1, Retries: retries(0), Timeouts: map[string]float64{"agent": 10},
	})
	p := startFlightdeck(t, dir, nil, "run", suiteFile)
	id := p.runID(t)
	for i := 1; i <= slow; i++ {
		waitContainer(t, id, trialName(nativeTask, fmt.Sprintf("slow%d", i)), "agent", 5*time.Minute)
	}
	p.waitLine(t, 5*time.Minute, func(l string) bool {
		return strings.Contains(l, trialName(nativeTask, "oracle")) && strings.HasPrefix(l, "passed")
	})
	return p, id, dir
}

// SIGINT and SIGTERM mid-run: the finished result is kept, the interrupted
// trial has none, nothing of the run is left on the engine or on disk, and
// the run says how to resume.
func TestFaultInterrupt(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			p, id, dir := interruptRun(t, 1)
			p.signal(t, sig)
			r := p.wait(t, 2*time.Minute)
			assert.Equal(t, results.ExitInterrupted, r.code, r.stderr)
			assert.Contains(t, r.stderr, "--resume "+id)
			runDir := filepath.Join(dir, "results", id)
			_, err := results.ReadResult(filepath.Join(runDir, trialName(nativeTask, "oracle"), results.ResultFile))
			assert.NoError(t, err, "the finished trial is kept")
			assert.NoFileExists(t, filepath.Join(runDir, trialName(nativeTask, "slow1"), results.ResultFile))
			assert.NoDirExists(t, filepath.Join(runDir, ".work"))
			assertNoLeftovers(t, id)
			rec, err := results.ReadRunRecord(runDir)
			require.NoError(t, err)
			assert.Equal(t, results.StatusInterrupted, rec.Status)
		})
	}
}

// A second SIGINT while the first one's cleanup runs forces the exit; what
// it leaves is orphaned, and `flightdeck gc` removes it.
func TestFaultSecondInterrupt(t *testing.T) {
	p, id, dir := interruptRun(t, 3)
	p.signal(t, syscall.SIGINT)
	first := time.Now()
	// The first interrupted trial's line: the first signal was taken and
	// the cleanup of three trials is under way.
	p.waitLine(t, time.Minute, func(l string) bool { return strings.HasPrefix(l, "stopped ") })
	// Past the window in which a repeat is the same press. On an idle
	// machine the cleanup may be done by then: the run must still have
	// ended as an interrupted one, with nothing left.
	time.Sleep(time.Until(first.Add(1500 * time.Millisecond)))
	landed := p.trySignal(t, syscall.SIGINT)
	r := p.wait(t, 2*time.Minute)
	t.Logf("the second SIGINT came while the run cleaned up: %t", landed)
	if landed {
		assert.Contains(t, r.stderr, "stopping now", "a later second signal hurries the cleanup")
	}
	assert.False(t, r.signaled, "a second SIGINT hurries the cleanup; it never kills the process:\n%s", r.stderr)
	assert.Equal(t, 130, r.code, r.stderr)
	rec, err := results.ReadRunRecord(filepath.Join(dir, "results", id))
	require.NoError(t, err)
	assert.Equal(t, results.StatusInterrupted, rec.Status)
	assertNoLeftovers(t, id)
}

// SIGKILL of flightdeck mid-run: `flightdeck gc` removes what it left, and
// `run --resume` completes the run: every trial ends with exactly one
// result, and no finished trial is graded again.
func TestFaultKillAndResume(t *testing.T) {
	p, id, dir := interruptRun(t, 2)
	runDir := filepath.Join(dir, "results", id)
	oracle := trialName(nativeTask, "oracle")
	before := readText(t, filepath.Join(runDir, oracle, results.ResultFile))
	graderLog, err := os.Stat(filepath.Join(runDir, oracle, results.GraderLog))
	require.NoError(t, err)

	p.signal(t, syscall.SIGKILL)
	r := p.wait(t, time.Minute)
	require.True(t, r.signaled)
	require.NotEmpty(t, leftovers(t, id), "a killed run leaves its containers")

	gc := flightdeck(t, dir, nil, "gc", "--run", id)
	assert.Equal(t, 0, gc.code, gc.stderr)
	assert.Contains(t, gc.stdout, "run "+id)
	assertNoLeftovers(t, id)

	rp := startFlightdeck(t, dir, nil, "run", "--resume", id)
	for _, v := range []string{"slow1", "slow2"} {
		openGate(t, waitContainer(t, id, trialName(nativeTask, v), "agent", 5*time.Minute))
	}
	resume := rp.wait(t, cliTimeout)
	assert.Contains(t, resume.stderr, "kept     "+oracle)
	assert.NotContains(t, resume.stderr, "start    "+oracle, "a finished trial is not run again")
	for _, v := range []string{"slow1", "slow2"} {
		assert.Contains(t, resume.stderr, "start    "+trialName(nativeTask, v))
	}
	assert.Equal(t, before, readText(t, filepath.Join(runDir, oracle, results.ResultFile)), "the kept result is untouched")
	after, err := os.Stat(filepath.Join(runDir, oracle, results.GraderLog))
	require.NoError(t, err)
	assert.Equal(t, graderLog.ModTime(), after.ModTime(), "the kept trial was not graded again")

	run := readResults(t, resume, runDir)
	assert.Len(t, run.resultsDir, 3)
	for _, v := range []string{"slow1", "slow2"} {
		assert.Equal(t, grader.OutcomePassed, run.result(t, nativeTask, v).Outcome)
	}
	rec, err := results.ReadRunRecord(runDir)
	require.NoError(t, err)
	assert.Equal(t, results.StatusFinished, rec.Status)
	assert.Len(t, rec.Trials, 3)
	assert.NoDirExists(t, filepath.Join(runDir, ".work"))
	assertNoLeftovers(t, id)
}

// A truncated and a corrupt result.json: `report` names the trials without
// a result, and `run --resume` says why and runs them again; the intact
// result is kept.
func TestFaultCorruptResult(t *testing.T) {
	requireSlow(t)
	requireEngine(t)
	dir := t.TempDir()
	suiteFile := faultSuite(t, dir, map[string]map[string]any{
		"oracle": {"agent": "oracle"}, "nop": {"agent": "nop"}, "solve": command(solve),
	}, 3, 0)
	run := runFlightdeck(t, suiteFile)
	require.Len(t, run.resultsDir, 3)
	truncated := filepath.Join(run.trialDir(nativeTask, "oracle"), results.ResultFile)
	corrupt := filepath.Join(run.trialDir(nativeTask, "nop"), results.ResultFile)
	data := readText(t, truncated)
	require.NoError(t, os.WriteFile(truncated, []byte(data[:len(data)/2]), 0o644))
	require.NoError(t, os.WriteFile(corrupt, []byte("\x00garbage{"), 0o644))
	kept := readText(t, filepath.Join(run.trialDir(nativeTask, "solve"), results.ResultFile))

	rep := flightdeck(t, dir, nil, "report", run.id)
	assert.NotContains(t, rep.stdout+rep.stderr, "panic:")
	for _, v := range []string{"oracle", "nop"} {
		assert.Contains(t, rep.stdout+rep.stderr, trialName(nativeTask, v), "report names the trial without a valid result")
	}
	assert.Contains(t, rep.stdout, "unreadable result of "+trialName(nativeTask, "oracle")+": "+truncated+": not a valid result")
	assert.Contains(t, rep.stdout, "unreadable result of "+trialName(nativeTask, "nop")+": "+corrupt+": not a valid result")

	resume := flightdeck(t, dir, nil, "run", "--resume", run.id)
	assert.Contains(t, resume.stderr, trialName(nativeTask, "oracle")+": "+truncated+": not a valid result")
	assert.Contains(t, resume.stderr, trialName(nativeTask, "nop")+": "+corrupt+": not a valid result")
	assert.Contains(t, resume.stderr, "kept     "+trialName(nativeTask, "solve"))
	again := readResults(t, resume, run.dir)
	assert.Len(t, again.resultsDir, 3)
	assert.Equal(t, grader.OutcomePassed, again.result(t, nativeTask, "oracle").Outcome)
	assert.Equal(t, grader.OutcomeFailed, again.result(t, nativeTask, "nop").Outcome)
	assert.Equal(t, kept, readText(t, filepath.Join(run.trialDir(nativeTask, "solve"), results.ResultFile)))
	assertNoLeftovers(t, run.id)
}
