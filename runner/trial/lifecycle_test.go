package trial

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/testenv"
	"github.com/flightdeck/flightdeck/runner/agent"
	"github.com/flightdeck/flightdeck/runner/images"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/sandbox/sandboxtest"
	"github.com/flightdeck/flightdeck/tasks"
)

// The trial's lifecycle, driven through Env.Attempt on the fake engine:
// the tasks these tests write hold scripts of a few lines that fakeShell
// runs on the fake containers' files, so the code under test moves real
// files and reads real rewards.

// fakeShell stands in for bash in a fake container. It runs the scripts of
// the tasks these tests write, each line one of:
//
//	echo V > P   writes V into P
//	exit N       exits N
//	check P V    a verifier's check that P holds V
//	bash P       runs the script P
//	ask Q        asks Q through the question channel, then waits for the
//	             agent's phase to end
//
// A script with checks is a verifier: it writes reward 1 when every check
// held, else 0, into its reward dir. Relative paths are the exec's work
// dir's. Grading's set-up commands (rm -rf, the live grade's making of
// /tests and the reward dir anew) act on the container's files; any other
// command does nothing and exits 0.
type fakeShell struct {
	// task is the task's dir on the host: a separate verifier's image
	// holds its tests/, which the fake's images do not.
	task string
}

func (sh *fakeShell) run(ctx context.Context, c *sandboxtest.Container, e sandbox.ExecSpec) (sandbox.ExecResult, error) {
	if c.Spec.HostPID {
		return fakeInspector(ctx, c, e)
	}
	cmd := e.Cmd
	switch {
	case len(cmd) == 2 && cmd[0] == "bash":
		return sh.script(ctx, c, e, resolve(e.Workdir, cmd[1]))
	case len(cmd) == 3 && cmd[0] == "bash" && cmd[1] == "-c" && strings.Contains(cmd[2], "/tests/test.sh"):
		// Harbor's verifier command.
		return sh.script(ctx, c, e, "/tests/test.sh")
	case len(cmd) == 3 && cmd[0] == "bash" && cmd[1] == "-c":
		return sh.lines(ctx, c, e, cmd[2])
	case len(cmd) == 6 && cmd[0] == "bash" && cmd[3] == "healthcheck":
		// A healthcheck: its command under Harbor's timeout wrapper.
		return sh.lines(ctx, c, e, cmd[4])
	case len(cmd) == 6 && cmd[0] == "sh" && strings.Contains(cmd[2], "rm -rf"):
		for _, d := range cmd[4:] {
			if err := os.RemoveAll(c.Path(d)); err != nil {
				return sandbox.ExecResult{}, err
			}
			if err := os.MkdirAll(c.Path(d), 0o755); err != nil {
				return sandbox.ExecResult{}, err
			}
		}
	case len(cmd) > 2 && cmd[0] == "rm":
		return sandbox.ExecResult{}, os.RemoveAll(c.Path(cmd[len(cmd)-1]))
	}
	return sandbox.ExecResult{}, nil
}

// script runs the script at p in the container; a separate verifier's
// /tests/test.sh is the task's.
func (sh *fakeShell) script(ctx context.Context, c *sandboxtest.Container, e sandbox.ExecSpec, p string) (sandbox.ExecResult, error) {
	b, err := os.ReadFile(c.Path(p))
	if os.IsNotExist(err) && p == "/tests/test.sh" {
		b, err = os.ReadFile(filepath.Join(sh.task, "tests", "test.sh"))
	}
	if os.IsNotExist(err) {
		return sandbox.ExecResult{ExitCode: 127}, nil
	}
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	return sh.lines(ctx, c, e, string(b))
}

