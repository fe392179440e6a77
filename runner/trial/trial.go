package trial

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/files"
	"github.com/flightdeck/flightdeck/internal/text"
	"github.com/flightdeck/flightdeck/runner/agent"
	"github.com/flightdeck/flightdeck/runner/harbor"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/runner/trialnet"
	"github.com/flightdeck/flightdeck/sandbox"
)

// Phase names, in order.
const (
	PhaseImage    = "image"
	PhaseWorkdir  = "workdir"
	PhaseAgent    = "agent"
	PhaseEvidence = "evidence"
	PhaseInspect  = "inspect" // the tamper inspector, beside the evidence (Harbor's model)
	PhaseGrade    = "grade"
	PhaseResult   = "result"
)

// errInterrupted ends a trial that was cancelled: it gets no result.
var errInterrupted = errors.New("interrupted")

// trialAttempt is one try of a trial.
type trialAttempt struct {
	s         *Env
	t         *suite.Trial
	dir       string // the trial's directory
	scratch   string // runner-only files; removed afterwards unless --keep
	res       *results.Result
	imageUser string // the task image's USER
	// cleanups run when the attempt ends, last first, even when it was
	// interrupted; what fails is said in the progress. A cleanup marked
	// later (a container's removal) may run after the attempt returns,
	// through Env.Later: nothing of the result depends on it.
	cleanups []cleanupStep
	// step is the step whose phases run (its name; "" for a single-step
	// task): each phase records it.
	step string
	// ordered: the trial's network registered cleanups of its own (a
	// service's log, a network that outlives the containers on it), whose
	// order with the removals matters: all run in order, at once.
	ordered bool
	// replay, for a regrade whose task grades the work dir itself, is the
	// agent that rebuilds the recorded trial's work dir (nil otherwise).
	replay *agent.Replay
}

// cleanupStep is one cleanup of an attempt.
type cleanupStep struct {
	f     func(context.Context) error
	later bool
}

// deferCleanup registers a cleanup that must run before the attempt
// returns.
func (a *trialAttempt) deferCleanup(f func(context.Context) error) {
	a.cleanups = append(a.cleanups, cleanupStep{f: f})
}

// Attempt runs one try of a trial and returns its result. err is non-nil
// only when the run was interrupted (the result is then nil).
func (s *Env) Attempt(ctx context.Context, t *suite.Trial, try int) (*results.Result, error) {
	a := &trialAttempt{s: s, t: t}
	a.dir, a.scratch = s.trialDirs(t)
	a.res = NewResult(s.RunID, t)
	a.res.Tries = try
	defer a.cleanup(ctx)
	for _, d := range []string{a.dir, a.scratch} {
		if err := files.ResetDir(d); err != nil {
			return a.infra(err), nil
		}
	}
	err := a.run(ctx)
	if ctx.Err() != nil {
		return nil, errInterrupted
	}
	if err != nil {
		if isTaskDefect(err) {
			return a.taskError(err), nil
		}
		return a.infra(err), nil
	}
	return a.res, nil
}

func (a *trialAttempt) cleanup(ctx context.Context) {
	now, later := a.cleanups, []cleanupStep(nil)
	if a.s.Later != nil && ctx.Err() == nil && !a.ordered {
		now = slices.DeleteFunc(slices.Clone(a.cleanups), func(c cleanupStep) bool { return c.later })
		later = slices.DeleteFunc(slices.Clone(a.cleanups), func(c cleanupStep) bool { return !c.later })
	}
	a.runCleanups(ctx, now)
	if !a.s.Keep {
		// On the host and quick; a retry of the trial reuses the dir.
		if err := os.RemoveAll(a.scratch); err != nil {
			a.s.Report.Note(a.t, "cleanup: "+err.Error())
		}
	}
	if len(later) > 0 {
		a.s.Later(func() { a.runCleanups(ctx, later) })
	}
}

