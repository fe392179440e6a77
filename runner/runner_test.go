package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	"github.com/flightdeck/flightdeck/runner/trial"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/sandbox/sandboxtest"
)

// fakeEngine stands in for the engine in tests of the run's logic: the
// project's fake (sandboxtest), whose containers are host dirs, with the
// image's work dir holding README, and hooks for what these tests vary.
// The grader's container writes reward.json {"reward": 1} when the agent
// left answer.txt holding 42, else 0, or what reward makes of answer.txt.
type fakeEngine struct {
	*sandboxtest.Engine
	mu       sync.Mutex
	startErr func(sandbox.ContainerSpec) error
	agent    func(ctx context.Context, spec sandbox.ContainerSpec, exec sandbox.ExecSpec) (sandbox.ExecResult, error)
	reaped   []sandbox.ReapOptions
	starts   int
	handed   []string // containers and paths handed back
	removed  []string
	stopped  []string // phases of the containers stopped
	killed   func(id string) (bool, error)
	reward   func(answer string) string // reward.json's body
}

func newFake(t *testing.T) *fakeEngine {
	f := &fakeEngine{Engine: sandboxtest.New(t.TempDir())}
	f.ImageFiles = map[string]string{"app/README": "seed\n"}
	f.Run = f.run
	return f
}

func (f *fakeEngine) Reap(ctx context.Context, o sandbox.ReapOptions) (sandbox.Reaped, error) {
	f.mu.Lock()
	f.reaped = append(f.reaped, o)
	f.mu.Unlock()
	return f.Engine.Reap(ctx, o)
}

func (f *fakeEngine) Start(ctx context.Context, spec sandbox.ContainerSpec) (sandbox.Container, error) {
	f.mu.Lock()
	f.starts++
	f.mu.Unlock()
	if f.startErr != nil {
		if err := f.startErr(spec); err != nil {
			return sandbox.Container{}, err
		}
	}
	return f.Engine.Start(ctx, spec)
}

// phase is the flightdeck.phase label of a container the fake started.
func (f *fakeEngine) phase(id string) string {
	for _, c := range f.Containers() {
		if c.ID == id {
			return c.Phase()
		}
	}
	return ""
}

func hostOf(spec sandbox.ContainerSpec, containerPath string) string {
	for _, m := range spec.Mounts {
		if m.ContainerPath == containerPath {
			return m.HostPath
		}
	}
	return ""
}

// run is what an exec does: the grader's writes the reward, the agent's
// runs the test's agent hook.
func (f *fakeEngine) run(ctx context.Context, c *sandboxtest.Container, e sandbox.ExecSpec) (sandbox.ExecResult, error) {
	if e.StdoutPath != "" {
		if err := os.WriteFile(e.StdoutPath, []byte("fake output\n"), 0o644); err != nil {
			return sandbox.ExecResult{}, err
		}
	}
	if c.Phase() == "grade" {
		data, _ := os.ReadFile(c.Path("/app/answer.txt"))
		r := 0
		if strings.TrimSpace(string(data)) == "42" {
			r = 1
		}
		body := fmt.Sprintf(`{"reward": %d}`, r)
		if f.reward != nil {
			body = f.reward(strings.TrimSpace(string(data)))
		}
		return sandbox.ExecResult{}, os.WriteFile(filepath.Join(c.Path(grader.NativeRewardDir), "reward.json"), []byte(body), 0o644)
	}
	if f.agent != nil {
		return f.agent(ctx, c.Spec, e)
	}
	return sandbox.ExecResult{}, nil
}

func (f *fakeEngine) Killed(ctx context.Context, id string) (bool, error) {
	if f.killed == nil {
		return f.Engine.Killed(ctx, id)
	}
	return f.killed(id)
}

func (f *fakeEngine) KilledSince(ctx context.Context, id string, _ time.Time) (bool, error) {
	return f.Killed(ctx, id)
}

func (f *fakeEngine) HandBack(ctx context.Context, id, path string, o sandbox.Owner) error {
	f.mu.Lock()
	f.handed = append(f.handed, fmt.Sprintf("%s %s %d:%d", f.phase(id), path, o.UID, o.GID))
	f.mu.Unlock()
	return f.Engine.HandBack(ctx, id, path, o)
}

