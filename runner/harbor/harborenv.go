package harbor

import (
	"fmt"
	"regexp"
	"sort"
	"time"

	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/tasks"
)

// Harbor's task-level rules that need no engine: env templating, the
// network decision per phase, and timeouts. docs/harbor.md describes them.

// Harbor's network modes ([environment].network_mode, [agent].network_mode,
// [verifier].network_mode).
const (
	NetworkPublic    = "public"
	NetworkNone      = "no-network"
	NetworkAllowlist = "allowlist"
)

// The phases NetworkFor decides for.
const (
	NetAgent    = "agent"
	NetVerifier = "verifier"
)

// envTemplate is Harbor's template: the WHOLE value is ${NAME} or
// ${NAME:-default}. A value with anything around the braces is a literal,
// as it is for Harbor.
var envTemplate = regexp.MustCompile(`^\$\{([^}:]+)(?::-(.*))?\}$`)

// resolveEnv resolves a task.toml env table ([environment].env,
// [verifier].env or [solution].env) as Harbor does: a value that is exactly
// ${VAR} takes the host's VAR, ${VAR:-default} takes VAR when the host sets
// it (even to "") and default otherwise, and any other value is a literal.
// A template whose variable the host does not set and that has no default is
// an error naming the key and the variable. The result is KEY=VALUE entries
// sorted by key.
func resolveEnv(env map[string]string, lookup func(string) (string, bool)) ([]string, error) {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		v := env[k]
		if m := envTemplate.FindStringSubmatchIndex(v); m != nil {
			name := v[m[2]:m[3]]
			val, ok := lookup(name)
			switch {
			case ok:
				v = val
			case m[4] >= 0: // ":-" was given, possibly with an empty default
				v = v[m[4]:m[5]]
			default:
				return nil, fmt.Errorf("env key %s: the host variable %s is not set (write ${%s:-default} to give a default)", k, name, name)
			}
		}
		out = append(out, k+"="+v)
	}
	return out, nil
}

// Policy is a phase's network: public, none, or an allowlist of hosts
// (hostnames, *.wildcards, IPv4/IPv6 addresses and CIDRs).
type Policy struct {
	Mode  string
	Hosts []string
}

// Online reports whether the phase has the whole network.
func (p Policy) Online() bool { return p.Mode == NetworkPublic }

// PolicyFor is a phase's ("agent" or "verifier") network policy. The
// task's baseline is [environment].network_mode, else "no-network" when
// the deprecated allow_internet is false, else an allowlist when
// [environment].allowed_hosts is set, else "public"; the phase's own
// network_mode (or its allowed_hosts, meaning an allowlist) replaces it for
// that phase. An allowlist's hosts are the phase's allowed_hosts, else the
// environment's. An unknown mode is an error naming the key.
func PolicyFor(cfg tasks.Config, phase string) (Policy, error) {
	var key, mode string
	var hosts []string
	switch phase {
	case NetAgent:
		key, mode, hosts = "[agent].network_mode", cfg.Agent.NetworkMode, cfg.Agent.AllowedHosts
	case NetVerifier:
		key, mode, hosts = "[verifier].network_mode", cfg.Verifier.NetworkMode, cfg.Verifier.AllowedHosts
	default:
		return Policy{}, fmt.Errorf("network for phase %q: want %q or %q", phase, NetAgent, NetVerifier)
	}
	switch {
	case mode != "":
	case len(hosts) > 0:
		// allowed_hosts without a mode make the phase an allowlist.
		key, mode = "["+phase+"].allowed_hosts", NetworkAllowlist
	default:
		key, mode = baselineNetwork(cfg.Environment)
	}
	switch mode {
	case NetworkPublic, NetworkNone:
		return Policy{Mode: mode}, nil
	case NetworkAllowlist:
		if len(hosts) == 0 {
			hosts = cfg.Environment.AllowedHosts
		}
		return Policy{Mode: mode, Hosts: hosts}, nil
	}
	return Policy{}, fmt.Errorf("%s = %q: unknown network mode; want %q, %q or %q", key, mode, NetworkPublic, NetworkNone, NetworkAllowlist)
}

// NetworkFor reports whether a phase gets the whole network (PolicyFor's
// mode is public).
func NetworkFor(cfg tasks.Config, phase string) (bool, error) {
	p, err := PolicyFor(cfg, phase)
	return p.Online(), err
}

// baselineNetwork is the task's baseline network mode and the key it came from.
func baselineNetwork(env tasks.EnvConfig) (key, mode string) {
	switch {
	case env.NetworkMode != "":
		return "[environment].network_mode", env.NetworkMode
	case env.AllowInternet != nil && !*env.AllowInternet:
		return "[environment].allow_internet", NetworkNone
	case len(env.AllowedHosts) > 0:
		// Harbor reads allowed_hosts without a mode as an allowlist.
		return "[environment].allowed_hosts", NetworkAllowlist
	}
	return "[environment].network_mode", NetworkPublic
}

// Timeouts are a Harbor task's timeouts after the multipliers, as
// Harbor computes them: the agent's [agent].timeout_sec (0 when the task
// sets none: no limit), the verifier's [verifier].timeout_sec (default
// 600 s) and the build's [environment].build_timeout_sec (default 600 s),
// each times its multiplier. A multiplier of 0 counts as 1.
func Timeouts(cfg tasks.Config, mult suite.Multipliers) (agent, verifier, build time.Duration) {
	t := &tasks.Task{Config: cfg}
	if d, ok := t.AgentTimeout(); ok {
		agent = scale(d, mult.Agent)
	}
	return agent, scale(t.VerifierTimeout(), mult.Verifier), scale(t.BuildTimeout(), mult.Build)
}

// StepTimeouts are a step's agent and verifier timeouts after the
// multipliers: the step's own where it sets one, else the task's (as
// Timeouts gives them).
func StepTimeouts(cfg tasks.Config, step tasks.StepConfig, mult suite.Multipliers) (agent, verifier time.Duration) {
	agent, verifier, _ = Timeouts(cfg, mult)
	if step.Agent.TimeoutSec != nil {
		agent = scale(seconds(*step.Agent.TimeoutSec), mult.Agent)
	}
	if step.Verifier.TimeoutSec != nil {
		verifier = scale(seconds(*step.Verifier.TimeoutSec), mult.Verifier)
	}
	return agent, verifier
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func scale(d time.Duration, m float64) time.Duration {
	if m <= 0 {
		m = 1
	}
	return time.Duration(float64(d) * m)
}
