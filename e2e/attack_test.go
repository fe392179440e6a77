package e2e

import (
	"bufio"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/tamper"
)

// The attacks run as command agents (fixtures/attacks/agents) against both
// targets in one shared run; each test reads its trials. The core set runs
// always; the rest join the run with FLIGHTDECK_SLOW=1.
var (
	coreAttacks = []string{"reward-files", "planted-config", "replace-python3", "symlinks"}
	slowAttacks = []string{
		"planted-tests-dir", "replace-pytest", "replace-bash", "background", "filenames", "lying-code",
		"code-kills-grader", "agent-kills-container", "search-hidden", "setuid",
	}
)

// hostFiles are host files the symlink attack points at: they must be
// neither changed nor copied into any result.
var hostFiles = []string{"/etc/shadow", "/etc/passwd"}

// sharedAttacks is the one run of every always-on attack.
var sharedAttacks struct {
	once   sync.Once
	run    *runOutput
	before map[string]string // hostFiles' fingerprints before the run
	marker string            // host path prefix the deterministic attacks aim at
	err    string
}

// attackRun runs the always-on attacks once for the test process: both
// targets × (oracle, nop, every attack, the deterministic host attacks).
func attackRun(t *testing.T) *runOutput {
	t.Helper()
	requireEngine(t)
	sharedAttacks.once.Do(func() {
		dir, err := os.MkdirTemp(harness.dir, "attacks-")
		if err != nil {
			sharedAttacks.err = err.Error()
			return
		}
		sharedAttacks.before = fingerprints(hostFiles)
		sharedAttacks.marker = filepath.Join(harness.dir, "pwned")
		require.NoError(t, os.Mkdir(sharedAttacks.marker+"-dir", 0o755))
		variants := map[string]map[string]any{
			"oracle": {"agent": "oracle"},
			"nop":    {"agent": "nop"},
		}
		names := coreAttacks
		if os.Getenv(envSlow) == "1" {
			names = append(append([]string(nil), coreAttacks...), slowAttacks...)
		}
		for _, name := range names {
			variants[name] = command(agentScript(t, name))
		}
		for name, script := range deterministicAttacks(t, dir, sharedAttacks.marker) {
			variants[name] = map[string]any{"agent": "deterministic", "script": script}
		}
		suiteFile := writeSuite(t, dir, suiteFile{
			Name:  "attacks",
			Tasks: []string{taskDir(t, nativeTask), taskDir(t, harborTask)},
			// No retries: an infra_error shows as it happened.
			Variants: variants, Concurrency: 6, Retries: retries(0),
			// No attack needs a timeout to show what it cannot do; on a
			// loaded machine the grader's pytest alone took past its 60 s.
			Timeouts: map[string]float64{"agent": 5, "verifier": 5},
		})
		sharedAttacks.run = runFlightdeck(t, suiteFile)
	})
	if sharedAttacks.err != "" {
		t.Fatal(sharedAttacks.err)
	}
	require.NotNil(t, sharedAttacks.run, "the shared attack run failed in an earlier test")
	return sharedAttacks.run
}

// deterministicAttacks writes the deterministic attack scripts with their
// host marker filled in, and returns them by variant name.
func deterministicAttacks(t *testing.T, dir, marker string) map[string]string {
	t.Helper()
	out := map[string]string{}
	write := func(name string, data []byte) {
		path := filepath.Join(dir, name+".json")
		require.NoError(t, os.WriteFile(path, data, 0o644))
		out[name] = path
	}
	fill := func(name string) []byte {
		return []byte(strings.ReplaceAll(readText(t, filepath.Join(attacksDir(t), "agents", name+".json")), "@MARKER@", marker))
	}
	write("host-git", fill("host-git"))
	write("host-git-filter", fill("host-git-filter"))
	write("host-git-bom", fill("host-git-bom"))
	if os.Getenv(envSlow) != "1" {
		return out
	}
	// write-through-link: the link-making step, then one write per variant
	// (the first failing step ends a script).
	var script struct {
		Version int               `json:"version"`
		Steps   []json.RawMessage `json:"steps"`
	}
	require.NoError(t, json.Unmarshal(fill("write-through-link"), &script))
	for i, step := range script.Steps[1:] {
		one := script
		one.Steps = []json.RawMessage{script.Steps[0], step}
		data, err := json.Marshal(one)
		require.NoError(t, err)
		write(fmt.Sprintf("write-link-%d", i+1), data)
	}
	return out
}