func (f *fakeEngine) Stop(ctx context.Context, id string) error {
	f.mu.Lock()
	f.stopped = append(f.stopped, f.phase(id))
	f.mu.Unlock()
	return f.Engine.Stop(ctx, id)
}

func (f *fakeEngine) Remove(ctx context.Context, id string) error {
	f.mu.Lock()
	f.removed = append(f.removed, f.phase(id))
	f.mu.Unlock()
	return f.Engine.Remove(ctx, id)
}

// answerAgent is a command agent that writes answer.txt with its command's
// last word.
func answerAgent(_ context.Context, spec sandbox.ContainerSpec, e sandbox.ExecSpec) (sandbox.ExecResult, error) {
	words := strings.Fields(e.Cmd[len(e.Cmd)-1])
	return sandbox.ExecResult{}, os.WriteFile(filepath.Join(hostOf(spec, "/app"), "answer.txt"), []byte(words[len(words)-1]+"\n"), 0o644)
}

func fakeRun(t *testing.T, eng sandbox.Engine, ctx context.Context, req Request) *results.RunRecord {
	t.Helper()
	return fakeRunAs(t, eng, ctx, req, sandbox.Owner{})
}

func fakeRunAs(t *testing.T, eng sandbox.Engine, ctx context.Context, req Request, owner sandbox.Owner) *results.RunRecord {
	t.Helper()
	r := &Runner{Open: func(context.Context) (sandbox.Engine, error) { return eng, nil }, Version: "test", Owner: owner}
	rec, err := r.Run(ctx, req)
	require.NoError(t, err)
	return rec
}

func fakeRequest(t *testing.T, suiteBody string, opts suite.Options) Request {
	t.Helper()
	testenv.Tool(t, "git")
	path := writeSuite(t, suiteBody)
	opts.Cwd = filepath.Dir(path)
	if opts.Retries == 0 {
		opts.Retries = -1
	}
	req, err := Prepare(t.Context(), path, opts)
	require.NoError(t, err)
	return req
}

const fakeSuite = `
name: fake
tasks: [FIXTURES/answer]
variants:
  right: {agent: command, command: "echo 42", expect: passed}
  wrong: {agent: command, command: "echo 41", expect: failed}
concurrency: 1
retries: 1
results: RESULTS
`

func TestRunRetriesAnEngineError(t *testing.T) {
	eng := newFake(t)
	eng.agent = answerAgent
	failed := false
	eng.startErr = func(spec sandbox.ContainerSpec) error {
		if spec.Labels[sandbox.LabelPhase] == "agent" && spec.TrialID == "answer__right__1" && !failed {
			failed = true
			return &sandbox.EngineError{Op: "create container", Err: errors.New("connection reset")}
		}
		return nil
	}
	rec := fakeRun(t, eng, context.Background(), fakeRequest(t, fakeSuite, suite.Options{}))
	assert.Equal(t, 0, rec.ExitCode, "%+v", rec.Trials)
	res, err := results.ReadResult(filepath.Join(rec.Dir, "answer__right__1", results.ResultFile))
	require.NoError(t, err)
	assert.Equal(t, grader.OutcomePassed, res.Outcome)
	assert.Equal(t, 2, res.Tries)
	wrong, err := results.ReadResult(filepath.Join(rec.Dir, "answer__wrong__1", results.ResultFile))
	require.NoError(t, err)
	assert.Equal(t, grader.OutcomeFailed, wrong.Outcome)
	assert.Equal(t, 1, wrong.Tries)
	require.NotEmpty(t, eng.reaped)
	assert.True(t, eng.reaped[0].OrphansOnly, "a run first reaps orphans")
}

