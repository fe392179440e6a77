package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/runner/results"
)

// Resource attacks: each its own run, so that the flightdeck process's peak
// memory belongs to one attack. They are slow.

// boundedPeakKB is what flightdeck's own memory must stay under whatever an
// agent does: its caps (16 MiB of output per stream, a 32 MiB patch) and
// its buffers, with room to spare.
const boundedPeakKB = 512 << 10

// heavyRun runs attacks (command agents) on tasks, all at once.
func heavyRun(t *testing.T, tasks []string, attacks []string, agentTimeout float64) *runOutput {
	t.Helper()
	requireSlow(t)
	requireEngine(t)
	dir := t.TempDir()
	variants := map[string]map[string]any{}
	for _, a := range attacks {
		variants[a] = command(agentScript(t, a))
	}
	var dirs []string
	for _, task := range tasks {
		dirs = append(dirs, taskDir(t, task))
	}
	// The grader gets 5 × its timeout: on a loaded machine it grades what
	// the attack left, however slowly.
	s := suiteFile{Name: "heavy", Tasks: dirs, Variants: variants, Concurrency: len(tasks) * len(attacks), Retries: retries(0),
		Timeouts: map[string]float64{"verifier": 5}}
	if agentTimeout > 0 {
		s.Timeouts["agent"] = agentTimeout
	}
	run := runFlightdeck(t, writeSuite(t, dir, s))
	t.Logf("flightdeck's peak memory (VmHWM) for %v on %v: %d MiB", attacks, tasks, run.cli.peakKB>>10)
	require.Len(t, run.resultsDir, len(tasks)*len(attacks), "every trial has a result; stderr:\n%s", run.cli.stderr)
	assertNoLeftovers(t, run.id)
	assert.NoDirExists(t, filepath.Join(run.dir, ".work"), "work dirs are removed after the run")
	return run
}

// 1 GiB on stdout and 64 MiB on stderr: the agent log is capped, the run
// goes on, flightdeck's memory stays bounded.
func TestAttackFlood(t *testing.T) {
	run := heavyRun(t, []string{nativeTask, harborTask}, []string{"flood"}, 0)
	for _, task := range []string{nativeTask, harborTask} {
		// However far the flood got before the agent's timeout, the grade
		// is the grader's and the log is capped.
		assertHonestFail(t, run, task, "flood")
		fi, err := os.Stat(filepath.Join(run.trialDir(task, "flood"), results.AgentLog))
		require.NoError(t, err)
		assert.LessOrEqual(t, fi.Size(), int64(17<<20), "%s: agent.log is capped at 16 MiB of output", task)
		if fi.Size() >= 16<<20 {
			assert.Contains(t, readText(t, filepath.Join(run.trialDir(task, "flood"), results.AgentLog)),
				"[flightdeck: output truncated]", task)
		}
	}
	assert.Less(t, run.cli.peakKB, int64(boundedPeakKB), "flightdeck's peak memory in KiB")
}

// A fork bomb is stopped by the pids limit inside the container; the
// agent's timeout ends the phase and the run goes on.
func TestAttackForkBomb(t *testing.T) {
	run := heavyRun(t, []string{nativeTask, harborTask}, []string{"fork-bomb"}, 0.25)
	refused := regexp.MustCompile(`fork refused after (\d+) children`)
	for _, task := range []string{nativeTask, harborTask} {
		res := run.result(t, task, "fork-bomb")
		assert.Equal(t, grader.OutcomeAgentTimeout, res.Outcome, "%s: %s", res.Trial, res.Error)
		log := readText(t, filepath.Join(run.trialDir(task, "fork-bomb"), results.AgentLog))
		assert.Contains(t, log, "pids.max: 4096", "%s: the container has flightdeck's pids limit", task)
		// The threads reach the limit in a second or two; a machine too
		// busy for that before the agent's timeout shows no refusal, and
		// the timeout ended the bomb all the same.
		if m := refused.FindStringSubmatch(log); m != nil {
			n, _ := strconv.Atoi(m[1])
			assert.Less(t, n, 4096, task)
		} else {
			t.Logf("%s: the agent's timeout came before the kernel refused a fork:\n%s", task, log)
		}
	}
}

// The work dir is a host bind mount with no size limit of its own, so the
// attack is bounded (2 GiB, preallocated) rather than run until ENOSPC. The
// trial is graded honestly, the evidence names the file, and the space is
// given back when the run ends.
func TestAttackFillDisk(t *testing.T) {
	run := heavyRun(t, []string{nativeTask}, []string{"fill-disk"}, 0)
	res := assertHonestFail(t, run, nativeTask, "fill-disk")
	files := readText(t, filepath.Join(run.trialDir(nativeTask, "fill-disk"), results.DiffFiles))
	fixedBug(t, strings.Contains(files, "big.bin"),
		"a file too big for git's diff (2 GiB) leaves the trial with no evidence at all: the agent hides every change",
		fmt.Sprintf("diff.files %q, evidence note %q", files, res.Evidence.Note))
}

// 256 MiB of random bytes: the patch is cut at 32 MiB, and flightdeck's
// memory stays bounded while it is made.
func TestAttackBigRandomFile(t *testing.T) {
	run := heavyRun(t, []string{nativeTask}, []string{"big-random"}, 0)
	assertHonestFail(t, run, nativeTask, "big-random")
	assert.Contains(t, readText(t, filepath.Join(run.trialDir(nativeTask, "big-random"), results.DiffFiles)), "random.bin")
	fi, err := os.Stat(filepath.Join(run.trialDir(nativeTask, "big-random"), results.DiffPatch))
	require.NoError(t, err)
	assert.LessOrEqual(t, fi.Size(), int64(33<<20), "diff.patch is cut at 32 MiB")
	fixedBug(t, run.cli.peakKB < boundedPeakKB,
		"the work dir's patch is read whole into memory before it is cut: flightdeck's memory grows with the agent's files",
		fmt.Sprintf("peak %d MiB", run.cli.peakKB>>10))
}

// 100,000 files in 1,000 directories: every one is in the evidence, and
// the trial is graded honestly.
func TestAttackManyFiles(t *testing.T) {
	run := heavyRun(t, []string{nativeTask}, []string{"many-files"}, 0)
	res := assertHonestFail(t, run, nativeTask, "many-files")
	files := strings.Split(strings.TrimSuffix(readText(t, filepath.Join(run.trialDir(nativeTask, "many-files"), results.DiffFiles)), "\n"), "\n")
	assert.Len(t, files, res.Evidence.DiffFiles, "diff.files names every file the evidence counts")
	if res.Outcome != grader.OutcomeAgentTimeout {
		// The agent made all of them (on a machine too busy for that
		// before the agent's timeout, the evidence has those it made).
		assert.Equal(t, 100000, res.Evidence.DiffFiles)
	}
	assert.Less(t, run.cli.peakKB, int64(boundedPeakKB), "flightdeck's peak memory in KiB")
}
