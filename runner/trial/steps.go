package trial

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/hostenv"
	"github.com/flightdeck/flightdeck/runner/agent"
	"github.com/flightdeck/flightdeck/runner/harbor"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/tasks"
)

// A multi-step task ([[steps]]) runs as Harbor runs it, in the trial's one
// container: for each step in order, its workdir/ is copied into the work
// dir and its setup.sh run (a failing setup ends the trial's steps), the
// agent gets the step's instruction (the oracle runs the step's solution/,
// else the task's), and the step is graded live with /tests made anew from
// the task's tests/ and the step's tests/ over it. A step whose rewards
// fall below its min_reward ends the steps. The trial's reward is the
// steps' by the task's multi_step_reward_strategy: per key, the mean over
// the graded steps (a key a step did not write counts 0), or the last
// graded step's. Each step's agent.log, grader.log and verifier/ are kept
// in the trial's steps/<name>/; the evidence is what the last agent left.

// StepsDir is where a multi-step trial keeps each step's logs.
const StepsDir = "steps"

// planSteps is each step's run, a single-step task's being a list of one
// (its instruction, timeouts and users are the task's, its logs the
// trial's own): what the agent is given, where its logs go, what is
// prepared before it and how it is graded.
func (a *trialAttempt) planSteps() ([]*stepRun, error) {
	task := a.t.Task
	if len(task.Config.Steps) == 0 {
		st, err := a.singleStep()
		if err != nil {
			return nil, err
		}
		return []*stepRun{st}, nil
	}
	if a.t.Variant.Grading == suite.GradingSnapshot {
		a.s.Report.Note(a.t, "a multi-step task is graded live: a snapshot grade removes the container its next step needs")
	}
	mult := a.s.Multiplier
	var out []*stepRun
	for i, sc := range task.Config.Steps {
		instruction, err := task.StepInstruction(sc.Name)
		if err != nil {
			return nil, err
		}
		dir := filepath.Join(a.dir, StepsDir, sc.Name)
		st := &stepRun{name: sc.Name, instruction: instruction, dir: dir,
			agentUser: firstNonEmpty(sc.Agent.User, task.Config.Agent.User), verifierUser: firstNonEmpty(sc.Verifier.User, task.Config.Verifier.User),
			notePrefix: "step " + sc.Name + ": ", verifierImage: task.ID + "-verifier-" + sc.Name,
			last: i == len(task.Config.Steps)-1, artifactsBefore: true}
		st.agentTimeout, st.verifierTimeout = harbor.StepTimeouts(task.Config, sc, mult)
		if d := filepath.Join(task.StepDir(sc.Name), "solution"); dirExists(d) {
			st.solutionDir = d
		}
		if d := filepath.Join(task.StepDir(sc.Name), "workdir"); dirExists(d) {
			st.setupDir = d
		}
		for _, d := range []string{task.Path(tasks.TestsDir), filepath.Join(task.StepDir(sc.Name), tasks.TestsDir)} {
			if dirExists(d) {
				st.testsDirs = append(st.testsDirs, d)
			}
		}
		if st.verifierEnv, err = harbor.TaskEnv(task, fmt.Sprintf("[[steps]] %s: [verifier].env", sc.Name), sc.Verifier.Env, hostenv.Lookup); err != nil {
			return nil, err
		}
		if env, ok := task.StepSeparateVerifier(sc.Name); ok {
			st.separate = &env
		}
		st.minRewards = sc.MinRewards()
		st.healthcheck, st.collect = sc.Healthcheck, sc.Verifier.Collect
		st.artifacts, st.artifactsDir = append(task.Artifacts(), sc.StepArtifacts()...), filepath.Join(dir, "artifacts")
		st.grading = chooseGrading(a.t, st)
		out = append(out, st)
	}
	return out, nil
}

// singleStep is a single-step task's one run: the task's instruction,
// timeouts, users, verifier and artifacts, its logs in the trial's dir.
func (a *trialAttempt) singleStep() (*stepRun, error) {
	task := a.t.Task
	instruction, err := task.Instruction()
	if err != nil {
		return nil, err
	}
	agentTimeout, verifierTimeout, _ := harbor.Timeouts(task.Config, a.s.Multiplier)
	st := &stepRun{instruction: instruction, dir: a.dir, agentTimeout: agentTimeout,
		verifierTimeout: verifierTimeout, agentUser: task.Config.Agent.User, verifierUser: task.Config.Verifier.User,
		verifierImage: task.ID + "-verifier", last: true,
		artifacts: task.Artifacts(), artifactsDir: harbor.ArtifactsDir(a.dir)}
	if env, ok := task.SeparateVerifier(); ok {
		st.separate = &env
	}
	st.grading = chooseGrading(a.t, st)
	return st, nil
}

// stepResult is what a multi-step trial records of a graded step.
func stepResult(st *stepRun, ag agent.Result, g grader.Grade) results.StepResult {
	sr := results.StepResult{Name: st.name, AgentExitCode: ag.ExitCode, AgentTimedOut: ag.TimedOut, GradeTimedOut: g.TimedOut}
	if g.Reward != nil {
		v := g.Reward.Value
		sr.Reward, sr.Rewards = &v, g.Reward.Values
	} else if g.RewardErr != nil {
		sr.RewardError = results.RewardProblemOf(g.RewardErr)
	}
	return sr
}