// An agent container that stops under the agent is the agent's failure
// when it was stopped from within, and an infra_error (retried) when a
// client of the engine killed it.
func TestRunAgentContainerGone(t *testing.T) {
	tests := []struct {
		name      string
		killed    bool
		killedErr error
		outcome   grader.Outcome
		tries     int
		want      string // in the result's error or the agent phase's failure
	}{
		{"stopped from within", false, nil, grader.OutcomeFailed, 1, "the agent's container stopped during the agent phase"},
		{"killed through the engine", true, nil, grader.OutcomePassed, 2, ""},
		{"events unreadable", false, errors.New("engine down"), grader.OutcomePassed, 2, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng := newFake(t)
			var execs atomic.Int64
			eng.agent = func(ctx context.Context, spec sandbox.ContainerSpec, e sandbox.ExecSpec) (sandbox.ExecResult, error) {
				if execs.Add(1) == 1 {
					return sandbox.ExecResult{ExitCode: 137}, &sandbox.EngineError{Op: "exec", Err: sandbox.ErrContainerGone}
				}
				return answerAgent(ctx, spec, e)
			}
			eng.killed = func(string) (bool, error) { return tt.killed, tt.killedErr }
			rec := fakeRun(t, eng, context.Background(), fakeRequest(t, fakeSuite, suite.Options{Variants: []string{"right"}}))
			res, err := results.ReadResult(filepath.Join(rec.Dir, "answer__right__1", results.ResultFile))
			require.NoError(t, err)
			assert.Equal(t, tt.outcome, res.Outcome, res.Error)
			assert.Equal(t, tt.tries, res.Tries)
			if tt.want != "" {
				assert.Contains(t, res.AgentPhase.Failed, tt.want)
			}
		})
	}
}

func TestRunInfraErrorAfterRetries(t *testing.T) {
	eng := newFake(t)
	eng.startErr = func(spec sandbox.ContainerSpec) error {
		if spec.Labels[sandbox.LabelPhase] == "agent" {
			return &sandbox.EngineError{Op: "create container", Err: errors.New("no space left")}
		}
		return nil
	}
	rec := fakeRun(t, eng, context.Background(), fakeRequest(t, fakeSuite, suite.Options{Retries: 2, Variants: []string{"right"}}))
	assert.Equal(t, results.ExitInfra, rec.ExitCode)
	res, err := results.ReadResult(filepath.Join(rec.Dir, "answer__right__1", results.ResultFile))
	require.NoError(t, err)
	assert.Equal(t, grader.OutcomeInfraError, res.Outcome)
	assert.Equal(t, 3, res.Tries)
	assert.Contains(t, res.Error, "no space left")
	_, _, cached := results.CacheIndex{ResultsDir: rec.Config.Results}.Lookup(res.CacheKey)
	assert.False(t, cached, "an infra error is not cached")
}

func TestRunCachedOpensNoEngine(t *testing.T) {
	eng := newFake(t)
	eng.agent = answerAgent
	req := fakeRequest(t, fakeSuite, suite.Options{})
	first := fakeRun(t, eng, context.Background(), req)
	assert.Equal(t, 0, first.ExitCode)

	r := &Runner{Open: func(context.Context) (sandbox.Engine, error) {
		t.Error("a fully cached run opened the engine")
		return nil, errors.New("no engine")
	}}
	rec, err := r.Run(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, 0, rec.ExitCode)
	require.Len(t, rec.Trials, 2)
	for _, tr := range rec.Trials {
		assert.True(t, tr.Cached, tr.Trial)
	}
	assert.NotEqual(t, first.RunID, rec.RunID)
	for _, f := range []string{results.ResultFile, results.AgentLog, results.GraderLog, results.DiffFiles, results.EventsFile} {
		assert.FileExists(t, filepath.Join(rec.Dir, "answer__right__1", f))
	}
}