func (sh *fakeShell) lines(ctx context.Context, c *sandboxtest.Container, e sandbox.ExecSpec, script string) (sandbox.ExecResult, error) {
	checks, held := 0, 0
	for _, line := range strings.Split(script, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0 || strings.HasPrefix(f[0], "#"):
		case f[0] == "echo" && len(f) == 4 && f[2] == ">":
			if err := writeIn(c.Path(resolve(e.Workdir, f[3])), f[1]+"\n"); err != nil {
				return sandbox.ExecResult{}, err
			}
		case f[0] == "exit" && len(f) == 2:
			n, err := strconv.Atoi(f[1])
			return sandbox.ExecResult{ExitCode: n}, err
		case f[0] == "check" && len(f) == 3:
			checks++
			if b, err := os.ReadFile(c.Path(resolve(e.Workdir, f[1]))); err == nil && strings.TrimSpace(string(b)) == f[2] {
				held++
			}
		case f[0] == "bash" && len(f) == 2:
			if res, err := sh.script(ctx, c, e, resolve(e.Workdir, f[1])); err != nil || res.ExitCode != 0 {
				return res, err
			}
		case f[0] == "ask":
			return askAndWait(ctx, c, strings.Join(f[1:], " "))
		default:
			return sandbox.ExecResult{ExitCode: 127}, nil
		}
	}
	if checks == 0 {
		return sandbox.ExecResult{}, nil
	}
	reward := "0"
	if held == checks {
		reward = "1"
	}
	dir := grader.HarborVerifierDir
	for _, kv := range e.Env {
		if v, ok := strings.CutPrefix(kv, "FLIGHTDECK_REWARD_DIR="); ok {
			dir = v
		}
	}
	return sandbox.ExecResult{}, writeIn(c.Path(path.Join(dir, "reward.txt")), reward+"\n")
}

// askAndWait asks question as the protocol says (a temporary name,
// renamed), then waits until the runner ends the agent's phase.
func askAndWait(ctx context.Context, c *sandboxtest.Container, question string) (sandbox.ExecResult, error) {
	dir := c.Path(agent.AskDir)
	tmp := filepath.Join(dir, ".1.tmp")
	if err := os.WriteFile(tmp, []byte(question), 0o644); err != nil {
		return sandbox.ExecResult{}, err
	}
	if err := os.Rename(tmp, filepath.Join(dir, "1.q")); err != nil {
		return sandbox.ExecResult{}, err
	}
	select {
	case <-ctx.Done():
		return sandbox.ExecResult{}, ctx.Err()
	case <-time.After(time.Minute):
		// Not a timing: the bound of a test that would otherwise hang.
		return sandbox.ExecResult{ExitCode: 1}, nil
	}
}

func resolve(workdir, p string) string {
	if path.IsAbs(p) {
		return p
	}
	return path.Join("/", workdir, p)
}

func writeIn(p, content string) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(content), 0o644)
}

// fakeInspector answers the run's inspector as it answers for a container
// where nothing changed outside the work dir and no process was left:
// leftovers.py holds nothing, inspect.sh lists nothing and finds the
// container settled.
func fakeInspector(_ context.Context, _ *sandboxtest.Container, e sandbox.ExecSpec) (sandbox.ExecResult, error) {
	var out string
	switch {
	case e.Cmd[0] == "python3":
		out = `{"held": []}`
	case len(e.Cmd) > 5 && e.Cmd[3] == "inspect.sh":
		if e.Cmd[5] == "settle" {
			out = "settled 0\n"
		}
	default:
		return sandbox.ExecResult{ExitCode: 127}, nil
	}
	return sandbox.ExecResult{}, os.WriteFile(e.StdoutPath, []byte(out), 0o644)
}

// recorder is a Reporter that keeps the notes.
type recorder struct {
	mu    sync.Mutex
	notes []string
}

func (r *recorder) Phase(*suite.Trial, string) {}

func (r *recorder) Note(t *suite.Trial, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, t.ID+": "+msg)
}

func (r *recorder) line(msg string) { r.Note(&suite.Trial{ID: "images"}, msg) }

func (r *recorder) all() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.notes, "\n")
}

// lifecycle is one run's Env on a fake engine whose commands fakeShell
// runs.
type lifecycle struct {
	eng *sandboxtest.Engine
	env *Env
	rep *recorder
	sh  *fakeShell
}

func newLifecycle(t *testing.T) *lifecycle {
	t.Helper()
	testenv.Tool(t, "git")
	root := t.TempDir()
	eng := sandboxtest.New(filepath.Join(root, "engine"))
	sh := &fakeShell{}
	eng.Run = sh.run
	rep := &recorder{}
	run := filepath.Join(root, "run")
	env := &Env{
		Engine: eng, RunID: "run-1", Dir: run, Scratch: filepath.Join(run, ".work"),
		Images:    images.New(eng, nil, filepath.Join(run, "builds"), 1, rep.line),
		Seeds:     NewSeeds(filepath.Join(run, ".work", "seeds")),
		Inspector: NewInspector(eng, "run-1"),
		Report:    rep,
	}
	return &lifecycle{eng: eng, env: env, rep: rep, sh: sh}
}