// fingerprints hashes files with their modification times.
func fingerprints(paths []string) map[string]string {
	out := map[string]string{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		fi, serr := os.Stat(p)
		if err != nil || serr != nil {
			out[p] = "unreadable"
			continue
		}
		out[p] = fmt.Sprintf("%x %s", sha256.Sum256(data), fi.ModTime())
	}
	return out
}

// assertHonestFail checks that an attack ended with the grader's own
// verdict: reward 0, read from the reward dir the grade created, and not
// passed. An attack that takes long (a flood, many files) may outlast the
// agent's timeout on a busy machine: agent_timeout is graded the same way,
// and it is no more the attack's success than failed is. An infrastructure
// error would be (retried, and left out of pass rates).
func assertHonestFail(t *testing.T, run *runOutput, task, variant string) *results.Result {
	t.Helper()
	res := run.result(t, task, variant)
	assert.Contains(t, []grader.Outcome{grader.OutcomeFailed, grader.OutcomeAgentTimeout}, res.Outcome, "%s: %s", res.Trial, res.Error)
	if assert.NotNil(t, res.Reward, "%s: no reward (%s)", res.Trial, res.Error) {
		assert.Zero(t, *res.Reward, "%s: a forged reward", res.Trial)
	}
	reward := filepath.Join(run.trialDir(task, variant), grader.RewardDir)
	entries, err := os.ReadDir(reward)
	require.NoError(t, err)
	for _, e := range entries {
		assert.Contains(t, []string{grader.RewardJSON, grader.RewardTxt, grader.HarborTestStdout}, e.Name(),
			"%s: the reward dir holds a file the grader did not write", res.Trial)
		assert.True(t, e.Type().IsRegular(), "%s: %s in the reward dir is not a regular file", res.Trial, e.Name())
	}
	return res
}

// nativeGraderRan checks that the native grader ran the real hidden tests
// on the agent's code: all three of them, none passing.
func nativeGraderRan(t *testing.T, run *runOutput, variant string) {
	t.Helper()
	res := run.result(t, nativeTask, variant)
	if assert.NotNil(t, res.Summary, "%s: no RESULT line from the grader", res.Trial) {
		assert.Equal(t, 0, res.Summary.Passed, res.Trial)
	}
	log := readText(t, filepath.Join(run.trialDir(nativeTask, variant), results.GraderLog))
	assert.Contains(t, log, `"runner": "pytest"`, "%s: the grader's pytest did not run", res.Trial)
}

// harborLimit checks a Harbor-format trial that the attack forges: snapshot
// grading runs the verifier on what the agent left, so an agent that is root
// in its container can change the tools the verifier uses. Documented in
// docs/security.md as the limit of Harbor-format grading.
func harborLimit(t *testing.T, run *runOutput, variant string) {
	t.Helper()
	res := run.result(t, harborTask, variant)
	assert.False(t, res.Native, "%s is graded from a snapshot", res.Trial)
	assert.Equal(t, grader.OutcomePassed, res.Outcome,
		"%s: the documented limit of snapshot grading changed (update docs/security.md): %s", res.Trial, res.Error)
}

// assertTampered checks that the tamper inspector flagged a trial with a
// finding of one of kinds.
func assertTampered(t *testing.T, res *results.Result, kinds ...string) {
	t.Helper()
	if assert.NotNil(t, res.TamperCheck, "%s: inspected", res.Trial) {
		assert.True(t, res.TamperCheck.Checked, "%s: %s", res.Trial, res.TamperCheck.Note)
	}
	assert.True(t, slices.ContainsFunc(res.Tamper, func(f tamper.Finding) bool { return slices.Contains(kinds, f.Kind) }),
		"%s: a finding of kind %v, got %+v", res.Trial, kinds, res.Tamper)
}

// The targets are sound: the oracle passes both and nop fails both, so an
// attack's failed grade is the grader's verdict, not a broken task.
func TestAttackTargetsAreSound(t *testing.T) {
	run := attackRun(t)
	for _, task := range []string{nativeTask, harborTask} {
		ok := run.result(t, task, "oracle")
		assert.Equal(t, grader.OutcomePassed, ok.Outcome, "%s oracle: %s", task, ok.Error)
		assertHonestFail(t, run, task, "nop")
	}
	assert.True(t, run.result(t, nativeTask, "oracle").Native)
	assert.False(t, run.result(t, harborTask, "oracle").Native)
	// The honest oracle is inspected and nothing is flagged.
	oracle := run.result(t, harborTask, "oracle")
	if assert.NotNil(t, oracle.TamperCheck) {
		assert.True(t, oracle.TamperCheck.Checked, oracle.TamperCheck.Note)
	}
	assert.Empty(t, oracle.Tamper)
}