// An interrupted run writes no result for the trial it stopped, reaps its
// objects, and --resume finishes it.
func TestRunInterruptedThenResumed(t *testing.T) {
	eng := newFake(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	eng.agent = func(actx context.Context, spec sandbox.ContainerSpec, e sandbox.ExecSpec) (sandbox.ExecResult, error) {
		if spec.TrialID == "answer__wrong__1" {
			cancel()
			<-actx.Done()
			return sandbox.ExecResult{}, actx.Err()
		}
		return answerAgent(actx, spec, e)
	}
	req := fakeRequest(t, fakeSuite, suite.Options{})
	rec := fakeRun(t, eng, ctx, req)
	assert.Equal(t, results.StatusInterrupted, rec.Status)
	assert.Equal(t, results.ExitInterrupted, rec.ExitCode, "run.json says what the process exits with")
	assert.Equal(t, []string{"answer__wrong__1"}, rec.NotRun)
	assert.FileExists(t, filepath.Join(rec.Dir, "answer__right__1", results.ResultFile))
	assert.NoFileExists(t, filepath.Join(rec.Dir, "answer__wrong__1", results.ResultFile))
	var runReap bool
	for _, o := range eng.reaped {
		runReap = runReap || o.RunID == rec.RunID
	}
	assert.True(t, runReap, "an interrupted run reaps its own objects")

	// A corrupt result is reported and run again.
	writeTestFile(t, filepath.Join(rec.Dir, "answer__right__1", results.ResultFile), "{torn")
	eng2 := newFake(t)
	eng2.agent = answerAgent
	resume, err := PrepareResume(req.Config.Results, rec.RunID, suite.Options{NoCache: true})
	require.NoError(t, err)
	rec2 := fakeRun(t, eng2, context.Background(), resume)
	assert.Equal(t, rec.RunID, rec2.RunID)
	assert.Equal(t, results.StatusFinished, rec2.Status)
	assert.Equal(t, 0, rec2.ExitCode)
	assert.Len(t, rec2.Trials, 2)
	assert.Len(t, rec2.Resumed, 1)
}

func TestRunKeepsFinishedTrialsOnResume(t *testing.T) {
	eng := newFake(t)
	eng.agent = answerAgent
	req := fakeRequest(t, fakeSuite, suite.Options{})
	rec := fakeRun(t, eng, context.Background(), req)
	require.NoError(t, os.Remove(filepath.Join(rec.Dir, "answer__wrong__1", results.ResultFile)))

	eng2 := newFake(t)
	eng2.agent = answerAgent
	resume, err := PrepareResume(req.Config.Results, rec.RunID, suite.Options{NoCache: true})
	require.NoError(t, err)
	rec2 := fakeRun(t, eng2, context.Background(), resume)
	assert.Equal(t, 0, rec2.ExitCode)
	var agentStarts []string
	for _, c := range eng2.Containers() {
		if c.Phase() == "agent" {
			agentStarts = append(agentStarts, c.Spec.TrialID)
		}
	}
	assert.Equal(t, []string{"answer__wrong__1"}, agentStarts, "only the trial without a result runs")
}

func TestRunUsageErrorForAnEmptyVariant(t *testing.T) {
	path := writeSuite(t, "tasks: [FIXTURES/answer]\nvariants:\n  treatment: {}\nresults: RESULTS\n")
	_, err := Prepare(t.Context(), path, suite.Options{Cwd: filepath.Dir(path), Retries: -1})
	var ue *suite.UsageError
	require.ErrorAs(t, err, &ue)
	assert.Contains(t, err.Error(), "suite.yaml:3: variant treatment is empty")
}

// An invalid solution/deterministic.json refuses its task when the oracle
// would replay it.
func TestRunRefusesAnInvalidOracleScript(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(dir, "script"), os.DirFS(filepath.Join(fixturesDir, "script"))))
	script := filepath.Join(dir, "script", "solution", "deterministic.json")
	writeTestFile(t, script, `{"version": 1, "steps": [{"write": {"path": "../escape", "content": ""}}]}`)
	suiteFile := filepath.Join(dir, "s.yaml")
	writeTestFile(t, suiteFile, "tasks: [script]\nvariants: {o: {agent: oracle}}\n")
	req, err := Prepare(t.Context(), suiteFile, suite.Options{Cwd: dir, Retries: -1})
	require.NoError(t, err)
	assert.Empty(t, req.Tasks)
	require.Len(t, req.Refused, 1)
	assert.Equal(t, "script", req.Refused[0].ID)
	assert.Equal(t, script, req.Refused[0].File)
	assert.Contains(t, req.Refused[0].Refusal.String(), `deterministic.json: steps[0].write.path: "../escape" must stay in the work dir`)

	writeTestFile(t, suiteFile, "tasks: [script]\nvariants: {n: {agent: nop}}\n")
	req, err = Prepare(t.Context(), suiteFile, suite.Options{Cwd: dir, Retries: -1})
	require.NoError(t, err)
	assert.Empty(t, req.Refused, "no variant replays it")
}