// attempt runs the first try of the trial of the task at dir by variant v.
func (l *lifecycle) attempt(t *testing.T, dir string, v suite.Variant) *results.Result {
	t.Helper()
	task, err := tasks.Load(dir, tasks.LoadOptions{Local: true})
	require.NoError(t, err)
	l.sh.task = task.Dir
	if v.Name == "" {
		v.Name = v.Agent
	}
	tr := &suite.Trial{ID: suite.TrialID(task.ID, v.Name, 1), Task: task, Variant: v, Attempt: 1}
	res, err := l.env.Attempt(t.Context(), tr, 1)
	require.NoError(t, err)
	require.NotNil(t, res)
	return res
}

// oracleAndNop runs the oracle's and the empty attempt's trials of the
// task at dir, as a run does, and checks that nothing is left running
// once the run's inspector is removed.
func (l *lifecycle) oracleAndNop(t *testing.T, dir string) map[string]*results.Result {
	t.Helper()
	out := map[string]*results.Result{}
	for _, a := range []string{suite.AgentOracle, suite.AgentNop} {
		out[a] = l.attempt(t, dir, suite.Variant{Agent: a})
	}
	l.assertNoLeftovers(t)
	return out
}

func (l *lifecycle) assertNoLeftovers(t *testing.T) {
	t.Helper()
	require.NoError(t, l.env.Inspector.Remove(t.Context()))
	var live []string
	for _, c := range l.eng.Live() {
		live = append(live, c.ID+" "+c.Phase())
	}
	assert.Empty(t, live, "every container is removed")
}

// containers are the fake's containers of the phase ("agent", "grade", …).
func (l *lifecycle) containers(phase string) []*sandboxtest.Container {
	var out []*sandboxtest.Container
	for _, c := range l.eng.Containers() {
		if c.Phase() == phase {
			out = append(out, c)
		}
	}
	return out
}

// countCalls counts the engine's calls of method.
func (l *lifecycle) countCalls(method string) int {
	n := 0
	for _, c := range l.eng.Calls() {
		if c == method || strings.HasPrefix(c, method+" ") {
			n++
		}
	}
	return n
}

// writeTask writes a Harbor task named name under root: solve.sh writes 42
// into /app/answer.txt, test.sh checks it. extra is appended to task.toml;
// files (relative path → content) are written over the task's.
func writeTask(t *testing.T, root, name, extra string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(root, name)
	all := map[string]string{
		"task.toml": "schema_version = \"1.4\"\n\n[task]\nname = \"flightdeck-tests/" + name + "\"\n\n" +
			"[verifier]\ntimeout_sec = 60.0\n\n[agent]\ntimeout_sec = 60.0\n" + extra,
		"instruction.md":         "Write 42 into /app/answer.txt.\n",
		"environment/Dockerfile": "FROM " + images.Fallback + "\nWORKDIR /app\n",
		"tests/test.sh":          "#!/bin/bash\ncheck /app/answer.txt 42\n",
		"solution/solve.sh":      "#!/bin/bash\necho 42 > /app/answer.txt\n",
	}
	for rel, content := range files {
		all[rel] = content
	}
	writeTree(t, dir, all)
	return dir
}

// writeNativeTask writes writeTask's task as a flightdeck-native one: its
// [flightdeck.grader] runs tests/test.sh with the reward dir in the
// environment. extra goes after the grader's table.
func writeNativeTask(t *testing.T, root, name, extra string) string {
	t.Helper()
	dir := writeTask(t, root, name, "", nil)
	digest, err := tasks.FilesDigest(dir)
	require.NoError(t, err)
	toml := "schema_version = \"1.4\"\n\n[task]\nname = \"flightdeck-tests/" + name + "\"\n\n" +
		"[verifier]\ntimeout_sec = 60.0\n\n[agent]\ntimeout_sec = 60.0\n\n" +
		"[flightdeck.grader]\ncommand = \"bash tests/test.sh\"\nfiles_digest = \"" + digest + "\"\n" + extra
	writeTree(t, dir, map[string]string{"task.toml": toml})
	return dir
}

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o755))
	}
}

// twoSteps are the [[steps]] one and two; step two's test checks
// /app/two.txt, which step two's solution writes.
const twoSteps = "\n[[steps]]\nname = \"one\"\n\n[[steps]]\nname = \"two\"\n[steps.verifier]\ntimeout_sec = 5.0\n"