// belowMinReward says which gated key fell short, "" when none did (a key
// not written counts as -inf).
func belowMinReward(r *grader.Reward, min map[string]float64) string {
	keys := make([]string, 0, len(min))
	for k := range min {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := math.Inf(-1)
		if r != nil {
			if got, ok := r.Values[k]; ok {
				v = got
			}
		}
		if v < min[k] {
			return fmt.Sprintf("%s = %v is below its min_reward %v", k, v, min[k])
		}
	}
	return ""
}

// stepsGrade is the trial's grade from its steps': the last step's, with
// the reward the strategy makes of the graded steps' rewards (none when no
// step was graded: the last step's reward error stands).
func stepsGrade(strategy string, graded []grader.Reward, last grader.Grade) grader.Grade {
	g := last
	if len(graded) == 0 {
		if g.RewardErr == nil {
			g.RewardErr = &grader.RewardError{Kind: grader.RewardMissing, Detail: "no step was graded"}
		}
		g.Reward = nil
		return g
	}
	var r grader.Reward
	if strategy == tasks.StrategyFinal {
		r = graded[len(graded)-1]
		if last.Reward == nil {
			// The last step ran and wrote no reward: final has none.
			g.Reward = nil
			return g
		}
	} else {
		r = meanReward(graded)
	}
	r.Source = "steps (" + strategy + ")"
	g.Reward, g.RewardErr = &r, nil
	return g
}

// meanReward is Harbor's mean over steps: per key, a key a step did not
// write counting 0; its value is the "reward" key's, else the lowest.
func meanReward(rs []grader.Reward) grader.Reward {
	keys := map[string]bool{}
	for _, r := range rs {
		for k := range r.Values {
			keys[k] = true
		}
	}
	out := grader.Reward{Values: map[string]float64{}}
	for k := range keys {
		sum := 0.0
		for _, r := range rs {
			sum += r.Values[k]
		}
		out.Values[k] = sum / float64(len(rs))
	}
	if v, ok := out.Values["reward"]; ok {
		out.Value = v
	} else {
		out.Value = math.Inf(1)
		for _, v := range out.Values {
			out.Value = min(out.Value, v)
		}
	}
	return out
}

func stepRewardText(r *float64) string {
	if r == nil {
		return "none"
	}
	return fmt.Sprintf("%g", *r)
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// prepare readies the container for a step's agent: the step's
// workdir/ copied into the work dir and its setup.sh run as the step's
// agent user, then its healthcheck polled. The failure it returns ("" when
// none) ends the trial's steps. A single-step task has nothing to prepare:
// its healthcheck is waited for as the container starts.
func (h *sharedTrial) prepare(ctx context.Context, st *stepRun) (failed string, err error) {
	if failed, err = h.stepSetup(ctx, st); err != nil || failed != "" {
		return failed, err
	}
	return h.stepHealthcheck(ctx, st), nil
}

// stepHealthcheck polls a step's healthcheck, after its setup and before
// its agent; a failure ends the steps there, as a failed setup does.
func (h *sharedTrial) stepHealthcheck(ctx context.Context, st *stepRun) string {
	hc := st.healthcheck
	if hc == nil {
		return ""
	}
	err := harbor.PollHealthcheck(ctx, h.a.s.Engine, harbor.HealthcheckRun{
		Container: h.container, Check: hc, User: harbor.RootIfEmpty(h.info.User), Workdir: h.workdir,
		LogPath: filepath.Join(st.dir, harbor.HealthcheckLog), Scratch: h.a.scratch,
	})
	if err != nil {
		return fmt.Sprintf("its healthcheck failed (steps/%s/%s): %v", st.name, harbor.HealthcheckLog, err)
	}
	return ""
}

// stepSetup copies a step's workdir/ into the work dir and runs its
// setup.sh, if it has one.
func (h *sharedTrial) stepSetup(ctx context.Context, st *stepRun) (failed string, err error) {
	src := st.setupDir
	if src == "" {
		return "", nil
	}
	if err := h.a.s.Engine.CopyIn(ctx, h.container, src, h.workdir, sandbox.Owner{}); err != nil {
		return "", fmt.Errorf("copy step %s's workdir/ into %s: %w", st.name, h.workdir, err)
	}
	if _, err := os.Stat(filepath.Join(src, "setup.sh")); err != nil {
		return "", nil
	}
	res, err := h.a.s.Engine.Exec(ctx, h.container, sandbox.ExecSpec{
		Cmd: []string{"bash", h.workdir + "/setup.sh"}, User: st.agentUser, Workdir: h.workdir,
		StdoutPath: filepath.Join(st.dir, "setup.log"), Timeout: st.agentTimeout,
	})
	switch {
	case err != nil:
		return "", fmt.Errorf("run step %s's setup.sh: %w", st.name, err)
	case res.TimedOut:
		return "setup.sh timed out", nil
	case res.ExitCode != 0:
		return fmt.Sprintf("setup.sh exited %d (steps/%s/setup.log)", res.ExitCode, st.name), nil
	}
	return "", nil
}