// runCleanups runs fs last first, on a context the trial's cancellation
// does not reach (a second request to stop does: the run's removal by
// label takes over), saying what fails.
func (a *trialAttempt) runCleanups(ctx context.Context, fs []cleanupStep) {
	if len(fs) == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if hurry := a.s.Hurry; hurry != nil {
		stop := context.AfterFunc(ctx, func() {
			select {
			case <-hurry:
				cancel()
			case <-cctx.Done():
			}
		})
		defer stop()
	}
	for i := len(fs) - 1; i >= 0; i-- {
		if err := fs[i].f(cctx); err != nil {
			a.s.Report.Note(a.t, "cleanup: "+err.Error())
		}
	}
}

// removeContainer is the cleanup of a trial's container: what the
// container wrote under dir is handed back to the run's owner (when dir is
// set and the owner is not root), then the container is removed. With
// --keep it stays.
func (a *trialAttempt) removeContainer(id, dir string, handBack func() bool) func(context.Context) error {
	hb, rm := a.handBack(id, dir, handBack), a.remove(id)
	return func(cctx context.Context) error {
		return errors.Join(hb(cctx), rm(cctx))
	}
}

// handBack hands what the container wrote under dir back to the run's
// owner (when dir is set, the owner is not root and dirty says so): the
// result's files must be the owner's before anything reads them.
func (a *trialAttempt) handBack(id, dir string, dirty func() bool) func(context.Context) error {
	s := a.s
	return func(cctx context.Context) error {
		if s.Keep || dir == "" || s.Owner.UID == 0 || !dirty() {
			return nil
		}
		if err := s.Engine.HandBack(cctx, id, dir, s.Owner); err != nil {
			return fmt.Errorf("hand back %s: %w", dir, err)
		}
		return nil
	}
}

// remove removes the container (with --keep it stays).
func (a *trialAttempt) remove(id string) func(context.Context) error {
	s := a.s
	return func(cctx context.Context) error {
		if s.Keep {
			return nil
		}
		return s.Engine.Remove(cctx, id)
	}
}

// infra records an infrastructure error as the trial's outcome.
func (a *trialAttempt) infra(err error) *results.Result {
	a.res.Outcome = grader.OutcomeInfraError
	a.res.OutcomeClass = grader.SpecInfraError
	a.res.Error = err.Error()
	a.res.Finished = time.Now().UTC()
	return a.res
}

// taskError records the task's own defect as the trial's outcome.
func (a *trialAttempt) taskError(err error) *results.Result {
	a.infra(err)
	a.res.Outcome = grader.OutcomeTaskError
	a.res.OutcomeClass = grader.SpecTaskError
	return a.res
}

// phase runs one timed phase.
func (a *trialAttempt) phase(name string, f func() error) error {
	a.s.Report.Phase(a.t, name)
	p := results.Phase{Name: name, Step: a.step, Start: time.Now().UTC()}
	err := f()
	p.End = time.Now().UTC()
	p.Seconds = results.RoundSeconds(p.End.Sub(p.Start))
	if err != nil {
		p.Error = err.Error()
	}
	a.res.Phases = append(a.res.Phases, p)
	return err
}

// asyncPhase runs f as the phase name beside what follows; the phase is
// recorded in its place in the order. The returned wait gives f's error
// once it is done, and must be called before the result is written.
func (a *trialAttempt) asyncPhase(name string, f func() error) (wait func() error) {
	a.s.Report.Phase(a.t, name)
	wait = a.backgroundPhase(name, f)
	a.res.Phases[len(a.res.Phases)-1].Step = a.step
	return wait
}

// backgroundPhase is asyncPhase started inside another phase, which the
// progress goes on showing. The phase ends when f returns, not when it is
// waited for.
func (a *trialAttempt) backgroundPhase(name string, f func() error) (wait func() error) {
	i := len(a.res.Phases)
	a.res.Phases = append(a.res.Phases, results.Phase{Name: name, Start: time.Now().UTC()})
	type ended struct {
		err error
		at  time.Time
	}
	done := make(chan ended, 1)
	go func() {
		err := f()
		done <- ended{err, time.Now().UTC()}
	}()
	return func() error {
		e := <-done
		err := e.err
		p := &a.res.Phases[i]
		p.End = e.at
		p.Seconds = results.RoundSeconds(p.End.Sub(p.Start))
		if err != nil {
			p.Error = err.Error()
		}
		return err
	}
}

