package trial

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/files"
	"github.com/flightdeck/flightdeck/internal/hostenv"
	"github.com/flightdeck/flightdeck/runner/agent"
	"github.com/flightdeck/flightdeck/runner/harbor"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/runner/tamper"
	"github.com/flightdeck/flightdeck/runner/trialnet"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/tasks"
)

// The shared model (Harbor's container model), for trials graded Harbor's
// way (Trial.Harbor): one container, started from the task image with the
// image's ENTRYPOINT and flightdeck's keep-alive as its command (where
// Harbor's compose file puts `sleep infinity`), holds the agent phase and
// then the verifier, live. The work dir is the image's own directory in that container:
// nothing is bind-mounted over it and nothing of flightdeck's is written
// into it. What the agent changed is read from outside: the work dir is
// copied out after the agent phase and compared, in a shadow repository on
// the host, with the image's copy. docs/harbor.md says what differs from
// Harbor and why.

// containerLog is the agent's container's own output (its entrypoint's),
// written when the entrypoint exits before the agent or the verifier is done.
const containerLog = "container.log"

// sharedTrial is the state of one trial in the shared model.
type sharedTrial struct {
	a         *trialAttempt
	net       *trialnet.Net
	img       sandbox.Image
	info      sandbox.ImageInfo
	workdir   string // the work dir in the container
	container string // the trial's one container
	started   time.Time
	// insp is what the tamper inspector and the leftovers' guard know of
	// the agent's doing in the container.
	insp inspection
	// seed is the image's copy of the work dir, the evidence's base (nil
	// when the work dir is /), once seedDone has returned; seedErr is why
	// it could not be taken, which the grade returns (an infrastructure
	// error, as the copy's container is flightdeck's).
	seed        *seedBase
	seedDone    func() error
	seedStarted bool
	seedErr     error
}

// inspection is what the shared model knows of the agent's doing in the
// trial's container, for the tamper inspector (inspect.go) and the guard
// of the processes the agent left (leftovers.go): when the agents began,
// the container's processes before them, and how the last agent's phase
// left the container.
type inspection struct {
	// agentEnd is the container's state as the agent's phase ended, while
	// it still holds (nil once the container was started again): the
	// tamper inspector starts from it rather than asking the engine, which
	// answers only once the work dir's copy out, beside it, is done.
	agentEnd *sandbox.State
	// before are the container's processes when the first agent phase
	// began (or when it was started again): the image's entrypoint's,
	// listed by beforeAt.
	before   []sandbox.Process
	beforeAt time.Time
	// leftovers is what the last inspection saw of the agent's processes
	// (in the inspector's listing, those not in before): whether the
	// grade needs them kept apart from the verifier's.
	leftovers leftoverState
	// agentSince is when the first agent began (after its step's setup);
	// agentStart when the last did: the tamper inspector judges what
	// changed since.
	agentSince, agentStart time.Time
	// stoppedChanges are the paths the engine listed as changed in a
	// container the agent's timeout stopped, before it started again:
	// the inspector judges only those (what the entrypoint changes when
	// it starts again is not the agent's doing).
	stoppedChanges map[string]bool
}

// newShared readies a trial in the shared model: its network,
// and (startSeed) the image's copy of the work dir, the evidence's base.
func (a *trialAttempt) newShared(ctx context.Context, img sandbox.Image, info sandbox.ImageInfo, dir string) (*sharedTrial, error) {
	n, err := a.newNet(false)
	if err != nil {
		return nil, err
	}
	h := &sharedTrial{a: a, net: n, img: img, info: info, workdir: dir}
	h.loadCompose()
	h.seedDone = func() error { return nil }
	// Whatever ends the trial, the seed's phase is over before its result is.
	a.deferCleanup(func(context.Context) error { h.seedDone(); return nil })
	return h, nil
}

// startSeed takes the image's copy of the work dir (a run's first trial of
// the image; the later ones find it made) beside the agent's phase, once
// the trial's container has started: on a small machine the engine's work
// for the copy (a container of its own, created, read and removed) would
// otherwise slow the start the trial waits for, and the copy is needed
// only for the evidence, after the agent.
func (h *sharedTrial) startSeed(ctx context.Context) {
	if h.seedStarted {
		return
	}
	h.seedStarted = true
	a, dir, img := h.a, h.workdir, h.img
	wait := a.backgroundPhase(PhaseWorkdir, func() error {
		if dir == "/" {
			return nil // the whole filesystem: no evidence
		}
		spec := sandbox.ContainerSpec{Image: img.Ref, RunID: a.s.RunID, TrialID: a.t.ID, Workdir: dir,
			Labels: map[string]string{sandbox.LabelPhase: "seed"}}
		var err error
		h.seed, err = a.s.Seeds.get(ctx, a.s.Engine, spec, h.info.ID, dir, false)
		return err
	})
	var once sync.Once
	var seedErr error
	h.seedDone = func() error {
		once.Do(func() { seedErr = wait() })
		return seedErr
	}
}

