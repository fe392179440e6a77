package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/runner/results"
)

// loadTasks makes the load run's four tasks in dir, copies of the native
// target: one as it is, one whose agent timeout is 2 s, one whose grader
// sleeps past its 2 s timeout, and one whose grader writes a malformed
// reward.
func loadTasks(t *testing.T, dir string) []string {
	t.Helper()
	native := taskDir(t, nativeTask)
	ok := copyTask(t, native, dir, "load-ok", nil)
	agentTimeout := copyTask(t, native, dir, "load-agent-timeout", func(toml string) string {
		return strings.Replace(toml, "[agent]\ntimeout_sec = 60.0", "[agent]\ntimeout_sec = 2.0", 1)
	})
	verifierTimeout := copyTask(t, native, dir, "load-verifier-timeout", func(toml string) string {
		return strings.Replace(toml, "[verifier]\ntimeout_sec = 60.0", "[verifier]\ntimeout_sec = 2.0", 1)
	})
	malformed := copyTask(t, native, dir, "load-malformed", nil)
	graders := map[string]string{
		verifierTimeout: "#!/bin/bash\nsleep 30\n",
		malformed:       "#!/bin/bash\nprintf '{\"reward\": yes' >\"$FLIGHTDECK_REWARD_DIR/reward.json\"\n",
	}
	for task, script := range graders {
		require.NoError(t, os.WriteFile(filepath.Join(task, "tests", "test.sh"), []byte(script), 0o755))
		r := flightdeck(t, dir, nil, "task", "digest", "--write", task)
		require.Equal(t, 0, r.code, r.stderr)
	}
	return []string{ok, agentTimeout, verifierTimeout, malformed}
}

// 60 trials at --jobs 8 with mixed outcomes: every trial has exactly one
// result, nothing is left on the engine, in the run dir or in the temp dir,
// and flightdeck's peak memory is reported.
func TestLoad(t *testing.T) {
	requireSlow(t)
	requireEngine(t)
	dir := t.TempDir()
	tmp := filepath.Join(dir, "tmp")
	require.NoError(t, os.Mkdir(tmp, 0o755))
	suiteFile := writeSuite(t, dir, suiteFile{
		Name: "load", Tasks: loadTasks(t, dir), Attempts: 3, Retries: retries(1),
		Variants: map[string]map[string]any{
			"oracle": {"agent": "oracle"},
			"nop":    {"agent": "nop"},
			"solve":  command(solve),
			"slow":   command("sleep 3; " + solve),
			"wrong":  command(`printf 'def add(a, b):\n    return a - b\n' >calc/__init__.py`),
		},
	})
	cli := flightdeck(t, dir, []string{"TMPDIR=" + tmp}, "run", suiteFile, "--jobs", "8")
	t.Logf("60 trials at --jobs 8: flightdeck's peak memory (VmHWM) %d MiB", cli.peakKB>>10)
	run := readRun(t, cli, filepath.Join(dir, "results"))

	require.Len(t, run.resultsDir, 60, "every trial has a result; stderr:\n%s", cli.stderr)
	rec, err := results.ReadRunRecord(run.dir)
	require.NoError(t, err)
	assert.Equal(t, results.StatusFinished, rec.Status)
	assert.Len(t, rec.Trials, 60)
	seen := map[string]bool{}
	for _, ts := range rec.Trials {
		assert.False(t, seen[ts.Trial], "%s is listed twice", ts.Trial)
		seen[ts.Trial] = true
	}
	for _, p := range tree(t, run.dir) {
		assert.False(t, strings.HasSuffix(p, ".tmp"), "a temporary file is left: %s", p)
	}
	assert.NoDirExists(t, filepath.Join(run.dir, ".work"))
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, left, "temp files left in TMPDIR")
	assertNoLeftovers(t, run.id)
	assert.Less(t, cli.peakKB, int64(boundedPeakKB), "flightdeck's peak memory in KiB")

	// The outcomes each trial may have. Any agent may outlast its
	// timeout on a host this loaded (2 s for load-agent-timeout, where
	// slow never ends in time; 60 s elsewhere), and any grader its 60 s:
	// the trial is graded all the same, and the load's point is that every
	// trial ends with one result and no infrastructure error, not how fast
	// the host is.
	const timedOut, graderTimedOut = grader.OutcomeAgentTimeout, grader.OutcomeVerifierTimeout
	want := map[string]map[string][]grader.Outcome{
		"load-ok": {
			"oracle": {grader.OutcomePassed, timedOut, graderTimedOut}, "nop": {grader.OutcomeFailed, graderTimedOut},
			"solve": {grader.OutcomePassed, timedOut, graderTimedOut}, "slow": {grader.OutcomePassed, timedOut, graderTimedOut},
			"wrong": {grader.OutcomeFailed, timedOut, graderTimedOut},
		},
		"load-agent-timeout": {
			"oracle": {grader.OutcomePassed, timedOut, graderTimedOut}, "nop": {grader.OutcomeFailed, graderTimedOut},
			"solve": {grader.OutcomePassed, timedOut, graderTimedOut}, "slow": {timedOut},
			"wrong": {grader.OutcomeFailed, timedOut, graderTimedOut},
		},
	}
	counts := map[grader.Outcome]int{}
	for _, res := range run.resultsDir {
		counts[res.Outcome]++
		switch res.TaskID {
		case "load-verifier-timeout":
			// Its grader never ends in time; an agent that did not either
			// gives its outcome to the trial.
			assert.Contains(t, []grader.Outcome{grader.OutcomeVerifierTimeout, timedOut}, res.Outcome, res.Trial)
			assert.True(t, res.GradePhase.TimedOut, "%s: the grader ran past its timeout", res.Trial)
		case "load-malformed":
			// What the grader wrote does not parse: the task's own defect.
			assert.Contains(t, []grader.Outcome{grader.OutcomeTaskError, timedOut, graderTimedOut}, res.Outcome, res.Trial)
			if !res.GradePhase.TimedOut && assert.NotNil(t, res.RewardError, res.Trial) {
				assert.Equal(t, grader.RewardMalformed, res.RewardError.Kind, res.Trial)
			}
		default:
			assert.Contains(t, want[res.TaskID][res.Variant], res.Outcome, "%s: %s", res.Trial, res.Error)
		}
	}
	t.Logf("outcomes: %v", counts)
	assert.Zero(t, counts[grader.OutcomeInfraError], "no infrastructure errors under load")
}
