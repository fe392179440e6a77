package runner

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/testenv"
	"github.com/flightdeck/flightdeck/runner/harbor"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/runner/tamper"
)

// Harbor compatibility on the real engine: the Harbor fixture dataset
// (fixtures/harbor) under the oracle and nop gives the rewards its
// expected.json lists, planted rewards never count, a registry dataset
// fetched from a file:// git repository runs, and flightdeck's own tasks
// score 1 under the oracle when graded Harbor's way.

// harborExpected is fixtures/harbor/expected.json.
type harborExpected struct {
	ImageMap     map[string]string             `json:"image_map"`
	HostEnvUnset []string                      `json:"host_env_unset"`
	Tasks        map[string]harborExpectedTask `json:"tasks"`
}

// harborExpectedTask is what expected.json says of one fixture task.
type harborExpectedTask struct {
	// Oracle is the oracle's reward; null where no reward is read
	// (OracleRewardError says why).
	Oracle            *float64           `json:"oracle"`
	OracleRewardError string             `json:"oracle_reward_error"`
	Nop               *float64           `json:"nop"`
	OracleOutcome     grader.Outcome     `json:"oracle_outcome"`
	OracleTimedOut    bool               `json:"oracle_timed_out"`
	OracleExit        *int               `json:"oracle_exit"`
	OracleRewards     map[string]float64 `json:"oracle_rewards"`
	// OracleRewardSource is where the oracle's rewards come from when
	// OracleRewards is set (reward.json unless a multi-step task's steps).
	OracleRewardSource string             `json:"oracle_reward_source"`
	NopRewards         map[string]float64 `json:"nop_rewards"`
	// SnapshotMode is how the snapshot variant is graded ("snapshot"
	// unless a multi-step task, which is graded live).
	SnapshotMode string `json:"snapshot_mode"`
	// HarborSharedOracle is what Harbor's own procedure gives the
	// oracle where flightdeck's hardened grading differs (attacks).
	HarborSharedOracle *float64 `json:"harbor_shared_oracle"`
	// SnapshotOracle is the oracle's reward under grading: snapshot
	// where it differs from live grading.
	SnapshotOracle *float64 `json:"snapshot_oracle"`
	// Tamper are the kinds of the tamper inspector's findings on the
	// oracle's trial (the snapshot variant's, less reward-writer, which
	// only a live grade shows); none for an honest task.
	Tamper []string `json:"tamper"`
	// TamperNote, when set, is why the oracle's trial is not inspected.
	TamperNote string `json:"tamper_note"`
	// Mode is how the oracle and nop trials are graded: "live" unless
	// "separate" (a separate verifier, which the snapshot variant keeps).
	Mode string `json:"mode"`
	// HarborRace, when set, says why Harbor's procedure gives the oracle
	// a reward that depends on the machine's pace (a race the task itself
	// has): the re-enactment's reward is shown, not compared.
	HarborRace string `json:"harbor_race"`
}

func readHarborExpected(t *testing.T) harborExpected {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(harborFixtureDir(t), "expected.json"))
	require.NoError(t, err)
	var exp harborExpected
	require.NoError(t, json.Unmarshal(data, &exp))
	require.NotEmpty(t, exp.Tasks)
	return exp
}

// unsetHostEnv unsets the variables the fixtures expect unset, restoring
// them when the test ends. (No other test reads them.)
func unsetHostEnv(t *testing.T, names []string) {
	t.Helper()
	for _, k := range names {
		if old, ok := os.LookupEnv(k); ok {
			require.NoError(t, os.Unsetenv(k))
			t.Cleanup(func() { os.Setenv(k, old) })
		}
	}
}