// model is where a trial's agent runs and where it is graded: native
// (native.go: the agent's container with the work dir mounted, then a
// fresh grading container of the pristine image) or shared (shared.go:
// Harbor's one container, which holds the agent and then the verifier).
// A trial of either model runs its steps through runSteps.
type model interface {
	// agentPhase runs one step's agent phase, starting what the agent
	// needs (the task's services, its container) when it is not yet
	// started and preparing what the step needs (the shared model: a
	// step's workdir/, setup.sh and healthcheck; native: nothing). A
	// preparation that fails is the step's setupFailed.
	agentPhase(ctx context.Context, step *stepRun) (agent.Result, error)
	// inspectPhase starts what reads the agent's doing beside the
	// evidence (the shared model's tamper check); the returned wait
	// ends it, before the grade.
	inspectPhase(ctx context.Context, step *stepRun, ag agent.Result) (wait func(), err error)
	// evidence records what the agent changed in the work dir.
	evidence(ctx context.Context, ag agent.Result) *grader.Evidence
	// grade grades what the agent left.
	grade(ctx context.Context, step *stepRun) (grader.Grade, error)
}

func (a *trialAttempt) run(ctx context.Context) error {
	if a.t.Variant.Regrade != "" {
		if _, separate := a.t.Task.SeparateVerifier(); separate {
			return a.runRegrade(ctx)
		}
		if err := a.replayRegrade(); err != nil {
			return err
		}
	}
	img, info, err := a.imagePhase(ctx)
	if err != nil {
		return err
	}
	dir := containerWorkDir(a.t.Task.Config.Environment.Workdir, info)
	a.res.WorkDir = dir
	a.imageUser = info.User
	var m model
	if a.t.Harbor() {
		m, err = a.newShared(ctx, img, info, dir)
	} else {
		m, err = a.newNative(ctx, img, info, dir)
	}
	if err != nil {
		return err
	}
	steps, err := a.planSteps()
	if err != nil {
		return err
	}
	return a.runSteps(ctx, m, steps)
}

