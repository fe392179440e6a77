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

// planSteps is each step's run: its instruction, solution, dirs,
// timeouts, users and verifier env, the task's where the step sets none.
func (h *harborTrial) planSteps() ([]*stepRun, error) {
	task := h.a.t.Task
	mult := h.a.s.Multiplier
	var out []*stepRun
	for _, sc := range task.Config.Steps {
		instruction, err := task.StepInstruction(sc.Name)
		if err != nil {
			return nil, err
		}
		st := &stepRun{name: sc.Name, instruction: instruction, dir: filepath.Join(h.a.dir, StepsDir, sc.Name),
			agentUser: firstNonEmpty(sc.Agent.User, task.Config.Agent.User), verifierUser: firstNonEmpty(sc.Verifier.User, task.Config.Verifier.User)}
		st.agentTimeout, st.verifierTimeout = harbor.StepTimeouts(task.Config, sc, mult)
		if dirExists(filepath.Join(task.StepDir(sc.Name), "solution")) {
			st.solutionDir = filepath.Join(task.StepDir(sc.Name), "solution")
		}
		for _, d := range []string{task.Path(tasks.TestsDir), filepath.Join(task.StepDir(sc.Name), tasks.TestsDir)} {
			if dirExists(d) {
				st.testsDirs = append(st.testsDirs, d)
			}
		}
		if st.verifierEnv, err = harbor.TaskEnv(task, fmt.Sprintf("[[steps]] %s: [verifier].env", sc.Name), sc.Verifier.Env, hostenv.Lookup); err != nil {
			return nil, err
		}
		st.minRewards = sc.MinRewards()
		st.healthcheck, st.artifacts, st.collect = sc.Healthcheck, sc.StepArtifacts(), sc.Verifier.Collect
		out = append(out, st)
	}
	return out, nil
}

// runSteps runs a multi-step trial's steps, then its evidence and result.
func (h *harborTrial) runSteps(ctx context.Context) error {
	a, s, t := h.a, h.a.s, h.a.t
	steps, err := h.planSteps()
	if err != nil {
		return err
	}
	if t.Variant.Grading == suite.GradingSnapshot {
		s.Report.Note(t, "a multi-step task is graded live: a snapshot grade removes the container its next step needs")
	}
	h.firstStep = steps[0]
	var (
		last   agent.Result
		lastG  grader.Grade
		ev     *grader.Evidence
		graded []grader.Reward
	)
	for _, st := range steps {
		sr := results.StepResult{Name: st.name}
		if err := os.MkdirAll(st.dir, 0o755); err != nil {
			return err
		}
		ag, err := h.agent(ctx, st)
		a.res.Phases[len(a.res.Phases)-1].Step = st.name
		if err != nil || s.AgentOnly {
			// A shell opens on the first step's environment.
			return err
		}
		last = ag
		if st.setupFailed == "" {
			// Each step's agent is judged on what changed since it began:
			// the verifiers before it are flightdeck's own.
			if err := h.restartForInspect(ctx, ag); err != nil {
				return err
			}
			h.inspectAgent(ctx, st.name)
		}
		sr.AgentExitCode, sr.AgentTimedOut = ag.ExitCode, ag.TimedOut
		if st.setupFailed != "" {
			// Harbor's step result without a verifier result: no reward,
			// which is the trial's under "final".
			lastG = grader.Grade{RewardErr: &grader.RewardError{Kind: grader.RewardMissing,
				Detail: fmt.Sprintf("step %s was not graded: %s", st.name, st.setupFailed)}}
			sr.Error = st.setupFailed
			a.res.Steps = append(a.res.Steps, sr)
			s.Report.Note(t, fmt.Sprintf("step %s: %s; no later step runs", st.name, st.setupFailed))
			break
		}
		a.phase(PhaseEvidence, func() error {
			ev = h.evidence(ctx, ag)
			return nil
		})
		a.res.Phases[len(a.res.Phases)-1].Step = st.name
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var g grader.Grade
		err = a.phase(PhaseGrade, func() error {
			var err error
			g, err = h.grade(ctx, st)
			return err
		})
		a.res.Phases[len(a.res.Phases)-1].Step = st.name
		if err != nil {
			return err
		}
		lastG = g
		sr.GradeTimedOut = g.TimedOut
		if g.Reward != nil {
			v := g.Reward.Value
			sr.Reward, sr.Rewards = &v, g.Reward.Values
			graded = append(graded, *g.Reward)
		} else if g.RewardErr != nil {
			sr.RewardError = results.RewardProblemOf(g.RewardErr)
		}
		s.Report.Note(t, fmt.Sprintf("step %s: reward %s", st.name, stepRewardText(sr.Reward)))
		if why := belowMinReward(g.Reward, st.minRewards); why != "" {
			sr.Error = why + "; no later step runs"
			a.res.Steps = append(a.res.Steps, sr)
			s.Report.Note(t, fmt.Sprintf("step %s: %s", st.name, sr.Error))
			break
		}
		a.res.Steps = append(a.res.Steps, sr)
	}
	if ev == nil {
		ev = &grader.Evidence{}
	}
	// The task's artifacts were taken with each step's, into its own dir.
	final := stepsGrade(t.Task.Strategy(), graded, lastG)
	return a.phase(PhaseResult, func() error {
		a.finish(last, final, ev)
		return nil
	})
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

// stepWorkdir copies a step's workdir/ into the work dir and runs its
// setup.sh as the step's agent user, before the step's agent: the
// failure it returns ("" when none) ends the trial's steps.
func (h *harborTrial) stepWorkdir(ctx context.Context, st *stepRun) (failed string, err error) {
	if failed, err = h.stepSetup(ctx, st); err != nil || failed != "" {
		return failed, err
	}
	return h.stepHealthcheck(ctx, st), nil
}

// stepHealthcheck polls a step's healthcheck, after its setup and before
// its agent; a failure ends the steps there, as a failed setup does.
func (h *harborTrial) stepHealthcheck(ctx context.Context, st *stepRun) string {
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
func (h *harborTrial) stepSetup(ctx context.Context, st *stepRun) (failed string, err error) {
	src := filepath.Join(h.a.t.Task.StepDir(st.name), "workdir")
	if !dirExists(src) {
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