// Reward files written everywhere the agent can reach or guess are never
// read: the reward comes from a dir created fresh for the grade.
func TestAttackRewardFiles(t *testing.T) {
	run := attackRun(t)
	assertHonestFail(t, run, nativeTask, "reward-files")
	nativeGraderRan(t, run, "reward-files")
	res := assertHonestFail(t, run, harborTask, "reward-files")
	assert.Equal(t, grader.RewardTxt, res.RewardSource, "Harbor's test.sh writes reward.txt; a planted reward.json would win")
	assertTampered(t, res, tamper.KindVerifierFiles)
}

// conftest.py, pytest settings with addopts, sitecustomize.py,
// usercustomize.py and .pth files in the work dir change nothing: the safe
// test.sh copies only the code under test and runs Python isolated.
func TestAttackPlantedConfig(t *testing.T) {
	run := attackRun(t)
	assertHonestFail(t, run, nativeTask, "planted-config")
	nativeGraderRan(t, run, "planted-config")
	log := readText(t, filepath.Join(run.trialDir(nativeTask, "planted-config"), results.GraderLog))
	assert.Contains(t, log, "3 failed", "the hidden tests ran and failed")
	// Harbor's test.sh runs pytest on /tests from the work dir: pytest's
	// rootdir is /tests, so the work dir's files are not read either.
	assertHonestFail(t, run, harborTask, "planted-config")
}

// A conftest.py planted where the hidden tests will be copied: the native
// grade starts from the pristine image; a Harbor grade clears /tests in the
// snapshot before the task's tests are copied in.
func TestAttackPlantedTestsDir(t *testing.T) {
	requireSlow(t)
	run := attackRun(t)
	assertHonestFail(t, run, nativeTask, "planted-tests-dir")
	nativeGraderRan(t, run, "planted-tests-dir")
	assertTampered(t, assertHonestFail(t, run, harborTask, "planted-tests-dir"), tamper.KindVerifierFiles)
}

// python3, pytest or bash replaced in the agent's container (it is root
// there): the native grade runs in the pristine task image, so the real
// tools grade; a Harbor grade runs in the snapshot and uses the fakes.
func TestAttackReplaceBinaries(t *testing.T) {
	run := attackRun(t)
	for _, v := range []string{"replace-python3", "replace-pytest", "replace-bash"} {
		t.Run(v, func(t *testing.T) {
			if v != "replace-python3" {
				requireSlow(t)
			}
			assertHonestFail(t, run, nativeTask, v)
			nativeGraderRan(t, run, v)
			harborLimit(t, run, v)
			// The pass is flagged: the inspector saw the forged machinery.
			assertTampered(t, run.result(t, harborTask, v), tamper.KindTool, tamper.KindPytest)
		})
	}
}

// Processes the agent leaves running (nohup, setsid, a double-forked
// daemon) wait for the agent's command to return, then keep writing the
// solution and rewards. What is graded must be what the evidence recorded:
// a passing grade with no change to calc/ means the work dir changed after
// the agent phase.
func TestAttackBackgroundProcess(t *testing.T) {
	requireSlow(t)
	run := attackRun(t)
	// Graded live (Harbor's model, as Harbor grades), the processes run on
	// while test.sh does, in turns with the verifier's: they are listed,
	// and the reward they write in their first turn voids the grade, so
	// none is read.
	live := run.result(t, harborTask, "background")
	assert.Contains(t, strings.Join(live.GradePhase.AgentProcesses, "\n"), "late.sh",
		"%s: the processes the agent left are listed with the live grade", live.Trial)
	assert.Equal(t, grader.OutcomeFailed, live.Outcome, "%s: %s", live.Trial, live.Error)
	assert.Nil(t, live.Reward, live.Trial)
	if assert.NotNil(t, live.RewardError, live.Trial) {
		assert.Equal(t, grader.RewardTampered, live.RewardError.Kind, live.Trial)
	}
	for _, task := range []string{nativeTask} {
		res := run.result(t, task, "background")
		files := readText(t, filepath.Join(run.trialDir(task, "background"), results.DiffFiles))
		consistent := res.Outcome != grader.OutcomePassed || strings.Contains(files, "calc/__init__.py")
		fixedBug(t, consistent,
			"the agent's processes outlive the agent phase: on a native task they change the work dir while it is graded",
			fmt.Sprintf("%s: outcome %s with diff.files %q", res.Trial, res.Outcome, files))
	}
}

