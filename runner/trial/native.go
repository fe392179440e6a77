package trial

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/hostenv"
	"github.com/flightdeck/flightdeck/runner/agent"
	"github.com/flightdeck/flightdeck/runner/harbor"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/runner/trialnet"
	"github.com/flightdeck/flightdeck/sandbox"
)

// flightdeck's native container model, for trials of its own tasks: the
// work dir is a host dir, seeded from the image's copy of it and
// bind-mounted into the agent's container; after the agent phase that
// container is stopped, and the grade runs in a fresh container of the
// pristine task image with the work dir mounted. What the agent changed
// is read from the host dir's git history against the seeded base.

// nativeTrial is the state of one trial in the native model.
type nativeTrial struct {
	a   *trialAttempt
	net *trialnet.Net
	img sandbox.Image
	// base is the agent's container as the task sets it: the image, the
	// work dir, the env and the limits.
	base sandbox.ContainerSpec
	wd   *WorkDir // the work dir on the host (nil when it is /)
	ask  *mailbox // the question channel (nil when the task has no answers)
}

// newNative readies a native trial: its network, its container's
// settings and its work dir on the host (the workdir phase).
func (a *trialAttempt) newNative(ctx context.Context, img sandbox.Image, info sandbox.ImageInfo, dir string) (*nativeTrial, error) {
	task := a.t.Task
	n, err := a.newNet(true)
	if err != nil {
		return nil, err
	}
	if c := n.ComposeFile; c != nil && c.Main.Workdir != "" && task.Config.Environment.Workdir == "" {
		dir = c.Main.Workdir
		a.res.WorkDir = dir
	}
	if dir == "/" {
		return nil, fmt.Errorf("task %s: the work dir is / (no [environment].workdir and no WORKDIR in the image): "+
			"flightdeck-native grading mounts the work dir, so set [environment].workdir", task.ID)
	}
	env, err := harbor.TaskEnv(task, "[environment].env", task.Config.Environment.Env, hostenv.Lookup)
	if err != nil {
		return nil, err
	}
	// A git setting that lets any user's git use the bind-mounted work dir.
	env = append(env, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*")
	mem, err := task.MemoryBytes()
	if err != nil {
		return nil, err
	}
	m := &nativeTrial{a: a, net: n, img: img, base: sandbox.ContainerSpec{
		Image: img.Ref, RunID: a.s.RunID, TrialID: a.t.ID, Workdir: dir, Env: env,
		NanoCPUs: task.NanoCPUs(), MemoryBytes: mem,
		Labels: map[string]string{sandbox.LabelPhase: "agent"},
	}}
	if m.wd, err = m.workdirPhase(ctx, info); err != nil {
		return nil, err
	}
	if m.ask, err = newMailbox(task, a.scratch); err != nil {
		return nil, err
	}
	return m, nil
}

// workdirPhase makes the work dir on the host from the image's copy of
// it, with the git base the evidence is taken against.
func (m *nativeTrial) workdirPhase(ctx context.Context, info sandbox.ImageInfo) (*WorkDir, error) {
	a := m.a
	var wd *WorkDir
	err := a.phase(PhaseWorkdir, func() error {
		host := filepath.Join(a.scratch, "workdir")
		gitDir := filepath.Join(a.scratch, "git")
		for _, d := range []string{host, gitDir} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
		seedSpec := m.base
		seedSpec.Labels = map[string]string{sandbox.LabelPhase: "seed"}
		seed, err := a.s.Seeds.get(ctx, a.s.Engine, seedSpec, info.ID, m.base.Workdir, true)
		if err != nil {
			return err
		}
		wd, err = prepareWorkDir(seed, m.base.Workdir, host, gitDir)
		return err
	})
	return wd, err
}

// agentPhase starts a multi-container task's services and the agent's
// container (none for nop: the image is what nop leaves), runs the agent,
// stops its container and hands the work dir back.
func (m *nativeTrial) agentPhase(ctx context.Context, step *stepRun) (agent.Result, error) {
	a, t := m.a, m.a.t
	ap := a.session(step, m.base.Workdir)
	if m.wd != nil {
		ap.Host = m.wd.Host
		if u := harbor.AgentUser(t.Task, sandbox.ImageInfo{User: a.imageUser}); !sandbox.IsRootUser(u) {
			ap.WorkdirUser = u // the agent's user must be able to write the bind-mounted work dir
		}
	}
	var res agent.Result
	oomKilled := false
	err := a.phase(PhaseAgent, func() error {
		// The services start even for nop: the grade reaches them.
		spec := m.base
		if err := m.net.Join(ctx, &spec); err != nil {
			return err
		}
		if t.Variant.Agent != suite.AgentNop {
			if err := m.startAgent(ctx, spec, step.instruction, ap); err != nil {
				return err
			}
		}
		var err error
		if res, err = m.runAgent(ctx, ap, step.instruction); err != nil {
			return err
		}
		ap.Dirty = true
		oomKilled, err = m.endAgentPhase(ctx, ap)
		return err
	})
	a.recordAgent(res, oomKilled, err)
	return res, err
}

// startAgent starts the agent's container, the work dir (and a command
// agent's instruction) mounted, in main's place among the services and
// behind the egress gateway when a phase is an allowlist, and waits for
// its healthcheck.
func (m *nativeTrial) startAgent(ctx context.Context, spec sandbox.ContainerSpec, instruction string, ap *agent.Session) error {
	a, t := m.a, m.a.t
	spec.Name = "agent-" + t.ID
	spec.User = t.Task.Config.Agent.User
	spec.Network = m.net.AgentNet
	spec.Service = m.net.NativeService()
	var err error
	if spec.NetworkOf, err = m.net.Gateway(ctx, spec.Service); err != nil {
		return err
	}
	if m.wd != nil {
		spec.Mounts = append(spec.Mounts, sandbox.Mount{HostPath: m.wd.Host, ContainerPath: m.wd.Container})
	}
	if t.Variant.Agent == suite.AgentCommand {
		trajectory, err := t.Task.Trajectory()
		if err != nil {
			return err
		}
		mount, err := agent.InstructionMount(a.scratch, instruction, trajectory)
		if err != nil {
			return err
		}
		spec.Mounts = append(spec.Mounts, mount)
	}
	if m.ask != nil {
		spec.Mounts = append(spec.Mounts, sandbox.Mount{HostPath: m.ask.dir, ContainerPath: agent.AskDir})
		ap.Env = append(ap.Env, agent.EnvAskDir+"="+agent.AskDir)
	}
	ap.Container, err = a.startMain(ctx, spec, "the agent's container", spec.Workdir, func() bool { return ap.Dirty }, nil)
	return err
}

// runAgent runs the agent while the question channel, when the task has
// one, answers it: a question that needs input ends the agent's phase at
// once (its container is killed), and the trial is not graded.
func (m *nativeTrial) runAgent(ctx context.Context, ap *agent.Session, instruction string) (agent.Result, error) {
	if m.ask == nil {
		return ap.Run(ctx, instruction)
	}
	actx, stop := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		m.ask.watch(actx, stop)
	}()
	res, err := ap.Run(actx, instruction)
	stop()
	<-watched
	asked, needs := m.ask.result()
	m.a.res.Questions = asked
	if needs == nil || ctx.Err() != nil {
		return res, err
	}
	m.a.res.NeedsInput = needs
	m.a.s.Report.Note(m.a.t, fmt.Sprintf("needs input: the agent asked %q (%s); not graded", needs.Question, needs.Reason))
	// The phase ended on the channel's word, not the agent's failure.
	return agent.Result{Steps: res.Steps, Replayed: res.Replayed, Events: res.Events}, nil
}