var twoStepFiles = map[string]string{
	"steps/one/instruction.md":    "One.\n",
	"steps/two/instruction.md":    "Two.\n",
	"steps/two/tests/test.sh":     "#!/bin/bash\ncheck /app/two.txt 2\n",
	"steps/two/solution/solve.sh": "#!/bin/bash\necho 2 > /app/two.txt\n",
}

// phases are the result's phases in order, "name" or "name:step".
func phases(r *results.Result) []string {
	var out []string
	for _, p := range r.Phases {
		if p.Step != "" {
			out = append(out, p.Name+":"+p.Step)
		} else {
			out = append(out, p.Name)
		}
	}
	return out
}

func stepNames(r *results.Result) []string {
	var out []string
	for _, s := range r.Steps {
		out = append(out, s.Name)
	}
	return out
}

func reward(r *results.Result) string {
	if r.Reward == nil {
		return "none"
	}
	return fmt.Sprint(*r.Reward)
}

// The oracle passes and the empty attempt fails, in Harbor's one container
// graded live, and in the native model graded fresh; each phase is
// recorded in order.
func TestAttemptOracleAndNop(t *testing.T) {
	harborPhases := []string{PhaseImage, PhaseWorkdir, PhaseAgent, PhaseInspect, PhaseEvidence, PhaseGrade, PhaseResult}
	nativePhases := []string{PhaseImage, PhaseWorkdir, PhaseAgent, PhaseEvidence, PhaseGrade, PhaseResult}
	tests := []struct {
		name   string
		write  func(t *testing.T, root string) string
		mode   string
		native bool
		phases []string
		grades int // grading containers, of both trials
	}{
		// Graded live, in the agent's container.
		{"harbor", func(t *testing.T, root string) string { return writeTask(t, root, "answer", "", nil) }, GradeLive, false, harborPhases, 0},
		// Graded in a fresh container of the task's image.
		{"native", func(t *testing.T, root string) string { return writeNativeTask(t, root, "answer", "") }, GradeFresh, true, nativePhases, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := newLifecycle(t)
			res := l.oracleAndNop(t, tc.write(t, t.TempDir()))
			for variant, want := range map[string]grader.Outcome{"oracle": grader.OutcomePassed, "nop": grader.OutcomeFailed} {
				r := res[variant]
				assert.Equal(t, want, r.Outcome, "%s: %s", variant, r.Error)
				assert.Equal(t, tc.mode, r.GradePhase.Mode, variant)
				assert.Equal(t, tc.native, r.Native, variant)
				assert.Equal(t, tc.phases, phases(r), variant)
				assert.Equal(t, "/app", r.WorkDir, variant)
				assert.Empty(t, r.Steps, "a single-step task records no steps")
			}
			assert.Equal(t, "1", reward(res["oracle"]))
			assert.Equal(t, "0", reward(res["nop"]))
			assert.Equal(t, []string{"answer.txt"}, evidenceFiles(t, l, res["oracle"]), "the oracle's change is the evidence")
			assert.Len(t, l.containers("grade"), tc.grades)
		})
	}
}

// evidenceFiles are the files the trial's evidence says the agent changed
// (diff.files).
func evidenceFiles(t *testing.T, l *lifecycle, r *results.Result) []string {
	t.Helper()
	files := strings.Fields(readFile(t, filepath.Join(l.env.Dir, r.Trial, results.DiffFiles)))
	require.Len(t, files, r.Evidence.DiffFiles, "result.json's count of diff.files")
	return files
}

