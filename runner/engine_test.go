package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/testenv"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/runner/tamper"
	"github.com/flightdeck/flightdeck/runner/trial"
	"github.com/flightdeck/flightdeck/sandbox"
)

// Tests on the real engine. They skip without one, unless
// FLIGHTDECK_REQUIRE_DOCKER=1, and need the offline base image (make
// base-image). Task images they build stay: they are a cache the test
// processes of other packages, running at the same time, share.

// fixturesDir holds the runner's test tasks.
var fixturesDir = filepath.Join("..", "fixtures", "runner")

// sharedEngine is one engine for all the tests of this process, so that
// concurrent tests that need one image build it once.
var sharedEngine struct {
	once sync.Once
	eng  *sandbox.Docker
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedEngine.eng != nil {
		sharedEngine.eng.Close()
	}
	os.Exit(code)
}

// countingEngine counts the containers a run starts and the images it asks for.
type countingEngine struct {
	sandbox.Engine
	starts, images atomic.Int64
}

func (c *countingEngine) Start(ctx context.Context, spec sandbox.ContainerSpec) (sandbox.Container, error) {
	c.starts.Add(1)
	return c.Engine.Start(ctx, spec)
}

func (c *countingEngine) EnsureImage(ctx context.Context, spec sandbox.BuildSpec) (sandbox.Image, error) {
	c.images.Add(1)
	return c.Engine.EnsureImage(ctx, spec)
}