// endAgentPhase stops the agent's container, so that no process of the
// phase outlives it, and gives what it wrote to the run's owner with no
// set-id bit left. It reports whether the kernel killed a process of the
// container for its memory limit.
func (m *nativeTrial) endAgentPhase(ctx context.Context, ap *agent.Session) (oomKilled bool, err error) {
	a, s := m.a, m.a.s
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
	if s.Owner.UID == 0 && ap.Host != "" {
		// Nothing is handed back to root, and handing back is what clears
		// setuid and setgid bits; clear them on the host instead.
		if err := grader.ClearSetID(ap.Host); err != nil {
			return oomKilled, fmt.Errorf("clear setuid bits in %s: %w", ap.Host, err)
		}
	}
	return oomKilled, ap.HandBack(ctx)
}

// inspectPhase: nothing of the agent's outlives its stopped container.
func (m *nativeTrial) inspectPhase(context.Context, *stepRun, agent.Result) (func(), error) {
	return func() {}, nil
}

// evidence reads the change from the host work dir, with what was asked.
func (m *nativeTrial) evidence(ctx context.Context, ag agent.Result) *grader.Evidence {
	var asked []grader.Event
	if m.ask != nil {
		asked = m.ask.events()
	}
	return m.a.workdirEvidence(ctx, m.wd, ag, asked)
}

// grade grades from the pristine task image with the work dir mounted, on
// the services' network when the task has services.
func (m *nativeTrial) grade(ctx context.Context, step *stepRun) (grader.Grade, error) {
	a := m.a
	req := a.gradeRequest(m.img.Ref, m.base.Workdir, step)
	req.Service = m.net.NativeGraderService()
	if m.wd != nil {
		req.WorkDir = m.wd.Host
	}
	return grader.Run(ctx, a.s.Engine, req)
}