// Each step runs its agent and is verified in turn in the one container,
// with the step's tests over the task's and the step's solution for the
// oracle; each phase of a step carries its name, and the trial's reward
// is the steps' mean.
func TestAttemptSteps(t *testing.T) {
	dir := writeTask(t, t.TempDir(), "steps", twoSteps, twoStepFiles)
	tests := []struct {
		variant suite.Variant
		outcome grader.Outcome
		rewards []string // per step
		reward  string
	}{
		{suite.Variant{Agent: suite.AgentOracle}, grader.OutcomePassed, []string{"1", "1"}, "1"},
		{suite.Variant{Agent: suite.AgentNop}, grader.OutcomeFailed, []string{"0", "0"}, "0"},
		// The command does step one's work at every step.
		{suite.Variant{Name: "half", Agent: suite.AgentCommand, Command: "echo 42 > /app/answer.txt"}, grader.OutcomeFailed, []string{"1", "0"}, "0.5"},
	}
	l := newLifecycle(t)
	for _, tc := range tests {
		r := l.attempt(t, dir, tc.variant)
		name := tc.variant.Agent
		assert.Equal(t, tc.outcome, r.Outcome, "%s: %s", name, r.Error)
		assert.Equal(t, tc.reward, reward(r), name)
		assert.Equal(t, "steps (mean)", r.RewardSource, name)
		assert.Equal(t, GradeLive, r.GradePhase.Mode, name)
		require.Equal(t, []string{"one", "two"}, stepNames(r), name)
		for i, s := range r.Steps {
			got := "none"
			if s.Reward != nil {
				got = fmt.Sprint(*s.Reward)
			}
			assert.Equal(t, tc.rewards[i], got, "%s: step %s", name, s.Name)
			assert.Empty(t, s.Error, name)
			assert.FileExists(t, filepath.Join(l.env.Dir, r.Trial, StepsDir, s.Name, "verifier", "reward.txt"))
			assert.FileExists(t, filepath.Join(l.env.Dir, r.Trial, StepsDir, s.Name, results.AgentLog))
		}
		assert.Equal(t, []string{
			PhaseImage, PhaseWorkdir,
			"agent:one", "inspect:one", "evidence:one", "grade:one",
			"agent:two", "inspect:two", "evidence:two", "grade:two",
			PhaseResult,
		}, phases(r), name)
	}
	assert.Len(t, l.containers("agent"), 3, "one container per trial holds every step")
	assert.Empty(t, l.containers("grade"), "every step is graded live")
	l.assertNoLeftovers(t)
}

// A step whose setup.sh fails is not graded and ends the steps; so does a
// step whose reward falls below its min_reward. The step says why.
func TestAttemptStepsEnd(t *testing.T) {
	three := "\n[[steps]]\nname = \"one\"\n\n[[steps]]\nname = \"two\"\n\n[[steps]]\nname = \"three\"\n"
	files := map[string]string{
		"steps/one/instruction.md": "One.\n", "steps/two/instruction.md": "Two.\n", "steps/three/instruction.md": "Three.\n",
	}
	tests := []struct {
		name    string
		extra   string // after step one's table
		files   map[string]string
		variant string
		steps   []string
		err     string // the last step's, when its setup failed
		outcome grader.Outcome
		reward  string
	}{
		// The trial's reward is the mean over the graded steps.
		{name: "setup fails", files: map[string]string{"steps/two/workdir/setup.sh": "#!/bin/bash\nexit 3\n"},
			variant: suite.AgentOracle, steps: []string{"one", "two"},
			err: "setup.sh exited 3 (steps/two/setup.log)", outcome: grader.OutcomePassed, reward: "1"},
		// No step was graded: no reward, and the oracle's trial is the
		// task's defect.
		{name: "first setup fails", files: map[string]string{"steps/one/workdir/setup.sh": "#!/bin/bash\nexit 3\n"},
			variant: suite.AgentOracle, steps: []string{"one"},
			err: "setup.sh exited 3 (steps/one/setup.log)", outcome: grader.OutcomeTaskError, reward: "none"},
		{name: "below min_reward", extra: "min_reward = 1.0\n",
			variant: suite.AgentNop, steps: []string{"one"}, outcome: grader.OutcomeFailed, reward: "0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			steps := strings.Replace(three, "name = \"one\"\n", "name = \"one\"\n"+tc.extra, 1)
			all := map[string]string{}
			for _, m := range []map[string]string{files, tc.files} {
				for k, v := range m {
					all[k] = v
				}
			}
			l := newLifecycle(t)
			r := l.attempt(t, writeTask(t, t.TempDir(), "ends", steps, all), suite.Variant{Agent: tc.variant})
			assert.Equal(t, tc.outcome, r.Outcome, r.Error)
			assert.Equal(t, tc.reward, reward(r))
			require.Equal(t, tc.steps, stepNames(r))
			last := r.Steps[len(r.Steps)-1]
			if tc.err != "" {
				assert.Equal(t, tc.err, last.Error)
				assert.Nil(t, last.Reward, "a step whose setup failed is not graded")
				assert.NoFileExists(t, filepath.Join(l.env.Dir, r.Trial, StepsDir, last.Name, results.AgentLog), "its agent does not run")
				assert.NoFileExists(t, filepath.Join(l.env.Dir, r.Trial, StepsDir, last.Name, "verifier", "reward.txt"))
			} else {
				assert.Equal(t, "reward = 0 is below its min_reward 1; no later step runs", last.Error)
			}
			if tc.reward == "none" {
				require.NotNil(t, r.RewardError)
				assert.Contains(t, r.RewardError.Detail, "step one was not graded")
				assert.NotContains(t, r.RewardError.Detail, ": :", "no empty file in the detail")
				// The trial's reason is the setup's failure, not a
				// verifier that never ran.
				assert.Equal(t, "task error: step one was not graded: setup.sh exited 3 (steps/one/setup.log)", r.Error)
			}
			for _, p := range r.Phases {
				assert.True(t, p.Step == "" || slices.Contains(tc.steps, p.Step), "no later step runs: %s:%s", p.Name, p.Step)
			}
			assert.NoDirExists(t, filepath.Join(l.env.Dir, r.Trial, StepsDir, "three"))
			assert.Contains(t, l.rep.all(), "no later step runs")
			l.assertNoLeftovers(t)
		})
	}
}