// imagesYAML renders an image map as a suite's images: value.
func imagesYAML(m map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%q: %q", k, m[k]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// checkHarborTamper checks the tamper inspector's verdict on a trial: the
// kinds of its findings (none on an honest task), and that it ran, except
// for a separate verifier (its own image grades) or a noted reason.
func checkHarborTamper(t *testing.T, r *results.Result, want harborExpectedTask, kinds []string) {
	t.Helper()
	got := []string{}
	for _, f := range r.Tamper {
		if !slices.Contains(got, f.Kind) {
			got = append(got, f.Kind)
		}
	}
	assert.ElementsMatch(t, kinds, got, "%s: tamper findings %+v", r.Trial, r.Tamper)
	switch {
	case want.Mode == "separate" && len(r.Steps) == 0:
		assert.Nil(t, r.TamperCheck, "%s: a separate verifier's task is not inspected", r.Trial)
	case want.TamperNote != "":
		if assert.NotNil(t, r.TamperCheck, r.Trial) {
			assert.Equal(t, want.TamperNote, r.TamperCheck.Note, r.Trial)
		}
	default:
		if assert.NotNil(t, r.TamperCheck, "%s: inspected", r.Trial) {
			assert.True(t, r.TamperCheck.Checked, "%s: %s", r.Trial, r.TamperCheck.Note)
		}
	}
}

// The fixture dataset, run as --path would run it, with the oracle and
// nop, and compared with the docker-CLI re-enactment of Harbor's
// procedure: its reward for each fixture's oracle is recorded
// (fixtures/harbor/harbor-cli.json), and re-enacted, beside flightdeck's
// run, for a fixture that changed since. Grading from a snapshot is
// TestEngineHarborSnapshot's.
func TestEngineHarborFixtures(t *testing.T) {
	t.Parallel()
	eng := requireEngine(t)
	exp := readHarborExpected(t)
	unsetHostEnv(t, exp.HostEnvUnset)
	root := harborFixtureDir(t)
	cli := startCLIReference(t, eng, exp, root)
	suiteFile := writeSuite(t, `
name: harbor-fixtures
variants:
  oracle: {agent: oracle}
  nop: {agent: nop}
images: `+imagesYAML(exp.ImageMap)+`
concurrency: 2
retries: 1
results: RESULTS
`)
	rec, res := runSuite(t, eng, suiteFile, suite.Options{Path: []string{filepath.Join(root, "tasks")}})
	require.Len(t, res, 2*len(exp.Tasks), "an oracle and a nop trial per fixture task")
	for name, want := range exp.Tasks {
		t.Run(name, func(t *testing.T) { checkHarborFixtureTask(t, rec, res, name, want) })
	}
	t.Run("planted rewards never count", func(t *testing.T) { harborPlantedRewards(t, rec) })
	t.Run("a rewriting loop the agent left takes turns with the verifier", func(t *testing.T) { harborRewritingLoop(t, res) })
	t.Run("artifacts are collected after the verifier, with a manifest", func(t *testing.T) { harborArtifacts(t, rec, "oracle") })
	t.Run("agrees with a docker-CLI re-enactment of Harbor", func(t *testing.T) { compareWithCLI(t, exp, root, res, cli()) })
	t.Run("the healthcheck ran before the agent until it passed", func(t *testing.T) { harborHealthcheck(t, rec) })
	assert.Equal(t, results.StatusFinished, rec.Status)
	assertNoLeftovers(t, eng, rec.RunID)
}

// snapshotFixtures are the fixture tasks TestEngineHarborSnapshot grades
// from a snapshot, besides those whose expected.json says how a snapshot
// grades them (snapshot_oracle, snapshot_mode, a separate verifier) or
// lists tamper findings: each needs something the snapshot's fresh
// container must carry over or set up again (the filesystem outside the
// work dir, owners, the verifier's user, env, work dir, network, memory,
// services, an allowlist, /logs, artifacts, the entrypoint's service, a
// container the agent's timeout stopped), and reward-txt is the plainest.
var snapshotFixtures = []string{
	"agent-timeout", "allowlist", "artifacts", "compose-sidecar", "entrypoint-service", "env-templating",
	"exact-tree", "logs-dirs", "memory-string", "no-network", "outside-workdir", "owned-workdir",
	"reward-txt", "run-as-users", "verifier-network", "workdir-override",
}

// The fixture tasks graded from a snapshot (grading: snapshot) with the
// oracle: the reward is the live grade's unless expected.json says
// otherwise, and so are the tamper findings (less reward-writer, which
// only a live grade shows).
func TestEngineHarborSnapshot(t *testing.T) {
	t.Parallel()
	eng := requireEngine(t)
	exp := readHarborExpected(t)
	unsetHostEnv(t, exp.HostEnvUnset)
	root := harborFixtureDir(t)
	include := slices.Clone(snapshotFixtures)
	for name, want := range exp.Tasks {
		if want.SnapshotOracle != nil || want.SnapshotMode != "" || want.Mode != "" || len(want.Tamper) > 0 {
			include = append(include, name)
		}
	}
	slices.Sort(include)
	include = slices.Compact(include)
	suiteFile := writeSuite(t, `
name: harbor-snapshot
variants:
  snapshot: {agent: oracle, grading: snapshot}
images: `+imagesYAML(exp.ImageMap)+`
concurrency: 2
retries: 1
results: RESULTS
`)
	rec, res := runSuite(t, eng, suiteFile, suite.Options{Path: []string{filepath.Join(root, "tasks")}, Include: include})
	require.Len(t, res, len(include))
	for _, name := range include {
		t.Run(name, func(t *testing.T) { checkHarborSnapshot(t, res, name, exp.Tasks[name]) })
	}
	t.Run("no process of the agent's survives a snapshot", func(t *testing.T) {
		log := readFile(t, filepath.Join(rec.Dir, "planted-reward__snapshot__1", results.GraderLog))
		assert.Contains(t, log, "plant-loop processes alive: 0\n")
	})
	t.Run("artifacts are collected after the verifier, with a manifest", func(t *testing.T) { harborArtifacts(t, rec, "snapshot") })
	assert.Equal(t, results.StatusFinished, rec.Status)
	assertNoLeftovers(t, eng, rec.RunID)
}

// checkHarborSnapshot checks the snapshot-graded oracle trial of one
// fixture task against expected.json.
func checkHarborSnapshot(t *testing.T, res map[string]*results.Result, name string, want harborExpectedTask) {
	snap := res[name+"__snapshot__1"]
	require.NotNil(t, snap)
	wantMode := suite.GradingSnapshot
	if want.SnapshotMode != "" {
		wantMode = want.SnapshotMode
	}
	assert.Equal(t, wantMode, snap.GradePhase.Mode)
	wantReward := want.Oracle
	if want.SnapshotOracle != nil {
		wantReward = want.SnapshotOracle
	}
	if assert.NotNil(t, snap.Reward, "snapshot: %s", snap.Error) && wantReward != nil {
		assert.Equal(t, *wantReward, *snap.Reward, "the oracle graded from a snapshot")
	}
	checkHarborTamper(t, snap, want, slices.DeleteFunc(slices.Clone(want.Tamper), func(k string) bool { return k == tamper.KindRewardWriter }))
}

// checkHarborFixtureTask checks the oracle and nop trials of one fixture
// task against expected.json.
func checkHarborFixtureTask(t *testing.T, rec *results.RunRecord, res map[string]*results.Result, name string, want harborExpectedTask) {
	oracle, nop := res[name+"__oracle__1"], res[name+"__nop__1"]
	require.NotNil(t, oracle)
	require.NotNil(t, nop)
	dir := filepath.Join(rec.Dir, name+"__oracle__1")
	log, _ := os.ReadFile(filepath.Join(dir, results.GraderLog))
	assert.False(t, oracle.Native, "graded Harbor's way")
	wantMode := "live"
	if want.Mode != "" {
		wantMode = want.Mode
	}
	assert.Equal(t, wantMode, oracle.GradePhase.Mode)
	checkHarborTamper(t, oracle, want, want.Tamper)
	// Only an image with an entrypoint of its own, and no healthcheck, is
	// waited for before the agent: no other trial pays for the rule.
	if name == "entrypoint-race" {
		if assert.NotNil(t, oracle.StartWait, "the entrypoint's start is waited for") {
			assert.True(t, oracle.StartWait.Settled, "settled: %+v", oracle.StartWait)
		}
	} else {
		assert.Nil(t, oracle.StartWait, "%s: no entrypoint of its own without a healthcheck: no wait", name)
		assert.Nil(t, nop.StartWait, "%s: no wait", name)
	}

	wantOutcome := want.OracleOutcome
	if wantOutcome == "" {
		wantOutcome = grader.OutcomeFailed
		if want.Oracle != nil && *want.Oracle >= 1 {
			wantOutcome = grader.OutcomePassed
		}
	}
	assert.Equal(t, wantOutcome, oracle.Outcome, "oracle: %s\ngrader.log:\n%s", oracle.Error, log)
	if want.Oracle == nil {
		assert.Nil(t, oracle.Reward, "oracle: no reward is read")
		if assert.NotNil(t, oracle.RewardError, "oracle") {
			assert.Equal(t, want.OracleRewardError, oracle.RewardError.Kind, "oracle: %s", oracle.RewardError.Detail)
		}
	} else {
		require.NotNil(t, oracle.Reward, "oracle: %s\ngrader.log:\n%s", oracle.Error, log)
		assert.Equal(t, *want.Oracle, *oracle.Reward, "oracle reward; grader.log:\n%s", log)
	}
	assert.Equal(t, want.OracleTimedOut, oracle.AgentPhase.TimedOut)
	if want.OracleRewards != nil {
		assert.Equal(t, want.OracleRewards, oracle.Rewards)
		wantSource := grader.RewardJSON
		if want.OracleRewardSource != "" {
			wantSource = want.OracleRewardSource
		}
		assert.Equal(t, wantSource, oracle.RewardSource)
	}
	if want.OracleExit != nil {
		require.NotNil(t, oracle.AgentPhase.ExitCode)
		assert.Equal(t, *want.OracleExit, *oracle.AgentPhase.ExitCode)
		assert.Empty(t, oracle.AgentPhase.Failed, "a non-zero solve.sh is not a failure")
		assert.Equal(t, fmt.Sprintf("%d\n", *want.OracleExit),
			readFile(t, filepath.Join(dir, "logs", "agent", harbor.OracleExitCode)), "written as Harbor writes it")
	}
	assert.FileExists(t, filepath.Join(dir, "logs", "agent", harbor.OracleOutput))

	if want.Nop != nil {
		assert.Equal(t, grader.OutcomeFailed, nop.Outcome, "nop: %s", nop.Error)
		require.NotNil(t, nop.Reward, "nop: %s", nop.Error)
		assert.Equal(t, *want.Nop, *nop.Reward, "nop reward")
		if want.NopRewards != nil {
			assert.Equal(t, want.NopRewards, nop.Rewards)
		}
	}
}

func harborPlantedRewards(t *testing.T, rec *results.RunRecord) {
	log := readFile(t, filepath.Join(rec.Dir, "planted-reward-files__oracle__1", results.GraderLog))
	assert.Contains(t, log, "at start, /logs/verifier holds: test-stdout.txt \n", "the reward dir is made anew before test.sh")
	assert.NotContains(t, readFile(t, filepath.Join(rec.Dir, "planted-tests__oracle__1", results.GraderLog)), "FAIL")
}

// harborRewritingLoop checks the live grade beside planted-reward's loop:
// it is listed, it ran (in its turns) while the verifier did, and what it
// wrote there voided the grade (expected.json: tampered).
func harborRewritingLoop(t *testing.T, res map[string]*results.Result) {
	live := res["planted-reward__oracle__1"]
	require.NotNil(t, live)
	assert.Contains(t, strings.Join(live.GradePhase.AgentProcesses, "\n"), "plant-loop", "the loop is listed with the live grade")
	if assert.NotNil(t, live.RewardError) {
		assert.Contains(t, live.RewardError.Detail, "/logs/verifier/reward", "what the loop wrote in its turn is named")
	}
}

func harborArtifacts(t *testing.T, rec *results.RunRecord, variant string) {
	dir := filepath.Join(rec.Dir, "artifacts__"+variant+"__1", "logs", "artifacts")
	assert.Equal(t, "summary\n", readFile(t, filepath.Join(dir, "summary-copy.txt")))
	assert.Equal(t, "all good\n", readFile(t, filepath.Join(dir, "out", "report.txt")))
	assert.Equal(t, "detail\n", readFile(t, filepath.Join(dir, "out", "details", "one.txt")))
	assert.NoFileExists(t, filepath.Join(dir, "out", "build.log"), "excluded")
	var manifest []harbor.ArtifactEntry
	require.NoError(t, json.Unmarshal([]byte(readFile(t, filepath.Join(dir, harbor.ArtifactManifest))), &manifest))
	require.Len(t, manifest, 3)
	assert.Equal(t, harbor.ArtifactEntry{Source: "/var/tmp/summary.txt", Destination: "artifacts/summary-copy.txt", Type: "file", Status: "ok"}, manifest[0])
	assert.Equal(t, harbor.ArtifactEntry{Source: "/app/out", Destination: "artifacts/out", Type: "directory", Status: "ok"}, manifest[1])
	assert.Equal(t, "failed", manifest[2].Status)
	assert.Contains(t, manifest[2].Error, "/app/never-written.txt does not exist")
	if variant == "oracle" {
		nop := filepath.Join(rec.Dir, "artifacts__nop__1", "logs", "artifacts", harbor.ArtifactManifest)
		assert.FileExists(t, nop, "nop's manifest says what was missing")
	}
}

func harborHealthcheck(t *testing.T, rec *results.RunRecord) {
	log := readFile(t, filepath.Join(rec.Dir, "healthcheck__oracle__1", harbor.HealthcheckLog))
	assert.Equal(t, 2, strings.Count(log, "=== healthcheck run "), log)
	assert.Contains(t, log, "=== exit 1\n")
	assert.True(t, strings.HasSuffix(log, "=== exit 0\n"), log)
}

// The arg-from fixture with no image map: its base, named by a global ARG's
// default, is found missing by the build and replaced by the offline base
// image, as a literal FROM would be.
func TestEngineHarborArgFromFallback(t *testing.T) {
	t.Parallel()
	eng := requireEngine(t)
	task := filepath.Join(harborFixtureDir(t), "tasks", "arg-from")
	suiteFile := writeSuite(t, "name: arg-from\nvariants: {oracle: {agent: oracle}}\nresults: RESULTS\n")
	rec, res := runSuite(t, eng, suiteFile, suite.Options{Path: []string{task}})
	r := res["arg-from__oracle__1"]
	require.NotNil(t, r)
	log, _ := os.ReadFile(filepath.Join(rec.Dir, "arg-from__oracle__1", results.GraderLog))
	assert.Equal(t, grader.OutcomePassed, r.Outcome, "oracle: %s\ngrader.log:\n%s", r.Error, log)
	require.NotNil(t, r.Reward, r.Error)
	assert.Equal(t, 1.0, *r.Reward)
	if _, err := eng.InspectImage(t.Context(), "python:3.12-slim"); err != nil {
		assert.Equal(t, []string{"python:3.12-slim=" + FallbackImage}, rec.FallbackImages, "the base was not pullable")
	}
	assertNoLeftovers(t, eng, rec.RunID)
}

// A healthcheck that never passes ends the trial in infra_error, saying why.
func TestEngineHarborHealthcheckFails(t *testing.T) {
	t.Parallel()
	eng := requireEngine(t)
	dir := t.TempDir()
	task := filepath.Join(dir, "unhealthy")
	writeTestFile(t, filepath.Join(task, "task.toml"), `[verifier]
timeout_sec = 30.0

[environment.healthcheck]
command = "echo not yet; exit 3"
interval_sec = 0.2
start_period_sec = 3.0
start_interval_sec = 0.1
retries = 2
`)
	writeTestFile(t, filepath.Join(task, "instruction.md"), "Nothing.\n")
	writeTestFile(t, filepath.Join(task, "environment", "Dockerfile"), "FROM "+FallbackImage+"\nWORKDIR /app\n")
	writeTestFile(t, filepath.Join(task, "tests", "test.sh"), "echo 1 > /logs/verifier/reward.txt\n")
	writeTestFile(t, filepath.Join(task, "solution", "solve.sh"), "true\n")
	suiteFile := filepath.Join(dir, "s.yaml")
	writeTestFile(t, suiteFile, "tasks: [unhealthy]\nvariants: {oracle: {agent: oracle}}\nretries: 0\nresults: results\n")
	rec, res := runSuite(t, eng, suiteFile, suite.Options{})
	r := res["unhealthy__oracle__1"]
	require.NotNil(t, r)
	assert.Equal(t, grader.OutcomeInfraError, r.Outcome)
	assert.Contains(t, r.Error, `healthcheck "echo not yet; exit 3" failed 2 times in a row (last exit 3)`)
	log := readFile(t, filepath.Join(rec.Dir, "unhealthy__oracle__1", harbor.HealthcheckLog))
	assert.Contains(t, log, "not yet")
	// Failures in the start period (3 s from the first run's start) do not
	// count: every run that ended inside it comes on top of the two that
	// failed the check. How many ended inside it is the machine's speed.
	runs := regexp.MustCompile(`=== healthcheck run \d+ \(([0-9.]+)s after the first\)`).FindAllStringSubmatch(log, -1)
	inside := 0
	for _, m := range runs {
		if after, _ := strconv.ParseFloat(m[1], 64); after <= 2.9 {
			inside++
		}
	}
	assert.Equal(t, strings.Count(log, "=== exit 3"), len(runs), log)
	assert.GreaterOrEqual(t, len(runs), 2+inside, "failures in the start period do not count:\n%s", log)
	assertNoLeftovers(t, eng, rec.RunID)
}

// flightdeck's own tasks, graded Harbor's way (grading: harbor), score 1
// under the oracle and 0 under nop.
func TestEngineNativeTasksGradedHarborsWay(t *testing.T) {
	t.Parallel()
	eng := requireEngine(t)
	repo, err := filepath.Abs("..")
	require.NoError(t, err)
	suiteFile := writeSuite(t, `
name: harbor-grading
tasks: [`+filepath.Join(repo, "tasks", "smoke", "semver")+`, `+filepath.Join(repo, "tasks", "fixtures", "csv-validator")+`]
variants:
  oracle: {agent: oracle, grading: harbor, expect: passed}
  nop: {agent: nop, grading: harbor, expect: failed}
images: {"python:3.12-slim": "`+FallbackImage+`"}
concurrency: 2
results: RESULTS
`)
	rec, res := runSuite(t, eng, suiteFile, suite.Options{})
	require.Len(t, res, 4)
	for _, task := range []string{"semver", "csv-validator"} {
		oracle, nop := res[task+"__oracle__1"], res[task+"__nop__1"]
		log, _ := os.ReadFile(filepath.Join(rec.Dir, task+"__oracle__1", results.GraderLog))
		assert.False(t, oracle.Native, task)
		assert.Equal(t, grader.OutcomePassed, oracle.Outcome, "%s: %s\n%s", task, oracle.Error, log)
		require.NotNil(t, oracle.Reward, task)
		assert.Equal(t, 1.0, *oracle.Reward, task)
		assert.Contains(t, string(log), "RESULT {", "%s: test.sh ran as Harbor's verifier", task)
		assert.Equal(t, grader.OutcomeFailed, nop.Outcome, task)
	}
	assert.Equal(t, 0, rec.ExitCode, "every expectation holds")
	assertNoLeftovers(t, eng, rec.RunID)
}

// A registry dataset whose tasks live in a git repository (file://) is
// fetched at its pinned commit into the cache and runs.
func TestEngineHarborRegistryGit(t *testing.T) {
	t.Parallel()
	eng := requireEngine(t)
	exp := readHarborExpected(t)
	root := harborFixtureDir(t)
	repo := t.TempDir()
	testenv.Git(t, repo, "init", "-q")
	for _, name := range []string{"legacy-v1", "reward-json"} {
		require.NoError(t, os.CopyFS(filepath.Join(repo, "datasets", "h", name), os.DirFS(filepath.Join(root, "tasks", name))))
	}
	testenv.Git(t, repo, "add", "-A")
	testenv.Git(t, repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "tasks")
	commit := strings.TrimSpace(testenv.Git(t, repo, "rev-parse", "HEAD"))
	// A later commit removes a task: the pinned commit still has it.
	testenv.Git(t, repo, "rm", "-rq", "datasets/h/reward-json")
	testenv.Git(t, repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "drop")

	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, "registry.json"), `[{"name": "git-set", "version": "1.0", "description": "",
	  "tasks": [
	    {"name": "legacy-v1", "git_url": "file://`+repo+`", "git_commit_id": "`+commit+`", "path": "datasets/h/legacy-v1"},
	    {"name": "reward-json", "git_url": "file://`+repo+`", "git_commit_id": "`+commit+`", "path": "datasets/h/reward-json"}]}]`)
	suiteFile := filepath.Join(dir, "s.yaml")
	writeTestFile(t, suiteFile, "variants: {oracle: {agent: oracle}}\nimages: "+imagesYAML(exp.ImageMap)+"\nresults: results\n")
	cache := filepath.Join(dir, "cache")
	rec, res := runSuite(t, eng, suiteFile, suite.Options{Registry: "registry.json", Dataset: "git-set@1.0", CacheDir: cache})
	require.Len(t, res, 2)
	for _, name := range []string{"legacy-v1", "reward-json"} {
		r := res[name+"__oracle__1"]
		require.NotNil(t, r, name)
		assert.Equal(t, grader.OutcomePassed, r.Outcome, "%s: %s", name, r.Error)
		assert.True(t, strings.HasPrefix(r.TaskDir, cache+string(filepath.Separator)), "%s runs from the cache: %s", name, r.TaskDir)
		assert.Contains(t, r.TaskDir, commit, name)
	}
	assert.Equal(t, []string{filepath.Join(dir, "registry.json") + ": git-set@1.0"}, rec.Config.Datasets)
	assertNoLeftovers(t, eng, rec.RunID)
}
