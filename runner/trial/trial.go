package trial

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/files"
	"github.com/flightdeck/flightdeck/internal/hostenv"
	"github.com/flightdeck/flightdeck/runner/agent"
	"github.com/flightdeck/flightdeck/runner/harbor"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
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
	// interrupted; what fails is said in the progress.
	cleanups []func(context.Context) error
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
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if hurry := a.s.Hurry; hurry != nil {
		// Asked again to stop: the run's removal by label takes over.
		stop := context.AfterFunc(ctx, func() {
			select {
			case <-hurry:
				cancel()
			case <-cctx.Done():
			}
		})
		defer stop()
	}
	for i := len(a.cleanups) - 1; i >= 0; i-- {
		if err := a.cleanups[i](cctx); err != nil {
			a.s.Report.Note(a.t, "cleanup: "+err.Error())
		}
	}
	if !a.s.Keep {
		if err := os.RemoveAll(a.scratch); err != nil {
			a.s.Report.Note(a.t, "cleanup: "+err.Error())
		}
	}
}

// removeContainer is the cleanup of a trial's container: what the
// container wrote under dir is handed back to the run's owner (when dir is
// set and the owner is not root), then the container is removed. With
// --keep it stays.
func (a *trialAttempt) removeContainer(id, dir string, handBack func() bool) func(context.Context) error {
	s := a.s
	return func(cctx context.Context) error {
		if s.Keep {
			return nil
		}
		var errs []error
		if dir != "" && s.Owner.UID != 0 && handBack() {
			if err := s.Engine.HandBack(cctx, id, dir, s.Owner); err != nil {
				errs = append(errs, fmt.Errorf("hand back %s: %w", dir, err))
			}
		}
		if err := s.Engine.Remove(cctx, id); err != nil {
			errs = append(errs, err)
		}
		return errors.Join(errs...)
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
	p := results.Phase{Name: name, Start: time.Now().UTC()}
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
	i := len(a.res.Phases)
	a.res.Phases = append(a.res.Phases, results.Phase{Name: name, Start: time.Now().UTC()})
	done := make(chan error, 1)
	go func() { done <- f() }()
	return func() error {
		err := <-done
		p := &a.res.Phases[i]
		p.End = time.Now().UTC()
		p.Seconds = results.RoundSeconds(p.End.Sub(p.Start))
		if err != nil {
			p.Error = err.Error()
		}
		return err
	}
}

func (a *trialAttempt) run(ctx context.Context) error {
	s, t := a.s, a.t
	task := t.Task
	img, info, err := a.imagePhase(ctx)
	if err != nil {
		return err
	}

	dir := containerWorkDir(task.Config.Environment.Workdir, info)
	a.res.WorkDir = dir
	a.imageUser = info.User
	if t.Harbor() {
		return a.runHarbor(ctx, img, info, dir)
	}
	n, err := newTrialNet(a, true)
	if err != nil {
		return err
	}
	if c := n.composeFile; c != nil && c.Main.Workdir != "" && task.Config.Environment.Workdir == "" {
		dir = c.Main.Workdir
		a.res.WorkDir = dir
	}
	if dir == "/" {
		return fmt.Errorf("task %s: the work dir is / (no [environment].workdir and no WORKDIR in the image): "+
			"flightdeck-native grading mounts the work dir, so set [environment].workdir", task.ID)
	}
	env, err := a.containerEnv()
	if err != nil {
		return err
	}
	mem, err := task.MemoryBytes()
	if err != nil {
		return err
	}
	base := sandbox.ContainerSpec{
		Image: img.Ref, RunID: s.RunID, TrialID: t.ID, Workdir: dir, Env: env,
		NanoCPUs: task.NanoCPUs(), MemoryBytes: mem,
		Labels: map[string]string{grader.LabelPhase: "agent"},
	}
	wd, err := a.workdirPhase(ctx, base, info)
	if err != nil {
		return err
	}

	ag, agentID, err := a.agentPhase(ctx, base, wd, n)
	if err != nil {
		return err
	}

	return a.conclude(ctx, ag,
		func() *grader.Evidence { return a.evidence(ctx, wd, ag) },
		func() (grader.Grade, error) { return a.grade(ctx, img, wd, dir, agentID, n) })
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

// workdirPhase makes a native trial's work dir on the host from the
// image's copy of it, with the git base the evidence is taken against.
func (a *trialAttempt) workdirPhase(ctx context.Context, base sandbox.ContainerSpec, info sandbox.ImageInfo) (*WorkDir, error) {
	var wd *WorkDir
	err := a.phase(PhaseWorkdir, func() error {
		host := filepath.Join(a.scratch, "workdir")
		gitDir := filepath.Join(a.scratch, "git")
		for _, d := range []string{host, gitDir} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
		seedSpec := base
		seedSpec.Labels = map[string]string{grader.LabelPhase: "seed"}
		seed, err := a.s.Seeds.get(ctx, a.s.Engine, seedSpec, info.ID, base.Workdir, true)
		if err != nil {
			return err
		}
		wd, err = prepareWorkDir(seed, base.Workdir, host, gitDir)
		return err
	})
	return wd, err
}

// conclude runs a trial's last phases, the same in both container models:
// the evidence (never an error), the grade, and the result.
func (a *trialAttempt) conclude(ctx context.Context, ag agent.Result, evidence func() *grader.Evidence, grade func() (grader.Grade, error)) error {
	var ev *grader.Evidence
	a.phase(PhaseEvidence, func() error {
		ev = evidence()
		return nil
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var g grader.Grade
	if err := a.phase(PhaseGrade, func() error {
		var err error
		g, err = grade()
		return err
	}); err != nil {
		return err
	}
	return a.phase(PhaseResult, func() error {
		a.finish(ag, g, ev)
		return nil
	})
}

// containerEnv is the agent's container environment: [environment].env and
// a git setting that lets any user's git use the bind-mounted work dir.
func (a *trialAttempt) containerEnv() ([]string, error) {
	env, err := harbor.TaskEnv(a.t.Task, "[environment].env", a.t.Task.Config.Environment.Env, hostenv.Lookup)
	if err != nil {
		return nil, err
	}
	return append(env, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*"), nil
}

// agentPhase starts a multi-container task's services and the agent's
// container (none for nop: the image is what nop leaves), runs the agent
// and hands the work dir back.
func (a *trialAttempt) agentPhase(ctx context.Context, base sandbox.ContainerSpec, wd *WorkDir, n *trialNet) (agent.Result, string, error) {
	s, t := a.s, a.t
	task := t.Task
	ap := &agent.Session{
		Engine: s.Engine, Trial: t, Workdir: base.Workdir, User: task.Config.Agent.User,
		LogPath: filepath.Join(a.dir, results.AgentLog), Scratch: a.scratch, Owner: s.Owner,
		Mask: s.Mask,
	}
	if wd != nil {
		ap.Host = wd.Host
		if u := harbor.AgentUser(task, sandbox.ImageInfo{User: a.imageUser}); !harbor.IsRootUser(u) {
			ap.WorkdirUser = u // the agent's user must be able to write the bind-mounted work dir
		}
	}
	ap.Timeout, _, _ = harbor.Timeouts(task.Config, s.Multiplier)
	if ap.Timeout > 0 {
		a.res.AgentPhase.Timeout = results.RoundSeconds(ap.Timeout)
	}
	var res agent.Result
	oomKilled := false
	err := a.phase(PhaseAgent, func() error {
		instruction, err := task.Instruction()
		if err != nil {
			return err
		}
		// The services start even for nop: the grade reaches them.
		service, binds, env, err := n.startServices(ctx)
		if err != nil {
			return err
		}
		if service != nil {
			n.service = service
			a.s.Report.Phase(t, PhaseAgent)
			// The task's env over the compose file's, as in Harbor's model.
			base.Env = append(env, base.Env...)
			base.Mounts = append(base.Mounts, binds...)
		}
		if t.Variant.Agent != suite.AgentNop {
			if err := a.startAgentContainer(ctx, base, wd, instruction, ap, n); err != nil {
				return err
			}
		}
		res, err = ap.Run(ctx, instruction)
		if err != nil {
			return err
		}
		ap.Dirty = true
		oomKilled, err = a.endAgentPhase(ctx, ap)
		return err
	})
	a.res.AgentPhase.ExitCode = res.ExitCode
	a.res.AgentPhase.TimedOut = res.TimedOut
	a.res.AgentPhase.Failed = res.Failed
	a.res.AgentPhase.Steps = res.Steps
	a.res.AgentPhase.OOMKilled = oomKilled
	if err == nil && res.TimedOut {
		a.s.Report.Note(t, "agent timed out; grading what it left")
	}
	return res, ap.Container, err
}

// startAgentContainer starts a native trial's agent container, the work
// dir (and a command agent's instruction) mounted, in main's place among
// the services and behind the egress gateway when a phase is an allowlist,
// and waits for its healthcheck.
func (a *trialAttempt) startAgentContainer(ctx context.Context, base sandbox.ContainerSpec, wd *WorkDir, instruction string, ap *agent.Session, n *trialNet) error {
	s, t := a.s, a.t
	task := t.Task
	spec := base
	spec.Name = "agent-" + t.ID
	spec.User = task.Config.Agent.User
	spec.Network = n.agentNet
	spec.Service = n.nativeService()
	var err error
	if spec.NetworkOf, err = n.gateway(ctx, spec.Service); err != nil {
		return err
	}
	if wd != nil {
		spec.Mounts = append(spec.Mounts, sandbox.Mount{HostPath: wd.Host, ContainerPath: wd.Container})
	}
	if t.Variant.Agent == suite.AgentCommand {
		m, err := agent.InstructionMount(a.scratch, instruction)
		if err != nil {
			return err
		}
		spec.Mounts = append(spec.Mounts, m)
	}
	c, err := s.Engine.Start(ctx, spec)
	if c.ID != "" {
		ap.Container = c.ID
		a.cleanups = append(a.cleanups, a.removeContainer(c.ID, base.Workdir, func() bool { return ap.Dirty }))
	}
	if err != nil {
		return fmt.Errorf("start the agent's container: %w", err)
	}
	if hc := task.Config.Environment.Healthcheck; hc != nil && hc.Command != "" {
		s.Report.Phase(t, "healthcheck")
		if err := harbor.PollHealthcheck(ctx, s.Engine, harbor.HealthcheckRun{
			Container: c.ID, Check: hc, User: harbor.RootIfEmpty(a.imageUser), Workdir: base.Workdir,
			LogPath: filepath.Join(a.dir, harbor.HealthcheckLog), Scratch: a.scratch,
		}); err != nil {
			return err
		}
		s.Report.Phase(t, PhaseAgent)
	}
	return nil
}

// endAgentPhase stops the agent's container, so that no process of the
// phase outlives it, and gives what it wrote to the run's owner with no
// set-id bit left. It reports whether the kernel killed a process of the
// container for its memory limit.
func (a *trialAttempt) endAgentPhase(ctx context.Context, ap *agent.Session) (oomKilled bool, err error) {
	s := a.s
	if ap.Container != "" {
		a.recordMemory(ctx, ap.Container)
		// One left running could change the work dir after the evidence is
		// taken, or while it is graded.
		if err := s.Engine.Stop(ctx, ap.Container); err != nil && !errors.Is(err, sandbox.ErrContainerGone) {
			return false, fmt.Errorf("stop the agent's container: %w", err)
		}
		if st, err := s.Engine.State(ctx, ap.Container); err == nil {
			oomKilled = st.OOMKilled
		}
	}
	if s.Owner.UID == 0 {
		// Nothing is handed back to root, and handing back is what clears
		// setuid and setgid bits; clear them on the host instead.
		for _, dir := range []string{ap.Host, ap.OutputDir} {
			if dir == "" {
				continue
			}
			if err := grader.ClearSetID(dir); err != nil {
				return oomKilled, fmt.Errorf("clear setuid bits in %s: %w", dir, err)
			}
		}
	}
	if err := ap.HandBack(ctx); err != nil {
		return oomKilled, err
	}
	if ap.OutputDir != "" && s.Owner.UID != 0 && ap.Container != "" {
		if err := s.Engine.HandBack(ctx, ap.Container, harbor.AgentLogs, s.Owner); err != nil {
			s.Report.Note(a.t, "hand back the agent's logs: "+err.Error())
		}
	}
	return oomKilled, nil
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

// evidence records what the agent did: the change since the seeded tree,
// and events from the replayed steps or recovered from the work dir.
func (a *trialAttempt) evidence(ctx context.Context, wd *WorkDir, ag agent.Result) *grader.Evidence {
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
		ev.Source, ev.Events = SourceSteps, ag.Events
	} else {
		ev.Source = SourceWorkdir
		a.res.Evidence.Note = workdirNote
		commits, err := wd.commits(ctx)
		if err != nil {
			a.res.Evidence.Note = workdirNote + "; commits not read: " + err.Error()
		}
		ev.Events = recoveredEvents(commits, files)
	}
	if ev.Events == nil {
		ev.Events = []grader.Event{}
	}
	if err := writeEvidence(a.dir, ev, patch); err != nil {
		a.res.Evidence.Note = "evidence not written: " + err.Error()
	}
	a.res.Evidence.Source = ev.Source
	a.res.Evidence.Events = len(ev.Events)
	a.res.Evidence.DiffFiles = len(ev.DiffFiles)
	return ev
}

// grade grades a native trial from the pristine task image with the work
// dir mounted, on the services' network when the task has services.
func (a *trialAttempt) grade(ctx context.Context, img sandbox.Image, wd *WorkDir, dir, agentID string, n *trialNet) (grader.Grade, error) {
	s, t := a.s, a.t
	mem, _ := t.Task.MemoryBytes()
	_, verifier, _ := harbor.Timeouts(t.Task.Config, s.Multiplier)
	req := grader.Request{
		Task: t.Task, Image: img.Ref, ContainerWorkDir: dir, TrialDir: a.dir,
		RunID: s.RunID, TrialID: t.ID,
		Timeout:  verifier,
		User:     t.Task.Config.Verifier.User,
		NanoCPUs: t.Task.NanoCPUs(), MemoryBytes: mem, Owner: s.Owner,
		Service: n.nativeGraderService(),
		Mask:    s.Mask,
	}
	if wd != nil {
		req.WorkDir = wd.Host
		req.WorkDirUser = harbor.AgentUser(t.Task, sandbox.ImageInfo{User: a.imageUser})
	}
	a.res.GradePhase.Timeout = results.RoundSeconds(req.Timeout)
	return grader.Run(ctx, s.Engine, req)
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
