package trial

import (
	"context"
	"fmt"
	"strings"

	"github.com/flightdeck/flightdeck/internal/hostenv"
	"github.com/flightdeck/flightdeck/runner/harbor"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/tasks"
)

// trialNet is what a trial has around its task's container, in either
// model: each phase's network policy, a multi-container task's services
// and an egress gateway for an allowlist phase.
type trialNet struct {
	a *trialAttempt
	// native: a flightdeck-native trial, whose grade runs in a fresh
	// container that reaches the trial's services and nothing else.
	native    bool
	agentNet  bool
	graderNet bool
	agentPol  harbor.Policy
	graderPol harbor.Policy
	// service is main's place among a multi-container task's services;
	// nil for a single-container task.
	service *sandbox.ServiceSpec
	// compose is what a multi-container task's services left: their
	// network, volumes and containers.
	compose *composeTrial
	// composeFile is a multi-container task's compose file, loaded.
	composeFile *tasks.Compose
	// egress is the trial's egress gateway, when a phase is an allowlist.
	egress *egressGate
}

// newTrialNet decides each phase's network policy and loads a
// multi-container task's compose file. A native task's grade never has a
// network of its own.
func newTrialNet(a *trialAttempt, native bool) (*trialNet, error) {
	n := &trialNet{a: a, native: native}
	task := a.t.Task
	var err error
	if n.agentPol, err = harbor.PolicyFor(task.Config, harbor.NetAgent); err != nil {
		return nil, fmt.Errorf("%s: %w", task.Path(tasks.TaskFile), err)
	}
	if native || a.t.Variant.VerifierOffline {
		n.graderPol = harbor.Policy{Mode: harbor.NetworkNone}
	} else if n.graderPol, err = harbor.PolicyFor(task.Config, harbor.NetVerifier); err != nil {
		return nil, fmt.Errorf("%s: %w", task.Path(tasks.TaskFile), err)
	}
	n.agentNet, n.graderNet = n.agentPol.Online(), n.graderPol.Online()
	if task.ComposePath() == "" {
		return n, nil
	}
	if n.composeFile, err = LoadCompose(task); err != nil {
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

// nativeService is main's place among a native trial's services (nil
// without any): the agent's container and the grading container join the
// services' network under main's names, each with flightdeck's keep-alive
// as its command, as a native container always has.
func (n *trialNet) nativeService() *sandbox.ServiceSpec {
	if n.service == nil {
		return nil
	}
	svc := *n.service
	svc.Entrypoint, svc.Cmd = []string{"sleep", "infinity"}, []string{}
	return &svc
}

// nativeGraderService is the grading container's place among a native
// trial's services: main's, without main's names when the egress gateway
// holds them.
func (n *trialNet) nativeGraderService() *sandbox.ServiceSpec {
	svc := n.nativeService()
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

// join starts a multi-container task's other services, which main may
// depend on, and puts main among them: the compose file's env under the
// task's (as Harbor's env file comes after the task's compose file), and
// its binds. A single-container task has nothing to join.
func (n *trialNet) join(ctx context.Context, spec *sandbox.ContainerSpec) error {
	service, binds, env, err := n.startServices(ctx)
	if err != nil {
		return err
	}
	if service != nil {
		n.service = service
		n.a.s.Report.Phase(n.a.t, PhaseAgent)
		spec.Env = append(env, spec.Env...)
		spec.Mounts = append(spec.Mounts, binds...)
	}
	return nil
}