// agentPhase runs a step's agent.
func (h *sharedTrial) agentPhase(ctx context.Context, step *stepRun) (agent.Result, error) {
	return h.agent(ctx, step)
}

// inspectPhase starts the tamper inspector's read of the container (a
// container the agent's timeout stopped is started again first), beside
// the work dir's copy out; the verifier starts once it is done. Each
// step's agent is judged on what changed since it began: the verifiers
// before it are flightdeck's own.
func (h *sharedTrial) inspectPhase(ctx context.Context, step *stepRun, ag agent.Result) (func(), error) {
	if err := h.restartForInspect(ctx, ag); err != nil {
		return nil, err
	}
	wait := h.a.asyncPhase(PhaseInspect, func() error {
		h.inspectAgent(ctx, step)
		return nil
	})
	return func() { wait() }, nil
}

// loadCompose applies a multi-container task's compose file to the work
// dir: main's working_dir there is the work dir when task.toml sets none
// (Harbor's env file comes after the task's file, so
// [environment].workdir wins over it).
func (h *sharedTrial) loadCompose() {
	c := h.net.ComposeFile
	if c == nil {
		return
	}
	if wd := c.Main.Workdir; wd != "" && h.a.t.Task.Config.Environment.Workdir == "" {
		h.workdir = wd
		h.a.res.WorkDir = wd
	}
}

// start starts the trial's container with the image's entrypoint, waits
// for its healthcheck, and checks that the entrypoint is still running.
func (h *sharedTrial) start(ctx context.Context, instruction string) error {
	s, t := h.a.s, h.a.t
	task := t.Task
	env, err := harbor.TaskEnv(task, "[environment].env", task.Config.Environment.Env, hostenv.Lookup)
	if err != nil {
		return err
	}
	mem, err := task.MemoryBytes()
	if err != nil {
		return err
	}
	mounts, err := harbor.AgentMounts(h.a.dir)
	if err != nil {
		return err
	}
	if t.Variant.Agent == suite.AgentCommand {
		trajectory, err := task.Trajectory()
		if err != nil {
			return err
		}
		if _, err := agent.InstructionFile(harbor.LogsDir(h.a.dir), instruction, trajectory); err != nil {
			return err
		}
	}
	spec := sandbox.ContainerSpec{
		Image: h.img.Ref, Name: "main-" + t.ID, RunID: s.RunID, TrialID: t.ID, Workdir: h.workdir, Env: env,
		NanoCPUs: task.NanoCPUs(), MemoryBytes: mem, KeepEntrypoint: true, NoInit: true,
		Network: h.net.AgentNet, Reconnectable: h.net.GraderNet && !h.net.AgentNet,
		Mounts: mounts, Dirs: []string{harbor.VerifierLogs},
		Labels: map[string]string{sandbox.LabelPhase: "agent"},
	}
	if err := h.net.Join(ctx, &spec); err != nil {
		return err
	}
	spec.Service = h.net.Service
	if spec.NetworkOf, err = h.net.Gateway(ctx, spec.Service); err != nil {
		return err
	}
	started := time.Now()
	h.container, err = h.a.startMain(ctx, spec, "the task's container", harbor.Logs, func() bool { return true },
		func(id string) error {
			h.container = id
			return h.entrypointExited(ctx, "before its healthcheck passed")
		})
	if h.container != "" {
		h.started = started
	}
	if err != nil {
		return err
	}
	h.startSeed(ctx)
	// An entrypoint of the image's own may still be starting what it
	// starts in the background (settle.go); what it started by then is
	// the container's own, not the agent's.
	h.settle(ctx)
	if err := h.entrypointExited(ctx, "before the agent started"); err != nil {
		return err
	}
	h.insp.before, err = s.Engine.Processes(ctx, h.container)
	if err != nil {
		return fmt.Errorf("list the processes of the task's container: %w", err)
	}
	h.insp.beforeAt = time.Now()
	return nil
}