// runSteps runs a trial's steps in its model, a single-step task's being
// a list of one: per step the agent, then the evidence beside what
// inspects the agent's doing, and the grade; then the trial's result. A
// step whose setup failed, or whose rewards fall below its min_reward,
// ends the steps. A multi-step trial records each step, and its reward is
// the steps' by the task's multi_step_reward_strategy (stepsGrade).
func (a *trialAttempt) runSteps(ctx context.Context, m model, steps []*stepRun) error {
	multi := len(a.t.Task.Config.Steps) > 0
	var (
		last   agent.Result
		lastG  grader.Grade
		ev     *grader.Evidence
		graded []grader.Reward
		// gradedDir holds the last graded step's grader.log.
		gradedDir string
	)
	for _, st := range steps {
		if err := os.MkdirAll(st.dir, 0o755); err != nil {
			return err
		}
		a.step = st.name
		ag, err := m.agentPhase(ctx, st)
		if err != nil || a.s.AgentOnly {
			// A shell opens on the first step's environment.
			return err
		}
		last = ag
		st.emptyAtGrade = ag.EmptyAtGrade
		if a.res.NeedsInput != nil {
			return a.needsInput(ctx, func() *grader.Evidence { return m.evidence(ctx, ag) })
		}
		if st.setupFailed != "" {
			// Harbor's step result without a verifier result: no reward,
			// which is the trial's under "final".
			lastG = grader.Grade{RewardErr: &grader.RewardError{Kind: grader.RewardMissing,
				Detail: fmt.Sprintf("step %s was not graded: %s", st.name, st.setupFailed)}}
			a.res.Steps = append(a.res.Steps, results.StepResult{Name: st.name, AgentExitCode: ag.ExitCode,
				AgentTimedOut: ag.TimedOut, Error: st.setupFailed})
			a.s.Report.Note(a.t, fmt.Sprintf("step %s: %s; no later step runs", st.name, st.setupFailed))
			break
		}
		g, e, err := a.gradeStep(ctx, m, st, ag)
		if err != nil {
			return err
		}
		ev, lastG, gradedDir = e, g, st.dir
		if !multi {
			break
		}
		sr := stepResult(st, ag, g)
		if g.Reward != nil {
			graded = append(graded, *g.Reward)
		}
		a.s.Report.Note(a.t, fmt.Sprintf("step %s: reward %s", st.name, stepRewardText(sr.Reward)))
		why := belowMinReward(g.Reward, st.minRewards)
		if why != "" {
			sr.Error = why + "; no later step runs"
			a.s.Report.Note(a.t, fmt.Sprintf("step %s: %s", st.name, sr.Error))
		}
		a.res.Steps = append(a.res.Steps, sr)
		if why != "" {
			break
		}
	}
	a.step = ""
	final := lastG
	if multi {
		// The task's artifacts were taken with each step's, into its own dir.
		final = stepsGrade(a.t.Task.Strategy(), graded, lastG)
	}
	return a.phase(PhaseResult, func() error {
		a.finish(last, final, ev)
		if a.res.Outcome == grader.OutcomeFailed && a.res.Error == "" && gradedDir != "" {
			why := ""
			if last.Note != "" {
				// The agent's own word: what its run was stands before the
				// grade of work it did not do.
				a.res.Cause = last.Note
				return nil
			}
			if a.replay == nil {
				// A regrade's agent.log is the replay's, not the recorded
				// agent's: its exit code has no line here.
				why = agentCause(a.t.Variant, last, gradedDir)
			}
			a.res.Cause = joinCause(why, failureCause(final.Summary, gradedDir))
		}
		return nil
	})
}

// gradeStep takes a step's evidence beside what inspects the agent's
// doing, then grades it.
func (a *trialAttempt) gradeStep(ctx context.Context, m model, st *stepRun, ag agent.Result) (grader.Grade, *grader.Evidence, error) {
	inspected, err := m.inspectPhase(ctx, st, ag)
	if err != nil {
		return grader.Grade{}, nil, err
	}
	ev, err := a.evidencePhase(ctx, func() *grader.Evidence { return m.evidence(ctx, ag) })
	if err != nil {
		inspected()
		return grader.Grade{}, nil, err
	}
	var g grader.Grade
	a.res.GradePhase.Mode = st.grading
	err = a.phase(PhaseGrade, func() error {
		inspected()
		var err error
		g, err = m.grade(ctx, st)
		return err
	})
	return g, ev, err
}

// needsInput ends a trial whose agent asked what the task does not
// answer: its evidence is recorded, and it is not graded.
func (a *trialAttempt) needsInput(ctx context.Context, evidence func() *grader.Evidence) error {
	ev, err := a.evidencePhase(ctx, evidence)
	if err != nil {
		return err
	}
	a.step = ""
	return a.phase(PhaseResult, func() error {
		r, n := a.res, a.res.NeedsInput
		r.Outcome, r.OutcomeClass = grader.OutcomeNeedsInput, grader.SpecNeedsInput
		r.Error = fmt.Sprintf("needs input: the agent asked %q: %s; not graded", text.OneLine(n.Question, 300), n.Reason)
		for _, sp := range a.t.Specs {
			r.Specs = append(r.Specs, grader.Judge(sp, ev))
		}
		r.Finished = time.Now().UTC()
		return nil
	})
}