// Symbolic links in the work dir to /etc/shadow, the reward dirs,
// /proc/self/root and the host's results dir: the grade is honest, host
// files are not touched, nothing is written or read through the links,
// and the patch records links as links.
func TestAttackSymlinks(t *testing.T) {
	run := attackRun(t)
	assertHonestFail(t, run, nativeTask, "symlinks")
	assertHonestFail(t, run, harborTask, "symlinks")
	assert.Equal(t, sharedAttacks.before, fingerprints(hostFiles), "host files changed")

	patch := readText(t, filepath.Join(run.trialDir(nativeTask, "symlinks"), results.DiffPatch))
	assert.Contains(t, patch, "new file mode 120000", "links are recorded as links")
	assert.Contains(t, patch, "+/etc/shadow")
	shadow, err := os.ReadFile("/etc/shadow")
	if err == nil {
		for _, line := range strings.Split(string(shadow), "\n") {
			if name, _, ok := strings.Cut(line, ":"); ok && name != "" {
				assert.NotContains(t, patch, line, "the patch holds a line of the host's /etc/shadow")
			}
		}
	}
	for _, task := range []string{nativeTask, harborTask} {
		reward := readText(t, filepath.Join(run.trialDir(task, "symlinks"), grader.RewardDir,
			map[string]string{nativeTask: grader.RewardJSON, harborTask: grader.RewardTxt}[task]))
		assert.NotContains(t, reward, `"reward": 1`, task)
	}
	// The only links in the results are those the Harbor agent made in
	// its own logs dir (bind-mounted from the trial dir); flightdeck never
	// follows them.
	var links []string
	for _, p := range tree(t, run.dir) {
		if strings.HasSuffix(p, "@") {
			links = append(links, p)
		}
	}
	want := []string{
		trialName(harborTask, "symlinks") + "/logs/agent/shadow@",
		trialName(harborTask, "symlinks") + "/logs/agent/trial-dir@",
	}
	assert.ElementsMatch(t, want, links)
}