// entrypointExited returns an error naming the entrypoint's exit, with its
// output saved as ContainerLog, when the container is no longer running.
func (h *sharedTrial) entrypointExited(ctx context.Context, when string) error {
	st, err := h.a.s.Engine.State(ctx, h.container)
	if err != nil || st.Running {
		return err
	}
	log := filepath.Join(h.a.dir, containerLog)
	if lerr := h.a.s.Engine.Logs(ctx, h.container, log, 1<<20); lerr != nil {
		return fmt.Errorf("the image's entrypoint exited %s (exit code %d); its output could not be read: %v", when, st.ExitCode, lerr)
	}
	return fmt.Errorf("the image's entrypoint exited %s (exit code %d): it must keep running its command (Harbor's `sleep infinity`); its output is in %s",
		when, st.ExitCode, containerLog)
}

// stepRun is what one agent phase and its grade are given: a multi-step
// task's step, or a single-step task's one run. Everything that differs
// between the two is here, decided once by planSteps.
type stepRun struct {
	name            string // the step's name; "" for a single-step task
	notePrefix      string // what the progress's notes of the step begin with
	instruction     string
	solutionDir     string // "" for the task's solution/
	dir             string // where its agent.log, grader.log and verifier/ go
	agentTimeout    time.Duration
	verifierTimeout time.Duration
	agentUser       string
	verifierUser    string
	verifierEnv     []string // over [verifier].env
	minRewards      map[string]float64
	setupDir        string // the step's workdir/ (with its setup.sh), "" when none
	setupFailed     string // why its setup.sh (or its healthcheck) failed, once it has
	testsDirs       []string
	healthcheck     *tasks.Healthcheck // polled after the setup (a step's own)
	// separate is the step's separate verifier's environment, nil when
	// the verifier runs in the trial's container.
	separate *tasks.EnvConfig
	// verifierImage names a separate verifier's image.
	verifierImage string
	// last: the trial's last use of its container (a separate verifier
	// stops it).
	last bool
	// grading is how the step is graded (chooseGrading).
	grading string
	// emptyAtGrade are files its grade empties before the verifier runs
	// (agent.Result.EmptyAtGrade).
	emptyAtGrade []string
	// artifacts are collected into artifactsDir: before a separate
	// verifier, before a live one when artifactsBefore (a step's), else
	// after it (a task's, as Harbor collects them).
	artifacts       []tasks.Artifact
	artifactsDir    string
	artifactsBefore bool
	collect         []tasks.CollectHook // a step's own, run after the task's
}

// agent runs an agent phase in the trial's container, started first when
// it is not yet. The container is left running: the verifier runs in it
// next.
func (h *sharedTrial) agent(ctx context.Context, step *stepRun) (agent.Result, error) {
	s, t := h.a.s, h.a.t
	ap := h.a.session(step, h.workdir)
	ap.Harbor, ap.OutputDir, ap.SolutionDir = true, harbor.LogsDir(h.a.dir), step.solutionDir
	var res agent.Result
	// after is the container's state once the agent ended, when read
	// already (for a container that stopped under the agent).
	var after *sandbox.State
	err := h.a.phase(PhaseAgent, func() error {
		instruction := step.instruction
		if h.container == "" {
			if err := h.start(ctx, instruction); err != nil {
				return err
			}
		} else {
			// A later step: the container as the last grade left it. The
			// baseline of processes stays the entrypoint's: what an earlier
			// step left still counts when a later step is graded.
			if t.Variant.Agent == suite.AgentCommand {
				// The seed trajectory was written with the first step's
				// instruction, and stays beside it.
				if _, err := agent.InstructionFile(harbor.LogsDir(h.a.dir), instruction, nil); err != nil {
					return err
				}
			}
			if err := h.ready(ctx, true); err != nil {
				return err
			}
		}
		ap.Container = h.container
		if t.Variant.Agent == suite.AgentCommand {
			ap.InstructionPath = agent.HarborInstructionPath
		}
		var err error
		if step.setupFailed, err = h.prepare(ctx, step); err != nil || step.setupFailed != "" {
			return err
		}
		h.insp.agentStart = time.Now()
		h.insp.leftovers = leftoversUnknown
		if h.insp.agentSince.IsZero() {
			h.insp.agentSince = h.insp.agentStart
		}
		if res, err = ap.Run(ctx, instruction); err != nil {
			return err
		}
		h.a.recordMemory(ctx, h.container)
		if !res.TimedOut && res.Failed == "" {
			st, err := h.stoppedUnderAgent(ctx, &res)
			if err != nil {
				return err
			}
			after = st
		}
		if s.Owner.UID == 0 {
			// Nothing is handed back to root, and handing back is what
			// clears setuid and setgid bits; clear them on the host instead.
			if err := grader.ClearSetID(ap.OutputDir); err != nil {
				return fmt.Errorf("clear setuid bits in %s: %w", ap.OutputDir, err)
			}
		} else {
			s.Engine.HandBack(ctx, h.container, harbor.AgentLogs, s.Owner)
		}
		return nil
	})
	h.insp.agentEnd = nil
	if after != nil && after.Running && after.Pid > 0 {
		h.insp.agentEnd = after
	}
	oomKilled := false
	if after != nil {
		oomKilled = after.OOMKilled
	} else if st, serr := s.Engine.State(ctx, h.container); serr == nil && h.container != "" {
		oomKilled = st.OOMKilled
	}
	h.a.recordAgent(res, oomKilled, err)
	return res, err
}