// grading: snapshot grades a single-step task in a fresh container of a
// snapshot of the agent's, which is removed after; a multi-step task's
// steps are graded live whatever the variant says.
func TestAttemptSnapshotGrading(t *testing.T) {
	snapshot := suite.Variant{Name: "snap", Agent: suite.AgentOracle, Grading: suite.GradingSnapshot}
	t.Run("single step", func(t *testing.T) {
		l := newLifecycle(t)
		r := l.attempt(t, writeTask(t, t.TempDir(), "snap", "", nil), snapshot)
		assert.Equal(t, grader.OutcomePassed, r.Outcome, r.Error)
		assert.Equal(t, GradeSnapshot, r.GradePhase.Mode)
		grades := l.containers("grade")
		require.Len(t, grades, 1)
		assert.True(t, strings.HasPrefix(grades[0].Spec.Image, "sha256:snapshot"), "graded from the snapshot: %s", grades[0].Spec.Image)
		assert.Equal(t, "42\n", readFile(t, grades[0].Path("/app/answer.txt")), "the snapshot holds what the agent left")
		assert.Equal(t, 1, l.countCalls("Commit"))
		assert.Equal(t, 1, l.countCalls("RemoveImage"), "the snapshot is removed with the trial")
		l.assertNoLeftovers(t)
	})
	t.Run("steps", func(t *testing.T) {
		l := newLifecycle(t)
		r := l.attempt(t, writeTask(t, t.TempDir(), "snapsteps", twoSteps, twoStepFiles), snapshot)
		assert.Equal(t, grader.OutcomePassed, r.Outcome, r.Error)
		assert.Equal(t, GradeLive, r.GradePhase.Mode)
		assert.Zero(t, l.countCalls("Commit"), "no snapshot")
		assert.Empty(t, l.containers("grade"))
		assert.Contains(t, l.rep.all(), "a multi-step task is graded live")
		l.assertNoLeftovers(t)
	})
}

// A native task's agent that asks what the task does not answer ends its
// phase at once: the trial is not graded, and the question is recorded.
func TestAttemptNeedsInput(t *testing.T) {
	l := newLifecycle(t)
	dir := writeNativeTask(t, t.TempDir(), "asks", "")
	r := l.attempt(t, dir, suite.Variant{Name: "asker", Agent: suite.AgentCommand, Command: "ask which date format?"})
	assert.Equal(t, grader.OutcomeNeedsInput, r.Outcome, r.Error)
	assert.Equal(t, grader.SpecNeedsInput, r.OutcomeClass)
	require.NotNil(t, r.NeedsInput)
	assert.Equal(t, "which date format?", r.NeedsInput.Question)
	assert.Contains(t, r.NeedsInput.Reason, "answers no questions")
	assert.Contains(t, r.Error, `the agent asked "which date format?"`)
	assert.Nil(t, r.Reward)
	assert.Equal(t, []string{PhaseImage, PhaseWorkdir, PhaseAgent, PhaseEvidence, PhaseResult}, phases(r), "not graded")
	assert.Empty(t, l.containers("grade"))
	assert.Empty(t, r.GradePhase.Mode)
	l.assertNoLeftovers(t)
}

