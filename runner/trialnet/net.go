package trialnet

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/flightdeck/flightdeck/internal/hostenv"
	"github.com/flightdeck/flightdeck/runner/harbor"
	"github.com/flightdeck/flightdeck/runner/images"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/tasks"
)

// Package trialnet is what a trial has around its task's container, in
// either container model: each phase's network policy, a multi-container
// task's services (compose.go) and an egress gateway for an allowlist
// phase (egress.go). It knows of the trial only what Trial gives it.

// Trial is what the network knows of its trial.
type Trial struct {
	Engine  sandbox.Engine
	RunID   string
	TrialID string
	Task    *tasks.Task
	// Native: a flightdeck-native trial, whose grade runs in a fresh
	// container that reaches the trial's services and nothing else.
	Native bool
	// VerifierOffline runs the verifier with no network, whatever the
	// task says (task verify's check that it needs none).
	VerifierOffline bool
	// Dir is the trial's dir (services/ and the gateway's build log go
	// there); Scratch its runner-only dir.
	Dir, Scratch string
	Keep         bool // leave the networks and volumes in place
	Images       *images.Set
	Multiplier   suite.Multipliers
	// Phase says the trial is in a phase of its own ("services").
	Phase func(name string)
	// Note says something of the trial on its line (nil: nothing): a
	// network that waits for a subnet says why.
	Note func(msg string)
	// Defer registers a cleanup, run when the trial ends, last first.
	Defer func(func(context.Context) error)
	// Remove is the cleanup that removes a container of the trial's (kept
	// under Keep).
	Remove func(id string) func(context.Context) error
}

// Net is a trial's network: the phases' policies, its services and its
// gateway.
type Net struct {
	tr        Trial
	AgentNet  bool // the agent's phase has a network
	GraderNet bool // the verifier's phase has one
	AgentPol  harbor.Policy
	GraderPol harbor.Policy
	// Service is main's place among a multi-container task's services;
	// nil for a single-container task (and until Join).
	Service *sandbox.ServiceSpec
	// ComposeFile is a multi-container task's compose file, loaded.
	ComposeFile *tasks.Compose
	// Mapped are the image substitutions the services' images used.
	Mapped []string
	// compose is what a multi-container task's services left: their
	// network, volumes and containers.
	compose *composeTrial
	// egress is the trial's egress gateway, when a phase is an allowlist.
	egress *egressGate
	// online: main is on the engine's network now.
	online bool
}

// New decides each phase's network policy and loads a multi-container
// task's compose file. A native task's grade never has a network of its
// own.
func New(tr Trial) (*Net, error) {
	n := &Net{tr: tr}
	task := tr.Task
	var err error
	if n.AgentPol, err = harbor.PolicyFor(task.Config, harbor.NetAgent); err != nil {
		return nil, fmt.Errorf("%s: %w", task.Path(tasks.TaskFile), err)
	}
	if tr.Native || tr.VerifierOffline {
		n.GraderPol = harbor.Policy{Mode: harbor.NetworkNone}
	} else if n.GraderPol, err = harbor.PolicyFor(task.Config, harbor.NetVerifier); err != nil {
		return nil, fmt.Errorf("%s: %w", task.Path(tasks.TaskFile), err)
	}
	n.AgentNet, n.GraderNet = n.AgentPol.Online(), n.GraderPol.Online()
	n.online = n.AgentNet
	if task.ComposePath() == "" {
		return n, nil
	}
	if n.ComposeFile, err = LoadCompose(task); err != nil {
		return nil, err
	}
	return n, nil
}

// LoadCompose loads a multi-container task's compose file, its variables
// from the task's [environment].env.
func LoadCompose(task *tasks.Task) (*tasks.Compose, error) {
	env, err := harbor.TaskEnv(task, "[environment].env", task.Config.Environment.Env, hostenv.Lookup)
	if err != nil {
		return nil, err
	}
	return task.LoadCompose(envVars(env))
}

// NativeService is main's place among a native trial's services (nil
// without any): the agent's container and the grading container join the
// services' network under main's names, each with flightdeck's keep-alive
// as its command, as a native container always has.
func (n *Net) NativeService() *sandbox.ServiceSpec {
	if n.Service == nil {
		return nil
	}
	svc := *n.Service
	svc.Entrypoint, svc.Cmd = []string{"sleep", "infinity"}, []string{}
	return &svc
}

// NativeGraderService is the grading container's place among a native
// trial's services: main's, without main's names when the egress gateway
// holds them.
func (n *Net) NativeGraderService() *sandbox.ServiceSpec {
	svc := n.NativeService()
	if svc != nil && n.egress != nil {
		svc.Aliases, svc.Hostname = nil, ""
	}
	return svc
}

// envVars makes "K=V" pairs a map.
func envVars(env []string) map[string]string {
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	return vars
}

// Join starts a multi-container task's other services, which main may
// depend on, and puts main among them: the compose file's env under the
// task's (as Harbor's env file comes after the task's compose file), and
// its binds. A single-container task has nothing to join.
func (n *Net) Join(ctx context.Context, spec *sandbox.ContainerSpec) error {
	service, binds, env, err := n.startServices(ctx)
	if err != nil {
		return err
	}
	if service != nil {
		n.Service = service
		n.tr.Phase("agent")
		spec.Env = append(env, spec.Env...)
		for _, b := range binds {
			// main has the trial's log dirs mounted already (Harbor's
			// mounts); the file binding them there too is the same mount.
			if !slices.ContainsFunc(spec.Mounts, func(m sandbox.Mount) bool { return m.ContainerPath == b.ContainerPath }) {
				spec.Mounts = append(spec.Mounts, b)
			}
		}
	}
	return nil
}

// Enter gives main the network of the agent's phase (forAgent) or the
// verifier's: the gateway's policy for it, or the engine's network on or
// off.
func (n *Net) Enter(ctx context.Context, container string, forAgent bool) error {
	who, pol, online := "the verifier", n.GraderPol, n.GraderNet
	if forAgent {
		who, pol, online = "the agent", n.AgentPol, n.AgentNet
	}
	if n.egress != nil {
		if !samePolicy(pol, n.egress.applied) {
			return n.applyPolicy(ctx, pol)
		}
		return nil
	}
	if online != n.online {
		if err := n.tr.Engine.SetNetwork(ctx, container, online); err != nil {
			return fmt.Errorf("give %s its network: %w", who, err)
		}
		n.online = online
	}
	return nil
}

// networkSpec is the spec of one of the trial's networks.
func (n *Net) networkSpec(internal bool) sandbox.NetworkSpec {
	return sandbox.NetworkSpec{RunID: n.tr.RunID, TrialID: n.tr.TrialID, Internal: internal, Waiting: n.tr.Note}
}

// NeedsNetwork reports whether a trial of task creates a network of its
// own: its services' (a compose file) or an egress gateway's (an
// allowlist in a phase).
func NeedsNetwork(task *tasks.Task) bool {
	if task.ComposePath() != "" {
		return true
	}
	for _, phase := range []string{harbor.NetAgent, harbor.NetVerifier} {
		if p, err := harbor.PolicyFor(task.Config, phase); err == nil && p.Mode == harbor.NetworkAllowlist {
			return true
		}
	}
	return false
}