// stoppedUnderAgent records a container that stopped during the agent
// phase without an exec noticing (its entrypoint exited, say) as the
// agent's failure, with the container's output; one killed through the
// engine is an infrastructure error.
//
// It returns the state it read, for the caller's use (a container that
// ran out of memory), so that the state is read once.
func (h *sharedTrial) stoppedUnderAgent(ctx context.Context, res *agent.Result) (*sandbox.State, error) {
	st, err := h.a.s.Engine.State(ctx, h.container)
	if err != nil {
		return nil, err
	}
	if st.Running {
		return &st, nil
	}
	killed, err := h.a.s.Engine.KilledSince(ctx, h.container, h.started)
	switch {
	case err != nil:
		return nil, fmt.Errorf("the task's container stopped during the agent phase, and its events cannot be read: %w", err)
	case killed:
		return nil, fmt.Errorf("the task's container was killed through the engine during the agent phase: %w", sandbox.ErrContainerGone)
	}
	res.Failed = fmt.Sprintf("the task's container stopped during the agent phase (exit code %d); its output is in %s", st.ExitCode, containerLog)
	h.a.s.Engine.Logs(ctx, h.container, filepath.Join(h.a.dir, containerLog), 1<<20)
	return &st, nil
}

// evidenceLimits caps the copy of the work dir taken after the agent phase.
var evidenceLimits = sandbox.CopyLimits{MaxBytes: 2 << 30, MaxEntries: 500000, Symlinks: true}

// evidence copies the work dir out of the container and compares it with
// the image's, on the host.
func (h *sharedTrial) evidence(ctx context.Context, ag agent.Result) *grader.Evidence {
	if h.workdir == "/" {
		h.a.res.Evidence.Note = "the work dir is /: no evidence"
		writeEvidence(h.a.dir, &grader.Evidence{}, nil)
		return nil
	}
	after := filepath.Join(h.a.scratch, "after")
	err := files.ResetDir(after)
	if err == nil {
		err = h.a.s.Engine.CopyOut(ctx, h.container, h.workdir, after, evidenceLimits)
	}
	if err != nil {
		h.a.res.Evidence.Note = "no evidence: copy the work dir out of the container: " + err.Error()
		writeEvidence(h.a.dir, &grader.Evidence{}, nil)
		return nil
	}
	// The base is taken beside the agent's phase: by now it is mostly done.
	if err := h.seedDone(); err != nil || h.seed == nil {
		if err == nil {
			err = errors.New("the trial's container never started")
		}
		h.seedErr = err
		h.a.res.Evidence.Note = "no evidence: the image's copy of the work dir: " + err.Error()
		writeEvidence(h.a.dir, &grader.Evidence{}, nil)
		return nil
	}
	seed := h.seed
	wd := &WorkDir{Host: after, Container: h.workdir, Base: seed.base, shadow: seed.shadow,
		shadowBase: seed.shadowBase, scratch: h.a.scratch, index: filepath.Join(h.a.scratch, "shadow.index")}
	return h.a.workdirEvidence(ctx, wd, ag, nil)
}

// grade grades a step as chooseGrading decided: live in the trial's
// container, from a snapshot of it, or in a separate verifier's.
func (h *sharedTrial) grade(ctx context.Context, step *stepRun) (grader.Grade, error) {
	if h.seedErr != nil {
		return grader.Grade{}, fmt.Errorf("copy the image's work dir for the evidence: %w", h.seedErr)
	}
	req := h.a.gradeRequest(h.img.Ref, h.workdir, step)
	req.Service = h.net.SnapshotService()
	if step.grading == GradeSeparate {
		return h.separateGrade(ctx, step, req)
	}
	// The collect commands run before the verifier; a step's artifacts
	// are taken then too, the task's after it (collectArtifacts).
	var as []tasks.Artifact
	if step.artifactsBefore {
		as = step.artifacts
	}
	if _, err := h.collectEvidence(ctx, step, as, false); err != nil {
		return grader.Grade{}, err
	}
	if step.grading == GradeSnapshot {
		return h.snapshotGrade(ctx, req)
	}
	return h.liveGrade(ctx, step, req)
}