// imagePhase gets the task's image (built, cached or mapped) and inspects
// it. An image removed from the engine since the run got it is got again,
// once.
func (a *trialAttempt) imagePhase(ctx context.Context) (img sandbox.Image, info sandbox.ImageInfo, err error) {
	s, t := a.s, a.t
	err = a.phase(PhaseImage, func() error {
		for try := 0; ; try++ {
			var buildLog string
			var err error
			img, buildLog, err = s.Images.Get(ctx, t.Task)
			if buildLog != "" {
				files.LinkOrCopy(buildLog, filepath.Join(a.dir, results.BuildLog))
			}
			if err != nil {
				return err
			}
			a.res.Image, a.res.ImageID, a.res.MappedImages = img.Ref, img.ID, img.Mapped
			info, err = s.Engine.InspectImage(ctx, img.Ref)
			if try == 0 && errors.Is(err, sandbox.ErrNoSuchImage) {
				s.Report.Note(t, fmt.Sprintf("image %s is gone from the engine; getting it again", img.Ref))
				s.Images.Forget(t.Task, img.Ref)
				continue
			}
			return err
		}
	})
	return img, info, err
}

// evidencePhase records the evidence (never an error of its own); the
// error is the run's interruption.
func (a *trialAttempt) evidencePhase(ctx context.Context, evidence func() *grader.Evidence) (*grader.Evidence, error) {
	var ev *grader.Evidence
	a.phase(PhaseEvidence, func() error {
		ev = evidence()
		return nil
	})
	return ev, ctx.Err()
}

// recordMemory records, for a variant that asks (task verify's oracle),
// the most memory the agent's container used and its limit; what the
// engine cannot say is left out.
func (a *trialAttempt) recordMemory(ctx context.Context, container string) {
	if !a.t.Variant.Memory {
		return
	}
	if peak, err := a.s.Engine.PeakMemory(ctx, container); err == nil {
		a.res.AgentPhase.PeakMemory = peak
	}
	a.res.AgentPhase.MemoryLimit, _ = a.t.Task.MemoryBytes()
}

// newNet is the trial's network (package trialnet), which knows of the
// trial only its engine, ids, task, dirs and cleanups.
func (a *trialAttempt) newNet(native bool) (*trialnet.Net, error) {
	s, t := a.s, a.t
	return trialnet.New(trialnet.Trial{
		Engine: s.Engine, RunID: s.RunID, TrialID: t.ID, Task: t.Task,
		Native: native, VerifierOffline: t.Variant.VerifierOffline,
		Dir: a.dir, Scratch: a.scratch, Keep: s.Keep, Images: s.Images, Multiplier: s.Multiplier,
		Phase: func(name string) { s.Report.Phase(t, name) },
		Note:  func(msg string) { s.Report.Note(t, msg) },
		Defer: func(f func(context.Context) error) {
			a.ordered = true
			a.deferCleanup(f)
		},
		Remove: a.remove,
	})
}

// session is an agent phase's session: the step's user, timeout and
// log, in the work dir given.
func (a *trialAttempt) session(step *stepRun, workdir string) *agent.Session {
	s := a.s
	ap := &agent.Session{
		Engine: s.Engine, Trial: a.t, Workdir: workdir, User: step.agentUser,
		LogPath: filepath.Join(step.dir, results.AgentLog), Scratch: a.scratch, Owner: s.Owner,
		Timeout: step.agentTimeout, Mask: s.Mask, Agent: s.Agent, Image: a.res.Image, ImageUser: a.imageUser,
		Tracer: s.Tracer,
	}
	if a.replay != nil {
		ap.Agent = a.replay
	}
	if ap.Timeout > 0 {
		a.res.AgentPhase.Timeout = results.RoundSeconds(ap.Timeout)
	}
	if n := a.t.Task.Config.Flightdeck.MaxTurns; n > 0 {
		a.res.MaxTurns = n
		ap.Env = append(ap.Env, fmt.Sprintf("%s=%d", agent.EnvMaxTurns, n))
	}
	return ap
}

// recordAgent records how an agent phase ended.
func (a *trialAttempt) recordAgent(res agent.Result, oomKilled bool, err error) {
	a.res.AgentPhase.ExitCode = res.ExitCode
	a.res.AgentPhase.TimedOut = res.TimedOut
	a.res.AgentPhase.Failed = res.Failed
	a.res.AgentPhase.Steps = res.Steps
	a.res.AgentPhase.OOMKilled = oomKilled
	if err == nil && res.TimedOut {
		a.s.Report.Note(a.t, "agent timed out; grading what it left")
	}
}