// Deterministic scripts that commit or not, touch files in either order and
// create the artifact or not, judged by every assert kind; the verdicts and
// the evidence they rest on are in the result.
func TestRunJudgesSpecsOnRecordedEvidence(t *testing.T) {
	testdata, err := filepath.Abs("testdata")
	require.NoError(t, err)
	eng := newFake(t)
	suiteFile := strings.ReplaceAll(`
name: specs
tasks: [FIXTURES/answer]
variants:
  planned: {agent: deterministic, script: TESTDATA/scripts/planned.json, expect: passed}
  hasty: {agent: deterministic, script: TESTDATA/scripts/hasty.json, expect: passed}
  lazy: {agent: deterministic, script: TESTDATA/scripts/lazy.json, expect: failed}
specs: [TESTDATA/specs]
results: RESULTS
`, "TESTDATA", testdata)
	rec := fakeRun(t, eng, context.Background(), fakeRequest(t, suiteFile, suite.Options{}))
	assert.Equal(t, 0, rec.ExitCode, "%+v", rec.Trials)
	want := map[string]map[string]string{
		"planned": {"answer.commit": "pass", "answer.touches": "pass", "answer.plan-first": "pass", "answer.artifact": "pass", "answer.quality": "unknown"},
		"hasty":   {"answer.commit": "fail", "answer.touches": "pass", "answer.plan-first": "fail", "answer.artifact": "pass"},
		"lazy":    {"answer.commit": "fail", "answer.touches": "pass", "answer.plan-first": "fail", "answer.artifact": "fail"},
	}
	classes := map[string]grader.SpecOutcome{"planned": grader.SpecUnavailable, "hasty": grader.SpecWorkflowViolation, "lazy": grader.SpecProduct}
	for variant, specs := range want {
		res, err := results.ReadResult(filepath.Join(rec.Dir, "answer__"+variant+"__1", results.ResultFile))
		require.NoError(t, err)
		got := map[string]string{}
		for _, v := range res.Specs {
			got[v.SpecID] = v.Status
		}
		assert.Equal(t, specs, got, variant)
		assert.Equal(t, trial.SourceSteps, res.Evidence.Source, variant)
		assert.Equal(t, classes[variant], res.OutcomeClass, variant)
	}
	planned, err := results.ReadResult(filepath.Join(rec.Dir, "answer__planned__1", results.ResultFile))
	require.NoError(t, err)
	for _, v := range planned.Specs {
		if v.SpecID == "answer.plan-first" {
			require.Len(t, v.Evidence, 2, "the verdict carries the events it rests on")
			assert.Equal(t, "docs/plan.md", v.Evidence[0].Path)
		}
	}
	assert.Equal(t, "answer.txt\ndocs/plan.md\n", readFile(t, filepath.Join(rec.Dir, "answer__planned__1", results.DiffFiles)))
}

// A user who is not root gets the work dir back from the agent's container
// before the host reads it.
func TestRunHandsTheWorkDirBack(t *testing.T) {
	eng := newFake(t)
	eng.agent = answerAgent
	rec := fakeRunAs(t, eng, context.Background(), fakeRequest(t, fakeSuite, suite.Options{Variants: []string{"right"}}), sandbox.Owner{UID: 1000, GID: 1000})
	assert.Equal(t, 0, rec.ExitCode)
	assert.Contains(t, eng.handed, "agent /app 1000:1000")

	root := newFake(t)
	root.agent = answerAgent
	fakeRunAs(t, root, context.Background(), fakeRequest(t, fakeSuite, suite.Options{Variants: []string{"right"}}), sandbox.Owner{})
	for _, h := range root.handed {
		assert.NotContains(t, h, "agent", "root needs nothing handed back from the agent")
	}
}