// File names with newlines, tabs, carriage returns, quotes, invalid UTF-8,
// escape sequences and 255 bytes: result.json, events.jsonl, diff.files
// and diff.patch stay valid and name exactly the files that changed.
func TestAttackFileNames(t *testing.T) {
	requireSlow(t)
	run := attackRun(t)
	for _, task := range []string{nativeTask, harborTask} {
		res := assertHonestFail(t, run, task, "filenames")
		dir := run.trialDir(task, "filenames")
		var raw map[string]any
		require.NoError(t, json.Unmarshal([]byte(readText(t, filepath.Join(dir, results.ResultFile))), &raw))
		events := 0
		sc := bufio.NewScanner(strings.NewReader(readText(t, filepath.Join(dir, results.EventsFile))))
		for sc.Scan() {
			var e grader.Event
			assert.NoError(t, json.Unmarshal(sc.Bytes(), &e), "events.jsonl line %q", sc.Text())
			events++
		}
		assert.Equal(t, res.Evidence.Events, events)
		// The agent's log says how many names the work dir's file system
		// took (a container's own file system may refuse the longest).
		made := 13
		if m := regexp.MustCompile(`made (\d+) files`).FindStringSubmatch(readText(t, filepath.Join(dir, results.AgentLog))); assert.NotNil(t, m, task) {
			made, _ = strconv.Atoi(m[1])
		}
		assert.GreaterOrEqual(t, made, 10, task)
		assert.Equal(t, made, res.Evidence.DiffFiles, "%s: one changed path per file made", task)
		assert.Contains(t, readText(t, filepath.Join(dir, results.DiffPatch)), "names/", task)

		files := strings.Split(strings.TrimSuffix(readText(t, filepath.Join(dir, results.DiffFiles)), "\n"), "\n")
		// Files named "calc/__init__.py\n" and "calc/__init__.py " are not
		// calc/__init__.py, which the agent never changed: evidence must
		// not say it did.
		fixedBug(t, !contains(files, "calc/__init__.py") && len(files) == res.Evidence.DiffFiles,
			"evidence trims file names (a file named \"calc/__init__.py \" is reported as calc/__init__.py) and diff.files splits names that hold a newline",
			fmt.Sprintf("%s: diff.files has %d lines for %d paths: %q", task, len(files), res.Evidence.DiffFiles, files))
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// The code under test runs inside the grader's test process, as the
// grader's user: on import it writes a perfect reward and kills the
// grader's script. This is the documented limit of any grader that runs
// the agent's code (docs/security.md, and "Writing a safe test.sh"); the
// test pins the behaviour so that a change to it is seen.
func TestAttackLyingCodeUnderTest(t *testing.T) {
	requireSlow(t)
	run := attackRun(t)
	res := run.result(t, nativeTask, "lying-code")
	assert.Equal(t, grader.OutcomePassed, res.Outcome, "the documented limit changed (update docs/security.md): %s", res.Error)
	if assert.NotNil(t, res.GradePhase.ExitCode) {
		assert.Equal(t, 137, *res.GradePhase.ExitCode, "the grader's script was killed, yet its reward was read")
	}
	harborLimit(t, run, "lying-code")
	// The lying code is in the work dir, the agent's own work: the tamper
	// inspector has nothing to flag (docs/security.md).
	assert.Empty(t, run.result(t, harborTask, "lying-code").Tamper)
}

// The code under test kills the grading container's keep-alive, so the
// container stops mid-grade. That is the agent's doing: the trial must be
// graded failed, not counted as an infrastructure error (retried, and left
// out of pass rates).
func TestAttackCodeKillsGrader(t *testing.T) {
	requireSlow(t)
	run := attackRun(t)
	for _, task := range []string{nativeTask, harborTask} {
		res := run.result(t, task, "code-kills-grader")
		assert.Equal(t, grader.OutcomeFailed, res.Outcome, "%s: %s", res.Trial, res.Error)
		assert.Equal(t, 1, res.Tries, "%s: not retried", res.Trial)
		if task == harborTask {
			// Graded live, the keep-alive is the container's PID 1, which
			// the code under test leaves alone: the grade ends as the
			// failing test wrote it.
			continue
		}
		if assert.NotNil(t, res.RewardError, res.Trial) {
			assert.Equal(t, grader.RewardUnfinished, res.RewardError.Kind, res.Trial)
		}
	}
}

// The agent kills its own container's keep-alive: the agent phase ends,
// the trial is graded on what it left and fails; it is not an
// infrastructure error.
func TestAttackAgentKillsContainer(t *testing.T) {
	requireSlow(t)
	run := attackRun(t)
	for _, task := range []string{nativeTask, harborTask} {
		res := assertHonestFail(t, run, task, "agent-kills-container")
		if task == harborTask {
			// In Harbor's model the keep-alive is the container's PID 1,
			// which the kernel does not let a process inside kill: the
			// agent phase simply ends.
			continue
		}
		assert.Contains(t, res.AgentPhase.Failed, "container stopped", res.Trial)
	}
}

// Setuid- and setgid-root files the agent (root in its container) leaves in
// the host directories it can write: none may remain in the results, where
// any local user could run them.
func TestAttackSetuidFiles(t *testing.T) {
	requireSlow(t)
	run := attackRun(t)
	for _, task := range []string{nativeTask, harborTask} {
		assertHonestFail(t, run, task, "setuid")
	}
	var found []string
	err := filepath.WalkDir(run.dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if fi, err := d.Info(); err == nil && fi.Mode().IsRegular() && fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			found = append(found, fmt.Sprintf("%s %s", fi.Mode(), p))
		}
		return nil
	})
	require.NoError(t, err)
	fixedBug(t, len(found) == 0,
		"setuid/setgid files an agent writes into Harbor's /logs/agent stay in the results (world-reachable) when flightdeck runs as root",
		found)
}