// startMain starts the container the agent runs in (what, for errors),
// registers its removal (what it wrote under handBack handed back first
// when dirty says so), and waits for the task's healthcheck; unhealthy,
// when set, may say better why the healthcheck failed.
func (a *trialAttempt) startMain(ctx context.Context, spec sandbox.ContainerSpec, what, handBack string, dirty func() bool, unhealthy func(id string) error) (string, error) {
	s, t := a.s, a.t
	c, err := s.Engine.Start(ctx, spec)
	if c.ID != "" {
		// Last first: handed back, then removed.
		a.cleanups = append(a.cleanups, cleanupStep{f: a.remove(c.ID), later: true})
		a.deferCleanup(a.handBack(c.ID, handBack, dirty))
	}
	if err != nil {
		return c.ID, fmt.Errorf("start %s: %w", what, err)
	}
	if hc := t.Task.Config.Environment.Healthcheck; hc != nil && hc.Command != "" {
		s.Report.Phase(t, "healthcheck")
		if err := harbor.PollHealthcheck(ctx, s.Engine, harbor.HealthcheckRun{
			Container: c.ID, Check: hc, User: harbor.RootIfEmpty(a.imageUser), Workdir: spec.Workdir,
			LogPath: filepath.Join(a.dir, harbor.HealthcheckLog), Scratch: a.scratch,
		}); err != nil {
			if unhealthy != nil {
				if why := unhealthy(c.ID); why != nil {
					return c.ID, why
				}
			}
			return c.ID, err
		}
		s.Report.Phase(t, PhaseAgent)
	}
	return c.ID, nil
}

// gradeRequest is a grade's request as both models make it: the task, the
// image and work dir, the step's verifier timeout and user, the task's
// limits.
func (a *trialAttempt) gradeRequest(image, workdir string, step *stepRun) grader.Request {
	s, t := a.s, a.t
	mem, _ := t.Task.MemoryBytes()
	a.res.GradePhase.Timeout = results.RoundSeconds(step.verifierTimeout)
	req := grader.Request{
		Task: t.Task, Image: image, ContainerWorkDir: workdir, TrialDir: step.dir,
		RunID: s.RunID, TrialID: t.ID, Timeout: step.verifierTimeout, User: step.verifierUser,
		NanoCPUs: t.Task.NanoCPUs(), MemoryBytes: mem, Owner: s.Owner, Mask: s.Mask,
		Empty: step.emptyAtGrade,
	}
	if t.Variant.Trace {
		req.Trace = s.Tracer
		if s.Tracer == "" {
			s.Report.Note(t, "trace: no tracer (flightdeck's executable was not found): the verifier runs untraced")
		}
	}
	return req
}

// workdirEvidence records what the agent did: the change since the seeded tree,
// and events from the replayed steps or recovered from the work dir.
//
// asked are the question channel's exchanges: a replay records its own
// questions among its steps, so only one that needed input is added to its
// events; the events recovered from the work dir come after all of them
// (the exchange happened during the agent's phase, the work dir is read
// after it).
func (a *trialAttempt) workdirEvidence(ctx context.Context, wd *WorkDir, ag agent.Result, asked []grader.Event) *grader.Evidence {
	if wd == nil {
		a.res.Evidence.Note = "the work dir is /: no host work dir, no evidence"
		writeEvidence(a.dir, &grader.Evidence{}, nil)
		return nil
	}
	files, patch, err := wd.change(ctx)
	if err != nil {
		a.res.Evidence.Note = "no evidence: " + err.Error()
		writeEvidence(a.dir, &grader.Evidence{}, nil)
		return nil
	}
	ev := &grader.Evidence{DiffFiles: files}
	if files == nil {
		ev.DiffFiles = []string{}
	}
	if ag.Replayed {
		ev.Source, ev.Events = SourceSteps, slices.Clone(ag.Events)
		if a.res.NeedsInput != nil && len(asked) > 0 {
			ev.Events = append(ev.Events, asked[len(asked)-1])
		}
	} else {
		ev.Source = SourceWorkdir
		a.res.Evidence.Note = workdirNote
		commits, err := wd.commits(ctx)
		if err != nil {
			a.res.Evidence.Note = workdirNote + "; commits not read: " + err.Error()
		}
		ev.Events = append(slices.Clone(asked), recoveredEvents(commits, files)...)
	}
	if ev.Events == nil {
		ev.Events = []grader.Event{}
	}
	for i := range ev.Events {
		ev.Events[i].Seq = i + 1
	}
	if err := writeEvidence(a.dir, ev, patch); err != nil {
		a.res.Evidence.Note = "evidence not written: " + err.Error()
	}
	a.res.Evidence.Source = ev.Source
	a.res.Evidence.Events = len(ev.Events)
	a.res.Evidence.DiffFiles = len(ev.DiffFiles)
	return ev
}