// A separate verifier grades in a container of its own, built from
// tests/, with the task's artifacts copied in; the collect commands run in
// the agent's container first.
func TestAttemptSeparateVerifier(t *testing.T) {
	root := t.TempDir()
	dir := writeTask(t, root, "separate",
		"\n[[verifier.collect]]\ncommand = \"echo collected > /logs/artifacts/collected.txt\"\ntimeout_sec = 5.0\n",
		map[string]string{"tests/Dockerfile": "FROM " + images.Fallback + "\nCOPY test.sh /tests/test.sh\n"})
	toml := readFile(t, filepath.Join(dir, "task.toml"))
	toml = strings.Replace(toml, "schema_version = \"1.4\"\n", "schema_version = \"1.4\"\nartifacts = [\"/app/answer.txt\"]\n", 1)
	toml = strings.Replace(toml, "[verifier]\n", "[verifier]\nenvironment_mode = \"separate\"\n", 1)
	writeTree(t, dir, map[string]string{"task.toml": toml})
	l := newLifecycle(t)
	var mu sync.Mutex
	var built []string
	l.eng.Build = func(spec sandbox.BuildSpec) (sandbox.Image, error) {
		mu.Lock()
		defer mu.Unlock()
		built = append(built, filepath.Base(spec.ContextDir))
		return sandbox.Image{Ref: "flightdeck/" + spec.Name + ":fake", ID: "sha256:" + spec.Name}, nil
	}
	res := l.oracleAndNop(t, dir)
	assertPassFail(t, res)
	for _, r := range res {
		assert.Equal(t, GradeSeparate, r.GradePhase.Mode)
		assert.Nil(t, r.TamperCheck, "a separate verifier's task is not inspected")
		assert.FileExists(t, filepath.Join(l.env.Dir, r.Trial, "logs", "artifacts", "collected.txt"))
	}
	assert.Contains(t, built, "tests", "the verifier's image is built from tests/")
	grades := l.containers("grade")
	require.Len(t, grades, 2, "one verifier container per trial")
	withAnswer := 0
	for _, c := range grades {
		assert.Contains(t, c.Spec.Image, "verifier", "the verifier's own image")
		if _, err := os.Stat(c.Path("/app/answer.txt")); err == nil {
			withAnswer++
		}
	}
	assert.Equal(t, 1, withAnswer, "the oracle's artifact is copied in; the nop left none")
	var collected []string // the phase of the container each collect command ran in
	for _, c := range l.eng.Containers() {
		for _, e := range c.Execs {
			if strings.Contains(strings.Join(e.Cmd, " "), "collected.txt") {
				collected = append(collected, c.Phase())
			}
		}
	}
	assert.Equal(t, []string{"agent", "agent"}, collected, "once per trial, in the agent's container")
	for _, c := range l.containers("agent") {
		assert.False(t, c.Running, "the agent's container is stopped before the separate verifier")
	}
}

// A separate verifier for each step of a multi-step task: each step's
// grade runs in a verifier container of its own.
func TestAttemptStepsSeparateVerifier(t *testing.T) {
	dir := writeTask(t, t.TempDir(), "stepsep", twoSteps, twoStepFiles)
	toml := readFile(t, filepath.Join(dir, "task.toml"))
	toml = strings.Replace(toml, "schema_version = \"1.4\"\n", "schema_version = \"1.4\"\nartifacts = [\"/app/answer.txt\", \"/app/two.txt\"]\n", 1)
	toml = strings.Replace(toml, "[verifier]\n", "[verifier]\nenvironment_mode = \"separate\"\n", 1)
	writeTree(t, dir, map[string]string{"task.toml": toml, "tests/Dockerfile": "FROM " + images.Fallback + "\nCOPY test.sh /tests/test.sh\n",
		"steps/two/tests/Dockerfile": "FROM " + images.Fallback + "\nCOPY test.sh /tests/test.sh\n"})
	l := newLifecycle(t)
	res := l.oracleAndNop(t, dir)
	assertPassFail(t, res)
	assert.Len(t, l.containers("grade"), 4, "a verifier container per step and trial")
	for _, r := range res {
		assert.Equal(t, []string{"one", "two"}, stepNames(r))
		assert.Equal(t, GradeSeparate, r.GradePhase.Mode)
		assert.Nil(t, r.TamperCheck, "nothing is inspected when every step has its own verifier")
	}
}