// While an agent runs, the setuid-root files it writes into its work dir
// exist on the host: no other local user may reach them, so the run's
// .work dir (which holds the work dirs) is private.
func TestAttackSetuidWhileRunning(t *testing.T) {
	requireSlow(t)
	requireEngine(t)
	dir := t.TempDir()
	suiteFile := writeSuite(t, dir, suiteFile{
		Name: "setuid", Tasks: []string{taskDir(t, nativeTask)}, Concurrency: 1, Retries: retries(0),
		Variants: map[string]map[string]any{"setuid": command(strings.Replace(agentScript(t, "setuid"), "exit 0", gate+"exit 0", 1))},
	})
	p := startFlightdeck(t, dir, nil, "run", suiteFile)
	id := p.runID(t)
	agent := waitContainer(t, id, trialName(nativeTask, "setuid"), "agent", 5*time.Minute)
	work := filepath.Join(dir, "results", id, ".work")
	suid := filepath.Join(work, trialName(nativeTask, "setuid"), "workdir", "suid-bash")
	var fi os.FileInfo
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if info, err := os.Stat(suid); err == nil && info.Mode()&os.ModeSetuid != 0 {
			fi = info
			break
		}
	}
	require.NotNil(t, fi, "the agent's setuid file did not appear in its work dir")
	wi, err := os.Stat(work)
	require.NoError(t, err)
	openGate(t, agent)
	r := p.wait(t, cliTimeout)
	assert.NotContains(t, r.stderr, "panic:")
	assertNoLeftovers(t, id)
	fixedBug(t, wi.Mode().Perm()&0o007 == 0,
		"the run's .work dir is open to every local user while agents run, and a setuid-root file an agent writes in its work dir is reachable",
		fmt.Sprintf("%s is %s", work, wi.Mode().Perm()))
}

// A command agent searching its whole container finds neither the hidden
// tests nor the solution (invariant 1).
func TestAttackSearchHidden(t *testing.T) {
	requireSlow(t)
	run := attackRun(t)
	for _, task := range []string{nativeTask, harborTask} {
		res := assertHonestFail(t, run, task, "search-hidden")
		log := readText(t, filepath.Join(run.trialDir(task, "search-hidden"), results.AgentLog))
		if res.Outcome == grader.OutcomeAgentTimeout {
			// A machine too busy to search the whole container in time: what
			// was searched found nothing either.
			t.Logf("%s: the search did not finish before the agent's timeout", task)
		} else {
			require.Contains(t, log, "\nsearched\n", "%s: the search did not finish", task)
		}
		for _, line := range strings.Split(log, "\n") {
			assert.False(t, strings.HasPrefix(line, "FOUND "), "%s: %s", task, line)
		}
	}
}

// Host git, run by flightdeck on the agent's work dir for evidence and
// commit steps, runs none of the programs the agent's repository
// configures (fsmonitor, hooks, pagers, diff drivers, gpg, ssh, editors),
// and refuses a repository that sets filter drivers, however git's config
// syntax hides them (a byte-order mark before the section).
func TestAttackHostGit(t *testing.T) {
	run := attackRun(t)
	matches, err := filepath.Glob(sharedAttacks.marker + "-*")
	require.NoError(t, err)
	assert.Equal(t, []string{sharedAttacks.marker + "-dir"}, matches, "a program the agent configured ran on the host")
	for _, task := range []string{nativeTask} {
		// A Harbor task's commits run with the container's own git, on the
		// agent's own repository: host git only reads a copy of it for the
		// evidence, and the marker check above covers that.
		res := assertHonestFail(t, run, task, "host-git")
		assert.Empty(t, res.AgentPhase.Failed, "%s: the commit runs with the overrides", res.Trial)
		res = assertHonestFail(t, run, task, "host-git-filter")
		assert.Contains(t, res.AgentPhase.Failed, "filter.evil", "%s: a filter driver is refused", res.Trial)
		res = assertHonestFail(t, run, task, "host-git-bom")
		assert.Contains(t, res.AgentPhase.Failed, "filter.evil", "%s: a filter driver behind a byte-order mark is refused", res.Trial)
	}
}

// A write step never writes through a link the agent made in the work dir
// to a host directory or file: the step fails and the host is untouched.
func TestAttackWriteThroughLink(t *testing.T) {
	requireSlow(t)
	run := attackRun(t)
	entries, err := os.ReadDir(sharedAttacks.marker + "-dir")
	require.NoError(t, err)
	assert.Empty(t, entries, "a write step wrote through a link out of the work dir")
	for _, task := range []string{nativeTask, harborTask} {
		for i := 1; i <= 3; i++ {
			res := assertHonestFail(t, run, task, fmt.Sprintf("write-link-%d", i))
			if task == harborTask {
				// Harbor's model writes inside the container, never on the
				// host: a link to a host path leads nowhere there (the
				// check above shows the host untouched).
				continue
			}
			assert.Contains(t, res.AgentPhase.Failed, "steps[1].write", res.Trial)
		}
	}
}