// finish fills in the outcome, the reward and the spec verdicts.
func (a *trialAttempt) finish(ag agent.Result, g grader.Grade, ev *grader.Evidence) {
	r := a.res
	code := g.ExitCode
	r.GradePhase.ExitCode = &code
	r.GradePhase.TimedOut = g.TimedOut
	r.GradePhase.OOMKilled = g.OOMKilled
	r.Summary = g.Summary
	if g.Reward != nil {
		v := g.Reward.Value
		r.Reward, r.Rewards, r.RewardSource = &v, g.Reward.Values, g.Reward.Source
	} else if g.RewardErr != nil {
		r.RewardError = results.RewardProblemOf(g.RewardErr)
	}
	r.Outcome = g.Outcome()
	if ag.TimedOut {
		r.Outcome = grader.OutcomeAgentTimeout
	}
	switch {
	case r.Outcome == grader.OutcomeVerifierTimeout:
		r.Error = "the grader timed out"
		if t := r.GradePhase.Timeout; t > 0 {
			r.Error = fmt.Sprintf("the grader was stopped by its %gs timeout (task.toml's [verifier].timeout_sec times the suite's timeout_multiplier)", t)
		}
		if g.LogPath != "" {
			r.Error += " (" + g.LogPath + ")"
		}
	case ag.TimedOut:
		r.Error = "the agent timed out"
	case r.RewardError != nil:
		r.Error = "no reward: " + noRewardText(r.Native, a.graderCommand(), g)
	}
	if !ag.TimedOut && g.TaskDefect(noAgentWork(a.t.Variant), len(r.Tamper) > 0) {
		// The verifier's own defect: no agent's work explains it.
		r.Outcome = grader.OutcomeTaskError
		r.Error = "task error: " + noRewardText(r.Native, a.graderCommand(), g)
	}
	for _, sp := range a.t.Specs {
		r.Specs = append(r.Specs, grader.Judge(sp, ev))
	}
	r.OutcomeClass = grader.TrialOutcome(r.Outcome, g.Reward, r.Specs)
	if len(r.Tamper) > 0 && a.t.Variant.Tamper == suite.TamperFail && !r.Outcome.Ungraded() {
		// The reward stays recorded; the trial does not pass.
		r.Outcome, r.OutcomeClass = grader.OutcomeFailed, grader.SpecWorkflowViolation
		msg := fmt.Sprintf("flagged for tampering (tamper: fail): %s %s", r.Tamper[0].Kind, r.Tamper[0].Path)
		if len(r.Tamper) > 1 {
			msg += fmt.Sprintf(" and %d more", len(r.Tamper)-1)
		}
		r.Error = strings.TrimPrefix(r.Error+"; "+msg, "; ")
	}
	r.Finished = time.Now().UTC()
}

// graderCommand is a native task's grader command, as task.toml gives it.
func (a *trialAttempt) graderCommand() string {
	if g := a.t.Task.Config.Flightdeck.Grader; g != nil {
		return g.Command
	}
	return ""
}