func assertPassFail(t *testing.T, res map[string]*results.Result) {
	t.Helper()
	assert.Equal(t, grader.OutcomePassed, res["oracle"].Outcome, "oracle: %s", res["oracle"].Error)
	assert.Equal(t, grader.OutcomeFailed, res["nop"].Outcome, "nop: %s", res["nop"].Error)
}

// A compose task's services start before main, on the trial's own network,
// with its named volumes, and everything is removed after.
func TestAttemptCompose(t *testing.T) {
	dir := writeTask(t, t.TempDir(), "compose", "", map[string]string{"environment/docker-compose.yaml": `services:
  main:
    depends_on: [store]
    environment:
      STORE_URL: http://store:8080
  store:
    image: ` + images.Fallback + `
    command: ["sleep", "infinity"]
    volumes:
      - storedata:/data
volumes:
  storedata:
`})
	l := newLifecycle(t)
	assertPassFail(t, l.oracleAndNop(t, dir))
	for _, call := range []string{"CreateNetwork", "CreateVolume", "RemoveNetwork", "RemoveVolume"} {
		assert.Equal(t, 2, l.countCalls(call), "%s once per trial", call)
	}
	var stores, mains int
	for _, c := range l.eng.Containers() {
		if c.Spec.Service == nil {
			continue
		}
		switch {
		case slices.Contains(c.Spec.Service.Aliases, "store"):
			stores++
			assert.Equal(t, []string{"sleep", "infinity"}, c.Spec.Service.Cmd)
		case slices.Contains(c.Spec.Service.Aliases, "main"):
			mains++
			assert.Contains(t, c.Spec.Env, "STORE_URL=http://store:8080", "main gets its compose environment")
		}
	}
	assert.Equal(t, 2, stores, "one store per trial")
	assert.Equal(t, 2, mains, "one main per trial")
}

// depends_on conditions: main starts once a service with a healthcheck is
// healthy; a service that never gets healthy fails the trial, naming it.
func TestAttemptComposeHealth(t *testing.T) {
	compose := `services:
  main:
    depends_on:
      store: {condition: service_healthy}
  store:
    image: ` + images.Fallback + `
    command: ["sleep", "infinity"]
    healthcheck:
      test: ["CMD", "true"]
      interval: 1s
      retries: 1
`
	for _, tc := range []struct {
		name, health string
		want         map[string]grader.Outcome
	}{
		{"healthy", "healthy", map[string]grader.Outcome{"oracle": grader.OutcomePassed, "nop": grader.OutcomeFailed}},
		{"unhealthy", "unhealthy", map[string]grader.Outcome{"oracle": grader.OutcomeInfraError, "nop": grader.OutcomeInfraError}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeTask(t, t.TempDir(), "health", "", map[string]string{"environment/docker-compose.yaml": compose})
			l := newLifecycle(t)
			l.eng.Started = func(c *sandboxtest.Container) {
				if c.Spec.Service != nil && slices.Contains(c.Spec.Service.Aliases, "store") {
					c.Health = tc.health
				}
			}
			res := l.oracleAndNop(t, dir)
			for variant, want := range tc.want {
				assert.Equal(t, want, res[variant].Outcome, "%s: %s", variant, res[variant].Error)
				if want == grader.OutcomeInfraError {
					assert.Contains(t, res[variant].Error, "store")
				}
			}
		})
	}
}

// A healthcheck that never passes fails the trial naming the healthcheck
// (the container it ran in is the trial's, known by then), and the
// container is removed.
func TestAttemptHealthcheckFails(t *testing.T) {
	dir := writeTask(t, t.TempDir(), "unhealthy", "\n[environment.healthcheck]\ncommand = \"exit 3\"\ninterval_sec = 0.1\nretries = 2\n", nil)
	l := newLifecycle(t)
	for variant, r := range l.oracleAndNop(t, dir) {
		assert.Equal(t, grader.OutcomeInfraError, r.Outcome, variant)
		assert.Contains(t, r.Error, `healthcheck "exit 3" failed`, variant)
		assert.NotContains(t, r.Error, "inspect container", variant)
		require.NotEmpty(t, r.Phases, variant)
		agentPhase := r.Phases[len(r.Phases)-1]
		assert.Equal(t, PhaseAgent, agentPhase.Name, "the trial ends in its agent phase")
		assert.Contains(t, agentPhase.Error, "healthcheck", variant)
	}
}