func TestRunKeep(t *testing.T) {
	eng := newFake(t)
	eng.agent = answerAgent
	rec := fakeRun(t, eng, context.Background(), fakeRequest(t, fakeSuite, suite.Options{Variants: []string{"right"}, Keep: true}))
	assert.Equal(t, 0, rec.ExitCode)
	assert.NotContains(t, eng.removed, "agent", "--keep keeps the agent's container")
	assert.DirExists(t, filepath.Join(rec.Dir, workDirName, "answer__right__1", "workdir"), "and the work dir")

	plain := newFake(t)
	plain.agent = answerAgent
	rec = fakeRun(t, plain, context.Background(), fakeRequest(t, fakeSuite, suite.Options{Variants: []string{"right"}}))
	assert.Contains(t, plain.removed, "agent")
	assert.NoDirExists(t, filepath.Join(rec.Dir, workDirName))
}

// What the runner cannot do refuses the task, not the run: the task is
// among the request's refused tasks with the file, the field and the rule.
func TestPrepareRefusesWhatTheRunnerCannotDo(t *testing.T) {
	tests := []struct{ name, edit, file, content, field, want string }{
		{"allowlist without hosts", "[agent]\nnetwork_mode = \"allowlist\"\n", "", "", "[agent].network_mode", "an allowlist needs allowed_hosts"},
		{"gpus", "[environment]\ngpus = 1\n", "", "", "[environment].gpus", "GPUs are not supported"},
		{"tpu", "[environment]\ntpu = 1\n", "", "", "[environment].tpu", "TPUs are not supported"},
		{"windows", "[environment]\nos = \"windows\"\n", "", "", "[environment].os", "Windows tasks are not supported"},
		{"separate verifier without an image", "[verifier.environment]\ncpus = 1\n", "", "", "[verifier].environment_mode", "a separate verifier needs an image"},
		{"privileged compose service", "", "environment/docker-compose.yaml", "services: {db: {image: x:1, privileged: true}}\n",
			"services.db.privileged", `service "db": privileged: a privileged container can reach the host`},
		{"compose host port", "", "environment/docker-compose.yaml", "services: {db: {image: x:1, ports: [\"5432:5432\"]}}\n",
			"services.db.ports", "publishes host port 5432"},
		{"missing host variable", "[verifier.env]\nTOKEN = \"${FD_TEST_SURELY_UNSET_VAR}\"\n", "", "", "[verifier].env",
			"env key TOKEN: the host variable FD_TEST_SURELY_UNSET_VAR is not set"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			task := filepath.Join(dir, "harbor")
			require.NoError(t, os.CopyFS(task, os.DirFS(filepath.Join(fixturesDir, "harbor"))))
			if tc.edit != "" {
				toml := readFile(t, filepath.Join(task, "task.toml"))
				toml = strings.Replace(toml, "[agent]\n", "", 1)
				toml = strings.Replace(toml, "[environment]\n", "", 1)
				require.NoError(t, os.WriteFile(filepath.Join(task, "task.toml"), []byte(toml+"\n"+tc.edit), 0o644))
			}
			if tc.file != "" {
				writeTestFile(t, filepath.Join(task, tc.file), tc.content)
			}
			suiteFile := filepath.Join(dir, "s.yaml")
			writeTestFile(t, suiteFile, "tasks: [harbor]\nvariants: {o: {agent: oracle}}\n")
			req, err := Prepare(t.Context(), suiteFile, suite.Options{Cwd: dir, Retries: -1})
			require.NoError(t, err)
			assert.Empty(t, req.Tasks)
			require.Len(t, req.Refused, 1)
			r := req.Refused[0]
			file := tc.file
			if file == "" {
				file = "task.toml"
			}
			assert.Equal(t, filepath.Join(task, file), r.File)
			assert.Equal(t, tc.field, r.Field)
			assert.Contains(t, r.Rule, tc.want)

			_, err = PrepareVerify(t.Context(), []string{task}, suite.Options{Cwd: dir, Results: filepath.Join(dir, "results")}, VerifyOptions{})
			var re *RefusedError
			require.ErrorAs(t, err, &re, "task verify still refuses before anything runs")
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// An agent user who is not root is given the bind-mounted work dir before
// its first command, and the host gets it back after; the grader is told
// whose it was.
func TestRunGivesTheWorkDirToTheAgentsUser(t *testing.T) {
	dir := t.TempDir()
	task := filepath.Join(dir, "answer")
	require.NoError(t, os.CopyFS(task, os.DirFS(filepath.Join(fixturesDir, "answer"))))
	toml := readFile(t, filepath.Join(task, "task.toml"))
	writeTestFile(t, filepath.Join(task, "task.toml"), strings.Replace(toml, "[agent]\n", "[agent]\nuser = \"agent\"\n", 1))
	suiteFile := filepath.Join(dir, "s.yaml")
	writeTestFile(t, suiteFile, "tasks: [answer]\nvariants: {right: {agent: command, command: \"echo 42\"}}\nresults: results\n")
	testenv.Tool(t, "git")
	req, err := Prepare(t.Context(), suiteFile, suite.Options{Cwd: dir, Retries: -1})
	require.NoError(t, err)

	eng := newFake(t)
	var order []string
	eng.agent = func(ctx context.Context, spec sandbox.ContainerSpec, e sandbox.ExecSpec) (sandbox.ExecResult, error) {
		if len(e.Cmd) > 2 && e.Cmd[0] == "sh" {
			assert.Equal(t, grader.ChownCommand("agent", "/app"), e.Cmd)
			assert.Equal(t, "0", e.User, "given as root")
			order = append(order, "give")
			return sandbox.ExecResult{}, nil
		}
		assert.Equal(t, "agent", e.User)
		order = append(order, "agent")
		return answerAgent(ctx, spec, e)
	}
	rec := fakeRunAs(t, eng, context.Background(), req, sandbox.Owner{UID: 1000, GID: 1000})
	assert.Equal(t, 0, rec.ExitCode)
	assert.Equal(t, []string{"give", "agent"}, order)
	assert.Contains(t, eng.handed, "agent /app 1000:1000", "handed back to the host after the agent")
}

// buildAheadEngine notes when the second task's image is asked for.
type buildAheadEngine struct {
	*fakeEngine
	second     string
	secondSeen chan struct{}
	once       sync.Once
}

func (b *buildAheadEngine) EnsureImage(ctx context.Context, spec sandbox.BuildSpec) (sandbox.Image, error) {
	if spec.Name == b.second {
		b.once.Do(func() { close(b.secondSeen) })
	}
	return b.fakeEngine.EnsureImage(ctx, spec)
}

// A run builds the next task's image while the trials of the first run,
// even one at a time: the first task's agent waits until the second
// image is asked for, which without the build ahead would come only after
// it.
func TestRunBuildsAhead(t *testing.T) {
	abs, err := filepath.Abs(fixturesDir)
	require.NoError(t, err)
	dir := t.TempDir()
	for _, name := range []string{"first", "second"} {
		require.NoError(t, os.CopyFS(filepath.Join(dir, name), os.DirFS(filepath.Join(abs, "answer"))))
		toml := filepath.Join(dir, name, "task.toml")
		data, err := os.ReadFile(toml)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(toml, []byte(strings.Replace(string(data), "flightdeck-fixtures/answer", "flightdeck-fixtures/"+name, 1)), 0o644))
	}
	eng := &buildAheadEngine{fakeEngine: newFake(t), second: "second", secondSeen: make(chan struct{})}
	var early atomic.Bool
	eng.agent = func(ctx context.Context, spec sandbox.ContainerSpec, e sandbox.ExecSpec) (sandbox.ExecResult, error) {
		if strings.HasPrefix(spec.TrialID, "first__") {
			select {
			case <-eng.secondSeen:
				early.Store(true)
			case <-time.After(5 * time.Second):
			}
		}
		return answerAgent(ctx, spec, e)
	}
	req := fakeRequest(t, "tasks: ["+filepath.Join(dir, "first")+", "+filepath.Join(dir, "second")+"]\n"+
		"variants: {right: {agent: command, command: \"echo 42\"}}\nconcurrency: 1\nresults: RESULTS\n", suite.Options{})
	rec := fakeRun(t, eng, context.Background(), req)
	assert.Equal(t, 0, rec.ExitCode, "%+v", rec.Trials)
	assert.True(t, early.Load(), "the second task's image was asked for while the first task's trial ran")
}