// liveGrade runs the verifier in the trial's container, as the agent left
// it, with what the agent left running kept apart (leftovers.go).
func (h *sharedTrial) liveGrade(ctx context.Context, step *stepRun, req grader.Request) (grader.Grade, error) {
	s, t := h.a.s, h.a.t
	env, err := harbor.VerifierEnv(t.Task, hostenv.Lookup)
	if err != nil {
		return grader.Grade{}, err
	}
	req.Env = append(env, step.verifierEnv...)
	req.Harbor = &grader.HarborVerifier{TestsDirs: step.testsDirs}
	if err := h.ready(ctx, false); err != nil {
		return grader.Grade{}, err
	}
	guard := h.leftoverGuard(req.Timeout)
	var g grader.Grade
	if guard != nil {
		g, err = grader.RunLiveGuarded(ctx, s.Engine, h.container, req, guard)
		h.a.res.GradePhase.AgentProcesses = guard.held
	} else {
		g, err = grader.RunLive(ctx, s.Engine, h.container, req)
	}
	if left := h.a.res.GradePhase.AgentProcesses; len(left) > 0 {
		s.Report.Note(t, fmt.Sprintf("%d process(es) the agent left took turns with the verifier (grade_phase.agent_processes; grading: snapshot runs none)", len(left)))
		if err != nil && ctx.Err() == nil && !errors.Is(err, sandbox.ErrContainerGone) {
			// A process the agent left can kill the verifier's commands, or
			// keep itself from being stopped, as well as it can write a
			// reward: the agent's doing, not the engine's, and no retry
			// would change it.
			g = grader.Grade{RewardErr: &grader.RewardError{Kind: grader.RewardTampered,
				Detail: fmt.Sprintf("the verifier could not run while %d process(es) the agent left ran (grade_phase.agent_processes; grading: snapshot runs none): %v", len(left), err)}}
			err = nil
		}
	}
	for _, w := range g.Warnings {
		s.Report.Note(t, w)
	}
	if err == nil && !step.artifactsBefore {
		h.collectArtifacts(ctx)
	}
	if g.Tampered != "" {
		h.addTamper(tamper.Finding{Path: harbor.VerifierLogs, Kind: tamper.KindRewardWriter, Evidence: g.Tampered})
	}
	return g, err
}

// collectArtifacts copies the task's artifacts out of their containers
// (main's, or a sidecar's) into the trial's logs/artifacts, with a
// manifest, as Harbor collects them; what fails is said, and is not the
// trial's failure.
func (h *sharedTrial) collectArtifacts(ctx context.Context) []harbor.ArtifactEntry {
	as := h.a.t.Task.Artifacts()
	if len(as) == 0 {
		return nil
	}
	entries, err := harbor.CollectArtifacts(ctx, h.a.s.Engine, h.containerOf, as, harbor.ArtifactsDir(h.a.dir), nil)
	if err != nil {
		h.a.s.Report.Note(h.a.t, err.Error())
	}
	for _, e := range entries {
		if e.Status != "ok" {
			h.a.s.Report.Note(h.a.t, fmt.Sprintf("artifact %s not collected: %s", e.Source, e.Error))
		}
	}
	return entries
}

// ready makes the container fit for the verifier: running (an agent that
// timed out had it killed; it starts again with its entrypoint, its
// filesystem as the agent left it) and on the verifier's network.
func (h *sharedTrial) ready(ctx context.Context, forAgent bool) error {
	eng := h.a.s.Engine
	who := "the verifier"
	if forAgent {
		who = "the agent"
	}
	st, err := eng.State(ctx, h.container)
	if err != nil {
		return err
	}
	if !st.Running {
		h.insp.agentEnd = nil
		if err := eng.Restart(ctx, h.container); err != nil {
			return fmt.Errorf("start the task's container again for %s: %w", who, err)
		}
		h.a.s.Report.Note(h.a.t, "the task's container had stopped; started again for "+who)
		if err := h.entrypointExited(ctx, "when the container was started again for "+who); err != nil {
			return err
		}
		// No process of the agent's survived the stop: what runs now is
		// the entrypoint's, started anew.
		h.insp.leftovers = leftoversNone
		if h.insp.before, err = eng.Processes(ctx, h.container); err != nil {
			return fmt.Errorf("list the processes of the task's container: %w", err)
		}
		h.insp.beforeAt = time.Now()
	}
	return h.net.Enter(ctx, h.container, forAgent)
}