// requireEngine connects to the engine, or skips.
func requireEngine(t *testing.T) *sandbox.Docker {
	t.Helper()
	testenv.Short(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sharedEngine.once.Do(func() {
		sharedEngine.eng, sharedEngine.err = sandbox.NewWithOptions(ctx, sandbox.Options{ProbeDir: os.TempDir()})
	})
	eng, err := sharedEngine.eng, sharedEngine.err
	if err != nil {
		testenv.Missing(t, "no Docker engine: %v", err)
	}
	if _, err := eng.InspectImage(ctx, FallbackImage); err != nil {
		t.Fatalf("the offline base image %s is missing: run `make base-image` (%v)", FallbackImage, err)
	}
	return eng
}

// writeSuite writes a suite file whose tasks are fixture names.
func writeSuite(t *testing.T, body string) string {
	t.Helper()
	abs, err := filepath.Abs(fixturesDir)
	require.NoError(t, err)
	dir := t.TempDir()
	body = strings.ReplaceAll(body, "FIXTURES", abs)
	body = strings.ReplaceAll(body, "RESULTS", filepath.Join(dir, "results"))
	path := filepath.Join(dir, "suite.yaml")
	require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	return path
}

// runSuite runs a suite file on eng and returns the record and the results
// by trial.
func runSuite(t *testing.T, eng sandbox.Engine, suiteFile string, opts suite.Options) (*results.RunRecord, map[string]*results.Result) {
	t.Helper()
	opts.Cwd = filepath.Dir(suiteFile)
	if opts.Retries == 0 {
		opts.Retries = -1
	}
	req, err := Prepare(t.Context(), suiteFile, opts)
	require.NoError(t, err)
	var progress strings.Builder
	r := &Runner{
		Open:     func(context.Context) (sandbox.Engine, error) { return eng, nil },
		Progress: &lockedWriter{w: &progress},
		Version:  "test",
		Owner:    sandbox.Owner{UID: os.Getuid(), GID: os.Getgid()},
	}
	rec, err := r.Run(context.Background(), req)
	require.NoError(t, err, "progress:\n%s", progress.String())
	t.Logf("progress:\n%s", progress.String())
	byTrial := map[string]*results.Result{}
	for _, ts := range rec.Trials {
		res, err := results.ReadResult(filepath.Join(rec.Dir, ts.Trial, results.ResultFile))
		require.NoError(t, err)
		byTrial[ts.Trial] = res
	}
	return rec, byTrial
}

// assertNoLeftovers checks that nothing of the run is left on the engine.
func assertNoLeftovers(t *testing.T, eng sandbox.Engine, runID string) {
	t.Helper()
	reaped, err := eng.Reap(context.Background(), sandbox.ReapOptions{RunID: runID})
	require.NoError(t, err)
	assert.Zero(t, reaped.Containers, "containers of run %s left behind: %v", runID, reaped.Removed)
	assert.Zero(t, reaped.Images, "images of run %s left behind: %v", runID, reaped.Removed)
	assert.Zero(t, reaped.Networks, "networks of run %s left behind: %v", runID, reaped.Removed)
	assert.Zero(t, reaped.Volumes, "volumes of run %s left behind: %v", runID, reaped.Removed)
}

type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

// Every fixture under the oracle ends in its documented outcome.
func TestEngineOutcomes(t *testing.T) {
	t.Parallel()
	eng := requireEngine(t)
	suiteFile := writeSuite(t, `
name: outcomes
tasks: [FIXTURES]
variants:
  oracle: {agent: oracle}
retries: 1
concurrency: 2
results: RESULTS
`)
	rec, res := runSuite(t, eng, suiteFile, suite.Options{})
	require.Len(t, res, 8)
	o := &engineOutcomes{rec: rec, res: res}

	t.Run("oracle via solve.sh", func(t *testing.T) { outcomeSolveSh(t, o) })
	t.Run("oracle via deterministic.json", func(t *testing.T) { outcomeDeterministicJSON(t, o) })
	t.Run("agent timeout", func(t *testing.T) { outcomeAgentTimeout(t, o) })
	t.Run("verifier timeout", func(t *testing.T) { outcomeVerifierTimeout(t, o) })
	t.Run("missing reward", func(t *testing.T) { outcomeMissingReward(t, o) })
	t.Run("malformed reward", func(t *testing.T) { outcomeMalformedReward(t, o) })
	t.Run("failing build", func(t *testing.T) { outcomeFailingBuild(t, o) })
	t.Run("harbor task graded in its own container", func(t *testing.T) { outcomeHarbor(t, o) })
	assert.Equal(t, results.ExitTask, rec.ExitCode, "a task's own defect fails the run")
	assert.Equal(t, results.StatusFinished, rec.Status)
	assert.Contains(t, readFile(t, filepath.Join(rec.Dir, results.JUnitFile)), `tests="8"`)
	assert.NoDirExists(t, filepath.Join(rec.Dir, workDirName))
	assertNoLeftovers(t, eng, rec.RunID)
}

// engineOutcomes is the run of TestEngineOutcomes: a trial of the oracle
// per fixture task.
type engineOutcomes struct {
	rec *results.RunRecord
	res map[string]*results.Result
}

// trial is task's oracle trial.
func (o *engineOutcomes) trial(t *testing.T, task string) *results.Result {
	t.Helper()
	r := o.res[task+"__oracle__1"]
	require.NotNil(t, r, task)
	return r
}

// dir is the directory of task's oracle trial.
func (o *engineOutcomes) dir(task string) string {
	return filepath.Join(o.rec.Dir, task+"__oracle__1")
}

func outcomeSolveSh(t *testing.T, o *engineOutcomes) {
	r := o.trial(t, "answer")
	assert.Equal(t, grader.OutcomePassed, r.Outcome)
	require.NotNil(t, r.Reward)
	assert.Equal(t, 1.0, *r.Reward)
	assert.Equal(t, map[string]float64{"reward": 1, "passed": 1, "total": 1}, r.Rewards)
	require.NotNil(t, r.Summary)
	assert.Equal(t, 1, r.Summary.Passed)
	assert.Equal(t, trial.SourceWorkdir, r.Evidence.Source)
	assert.Equal(t, "answer.txt\n", readFile(t, filepath.Join(o.dir("answer"), results.DiffFiles)))
	assert.Contains(t, readFile(t, filepath.Join(o.dir("answer"), results.DiffPatch)), "+42")
	var names []string
	for _, p := range r.Phases {
		names = append(names, p.Name)
	}
	assert.Equal(t, []string{trial.PhaseImage, trial.PhaseWorkdir, trial.PhaseAgent, trial.PhaseEvidence, trial.PhaseGrade, trial.PhaseResult}, names)
	assert.FileExists(t, filepath.Join(o.dir("answer"), results.BuildLog))
}

func outcomeDeterministicJSON(t *testing.T, o *engineOutcomes) {
	r := o.trial(t, "script")
	assert.Equal(t, grader.OutcomePassed, r.Outcome)
	assert.Equal(t, trial.SourceSteps, r.Evidence.Source)
	assert.Equal(t, 4, r.AgentPhase.Steps)
	events := readFile(t, filepath.Join(o.dir("script"), results.EventsFile))
	assert.Equal(t, `{"seq":1,"kind":"edit","path":"notes/plan.md"}
{"seq":2,"kind":"edit","path":"answer.txt"}
{"seq":3,"kind":"command","command":"test \"$(cat answer.txt)\" = 42 \u0026\u0026 echo checked","exit_code":0}
{"seq":4,"kind":"git.commit","message":"Answer the question"}
`, events)
	assert.Equal(t, "answer.txt\nnotes/plan.md\n", readFile(t, filepath.Join(o.dir("script"), results.DiffFiles)))
	assert.Contains(t, readFile(t, filepath.Join(o.dir("script"), results.AgentLog)), "checked")
}

func outcomeAgentTimeout(t *testing.T, o *engineOutcomes) {
	r := o.trial(t, "agent-timeout")
	assert.Equal(t, grader.OutcomeAgentTimeout, r.Outcome)
	assert.True(t, r.AgentPhase.TimedOut)
	require.NotNil(t, r.Reward, "a timed-out trial is still graded")
	assert.Equal(t, 1.0, *r.Reward)
}

func outcomeVerifierTimeout(t *testing.T, o *engineOutcomes) {
	r := o.trial(t, "verifier-timeout")
	assert.Equal(t, grader.OutcomeVerifierTimeout, r.Outcome)
	assert.True(t, r.GradePhase.TimedOut)
	assert.Nil(t, r.Reward)
}

func outcomeMissingReward(t *testing.T, o *engineOutcomes) {
	// The task's own oracle gets no reward: no agent's work explains it.
	r := o.trial(t, "missing-reward")
	assert.Equal(t, grader.OutcomeTaskError, r.Outcome)
	assert.Equal(t, grader.SpecTaskError, r.OutcomeClass)
	require.NotNil(t, r.RewardError)
	assert.Equal(t, grader.RewardMissing, r.RewardError.Kind)
	assert.Contains(t, r.Error, "without writing $FLIGHTDECK_REWARD_DIR (/flightdeck/reward)/reward.txt or reward.json")
	assert.Equal(t, 1, r.Tries, "a task's defect is not retried")
}

func outcomeMalformedReward(t *testing.T, o *engineOutcomes) {
	r := o.trial(t, "malformed-reward")
	assert.Equal(t, grader.OutcomeTaskError, r.Outcome)
	require.NotNil(t, r.RewardError)
	assert.Equal(t, grader.RewardMalformed, r.RewardError.Kind)
	assert.Contains(t, r.Error, "which does not parse")
}

func outcomeFailingBuild(t *testing.T, o *engineOutcomes) {
	r := o.trial(t, "broken-build")
	assert.Equal(t, grader.OutcomeTaskError, r.Outcome)
	assert.Equal(t, 1, r.Tries, "a failing Dockerfile step is the task's: not retried")
	assert.Contains(t, r.Error, "exit 3")
	assert.Contains(t, readFile(t, filepath.Join(o.dir("broken-build"), results.BuildLog)), "this build fails on purpose")
}

func outcomeHarbor(t *testing.T, o *engineOutcomes) {
	r := o.trial(t, "harbor")
	assert.Equal(t, grader.OutcomePassed, r.Outcome, r.Error)
	assert.False(t, r.Native)
	assert.Equal(t, "reward.txt", r.RewardSource)
	assert.Contains(t, readFile(t, filepath.Join(o.dir("harbor"), "logs", "agent", "oracle.txt")), "oracle finished")
}

// The nop, command and reward-planting agents (the command agent checks
// that neither the hidden tests nor the solution are in its container, and
// that its instruction is there, read-only; one planter leaves a loop
// rewriting the reward, the other a process that writes reward.json once,
// as soon as /logs/verifier and /tests are made anew for the verifier);
// then a rerun is all cached and starts no container; --no-cache runs again.
func TestEngineAgentsAndCache(t *testing.T) {
	t.Parallel()
	eng := requireEngine(t)
	suiteFile := writeSuite(t, `
name: agents
tasks: [FIXTURES/answer, FIXTURES/harbor]
variants:
  nop: {agent: nop, expect: failed}
  cmd:
    agent: command
    expect: passed
    command: >-
      test ! -e /tests && test ! -e /solution && test ! -e /flightdeck/task &&
      ! grep -rqs "reward 1 when" / --exclude-dir=proc --exclude-dir=sys --exclude-dir=usr --exclude-dir=var &&
      grep -q 42 "$FLIGHTDECK_INSTRUCTION_FILE" && test -n "$FLIGHTDECK_INSTRUCTION" &&
      test "$FLIGHTDECK_WORKDIR" = "$PWD" && echo 42 > answer.txt && echo done > /opt/marker &&
      case "$FLIGHTDECK_INSTRUCTION_FILE" in
        /logs/agent/*) test ! -e .git ;;
        *) ! (echo forged >> "$FLIGHTDECK_INSTRUCTION_FILE") 2>/dev/null && git add answer.txt && git commit -qm Answer ;;
      esac
  plant:
    agent: command
    expect: failed
    command: >-
      echo 41 > answer.txt; echo done > /opt/marker;
      for d in . "$FLIGHTDECK_WORKDIR" /logs/verifier /flightdeck/reward /flightdeck /tmp /tests; do
        mkdir -p "$d"; echo '{"reward": 1}' > "$d/reward.json"; echo 1 > "$d/reward.txt"; done;
      (while sleep 0.2; do echo 1 > /logs/verifier/reward.txt; done) &
      exit 0
  plant-once:
    agent: command
    expect: failed
    command: >-
      echo 41 > answer.txt; first=$(stat -c %i /logs/verifier 2>/dev/null);
      (until [ "$(stat -c %i /logs/verifier 2>/dev/null)" != "$first" ] && [ -e /tests/test.sh ]; do sleep 0.01; done;
      echo '{"reward": 1}' > /logs/verifier/reward.json) >/dev/null 2>&1 &
      exit 0
retries: 0
concurrency: 2
results: RESULTS
`)
	counting := &countingEngine{Engine: eng}
	rec, res := runSuite(t, counting, suiteFile, suite.Options{})
	require.Len(t, res, 8)
	assert.Equal(t, 0, rec.ExitCode, "every expectation holds")
	for _, task := range []string{"answer", "harbor"} {
		assertAgentsTask(t, rec, res, task)
	}
	assert.Positive(t, counting.starts.Load())
	assertNoLeftovers(t, eng, rec.RunID)

	again := &countingEngine{Engine: eng}
	rec2, res2 := runSuite(t, again, suiteFile, suite.Options{})
	assert.Zero(t, again.starts.Load(), "a cached rerun starts no container")
	assert.Zero(t, again.images.Load(), "a cached rerun asks for no image")
	assert.Equal(t, 0, rec2.ExitCode)
	for id, r := range res2 {
		assert.True(t, r.Cached, id)
		assert.Equal(t, res[id].Outcome, r.Outcome, id)
		assert.Equal(t, rec.RunID+"/"+id, r.CachedFrom, id)
	}

	fresh := &countingEngine{Engine: eng}
	rec3, res3 := runSuite(t, fresh, suiteFile, suite.Options{NoCache: true, Variants: []string{"nop"}, Tasks: []string{"answer"}})
	require.Len(t, res3, 1)
	assert.False(t, res3["answer__nop__1"].Cached)
	assert.Positive(t, fresh.starts.Load(), "--no-cache runs again")
	assertNoLeftovers(t, eng, rec3.RunID)
}

// assertAgentsTask checks the nop, cmd and planting trials of task in the
// first run of TestEngineAgentsAndCache.
func assertAgentsTask(t *testing.T, rec *results.RunRecord, res map[string]*results.Result, task string) {
	t.Helper()
	nop, cmd := res[task+"__nop__1"], res[task+"__cmd__1"]
	assert.Equal(t, grader.OutcomeFailed, nop.Outcome, task)
	assert.Equal(t, grader.OutcomePassed, cmd.Outcome, "%s: %s", task, cmd.Error)
	events := readFile(t, filepath.Join(rec.Dir, task+"__cmd__1", results.EventsFile))
	if task == "answer" {
		// The native model: a fresh grading container, where nothing of
		// the agent's runs; the planted reward is simply not there.
		for _, v := range []string{"plant", "plant-once"} {
			plant := res[task+"__"+v+"__1"]
			assert.Equal(t, grader.OutcomeFailed, plant.Outcome, "%s: %s", plant.Trial, plant.Error)
			if assert.NotNil(t, plant.Reward, plant.Trial) {
				assert.Equal(t, 0.0, *plant.Reward, "%s: a planted reward never counts", plant.Trial)
			}
		}
		assert.Equal(t, `{"seq":1,"kind":"edit","path":"answer.txt"}
{"seq":2,"kind":"git.commit","message":"Answer"}
`, events, task)
		return
	}
	// Harbor's model: the verifier runs live beside the processes the agent
	// left, which only ever run while the verifier's are stopped. Whatever
	// they write into /logs/verifier then voids the grade (tampered); if
	// the verifier was done before their turn came, the reward is the 0 it
	// wrote. Either way the planted reward never counts, whatever the
	// timing. The work dir has no .git of flightdeck's.
	for _, v := range []string{"plant", "plant-once"} {
		plant := res[task+"__"+v+"__1"]
		assert.Equal(t, grader.OutcomeFailed, plant.Outcome, "%s: %s", plant.Trial, plant.Error)
		assert.NotEmpty(t, plant.GradePhase.AgentProcesses, plant.Trial)
		if plant.Reward != nil {
			assert.Equal(t, 0.0, *plant.Reward, "%s: a planted reward never counts", plant.Trial)
			t.Logf("%s: the verifier was done before the agent's processes ran again", plant.Trial)
		} else if assert.NotNil(t, plant.RewardError, plant.Trial) {
			assert.Equal(t, grader.RewardTampered, plant.RewardError.Kind, "%s: %s", plant.Trial, plant.RewardError.Detail)
			assert.True(t, slices.ContainsFunc(plant.Tamper, func(f tamper.Finding) bool { return f.Kind == tamper.KindRewardWriter }),
				"%s: %+v", plant.Trial, plant.Tamper)
		}
	}
	// The tamper inspector flags the rewards planted in /logs/verifier
	// before the verifier ran.
	plant := res[task+"__plant__1"]
	assert.True(t, slices.ContainsFunc(plant.Tamper, func(f tamper.Finding) bool {
		return f.Kind == tamper.KindVerifierFiles && f.Path == "/logs/verifier/reward.txt"
	}), "%s: %+v", task, plant.Tamper)
	assert.Equal(t, `{"seq":1,"kind":"edit","path":"answer.txt"}
`, events, task)
}

// --jobs 2 overlaps trials and gets the results --jobs 1 gets.
func TestEngineJobs(t *testing.T) {
	t.Parallel()
	eng := requireEngine(t)
	suiteFile := writeSuite(t, `
name: jobs
tasks: [FIXTURES/answer, FIXTURES/script]
variants:
  oracle: {agent: oracle}
  nop: {agent: nop}
results: RESULTS
`)
	rec1, res1 := runSuite(t, eng, suiteFile, suite.Options{Jobs: 1, NoCache: true})
	rec2, res2 := runSuite(t, eng, suiteFile, suite.Options{Jobs: 2, NoCache: true})
	require.Len(t, res1, 4)
	require.Len(t, res2, 4)
	for id, r := range res1 {
		assert.Equal(t, r.Outcome, res2[id].Outcome, id)
		assert.Equal(t, r.Reward, res2[id].Reward, id)
	}
	overlaps := func(rec *results.RunRecord) bool {
		for i, a := range rec.Trials {
			for _, b := range rec.Trials[i+1:] {
				if a.Started.Before(b.Finished) && b.Started.Before(a.Finished) {
					return true
				}
			}
		}
		return false
	}
	assert.False(t, overlaps(rec1), "--jobs 1 runs one trial at a time")
	assert.True(t, overlaps(rec2), "--jobs 2 runs trials at once")
	assertNoLeftovers(t, eng, rec1.RunID)
	assertNoLeftovers(t, eng, rec2.RunID)
}

// A run's start removes earlier runs' leftovers whose owner is gone, but
// not those made less than orphanMinAge ago: those are left to whoever
// killed their owner (`flightdeck gc`).
func TestEngineRunStartReapsOldOrphans(t *testing.T) {
	t.Parallel()
	eng := requireEngine(t)
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	host, err := os.Hostname()
	require.NoError(t, err)
	orphanRun := "orphans-" + NewRunID(time.Now())
	orphan := func(name string, created time.Time) string {
		args := []string{"run", "-d", "--name", name + "-" + orphanRun, "--network", "none"}
		for k, v := range map[string]string{
			sandbox.LabelManaged: "true", sandbox.LabelRun: orphanRun, sandbox.LabelKind: sandbox.KindContainer,
			sandbox.LabelOwnerHost: host, sandbox.LabelOwnerPID: fmt.Sprint(dead.Process.Pid),
			sandbox.LabelCreated: created.UTC().Format(time.RFC3339), sandbox.LabelTest: os.Getenv(sandbox.TestEnv),
		} {
			args = append(args, "--label", k+"="+v)
		}
		out, err := exec.Command("docker", append(args, FallbackImage, "sleep", "infinity")...).CombinedOutput()
		require.NoError(t, err, "%s", out)
		id := strings.TrimSpace(string(out))
		t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", id).Run() })
		return id
	}
	old := orphan("old", time.Now().Add(-2*orphanMinAge))
	fresh := orphan("fresh", time.Now())

	suiteFile := writeSuite(t, "tasks: [FIXTURES/answer]\nvariants: {nop: {agent: nop}}\nretries: 0\nresults: RESULTS\n")
	rec, _ := runSuite(t, eng, suiteFile, suite.Options{})
	for id, wantGone := range map[string]bool{old: true, fresh: false} {
		st, err := eng.State(context.Background(), id)
		require.NoError(t, err)
		assert.Equal(t, wantGone, st.Missing, "container %.12s (gone: %v)", id, wantGone)
	}
	assertNoLeftovers(t, eng, rec.RunID)
}

// imageThief removes a trial's image from the engine just before the
// trial's first container starts: what a `docker rmi` in another terminal
// does to a run.
type imageThief struct {
	sandbox.Engine
	trial string
	once  sync.Once
	err   error
}

func (e *imageThief) Start(ctx context.Context, spec sandbox.ContainerSpec) (sandbox.Container, error) {
	if spec.TrialID == e.trial {
		e.once.Do(func() { e.err = e.Engine.RemoveImage(ctx, spec.Image) })
	}
	return e.Engine.Start(ctx, spec)
}

// A task image removed from the engine mid-run is got again: the trial
// whose container could not start is retried and runs, and so do the
// trials after it.
func TestEngineImageRemovedMidRun(t *testing.T) {
	t.Parallel()
	eng := requireEngine(t)
	task := filepath.Join(t.TempDir(), "answer")
	require.NoError(t, os.CopyFS(task, os.DirFS(filepath.Join(fixturesDir, "answer"))))
	// An image of its own: the other tests' answer image stays.
	writeTestFile(t, filepath.Join(task, "environment", "nonce"), NewRunID(time.Now())+"\n")
	suiteFile := writeSuite(t, "tasks: ["+task+"]\nattempts: 3\nretries: 1\nresults: RESULTS\n"+
		"variants: {cmd: {agent: command, command: 'echo 42 > answer.txt'}}\n")
	thief := &imageThief{Engine: eng, trial: "answer__cmd__2"}
	rec, res := runSuite(t, thief, suiteFile, suite.Options{Jobs: 1})
	require.NoError(t, thief.err)
	require.Len(t, res, 3)
	for name, r := range res {
		assert.Equal(t, grader.OutcomePassed, r.Outcome, "%s: %s", name, r.Error)
	}
	assert.Equal(t, 2, res["answer__cmd__2"].Tries, "the trial whose image went is retried")
	assertNoLeftovers(t, eng, rec.RunID)
}
