package trialnet

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/flightdeck/flightdeck/internal/text"
	"github.com/flightdeck/flightdeck/runner/harbor"
	"github.com/flightdeck/flightdeck/runner/images"
	"github.com/flightdeck/flightdeck/sandbox"
)

// A trial with an allowlist phase runs behind an egress gateway: a
// container of flightdeck's own, with CAP_NET_ADMIN, whose network
// namespace the task's container joins (without that capability). The
// gateway's nftables rules and its dnsmasq decide what the task's
// container reaches and resolves in each phase (egress.sh); nothing in the
// task's container can change them. The gateway is on the trial's own
// network, under the task container's names.

//go:embed egress.sh
var egressScript string

// egressDockerfile is the gateway's image: the offline base with
// Debian's dnsmasq and nftables.
const egressDockerfile = "FROM " + images.Fallback + "\n" +
	"RUN apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends dnsmasq nftables >/dev/null && rm -rf /var/lib/apt/lists/*\n"

// egressBuildLog is the gateway image's build output, when it was built.
const egressBuildLog = "egress-build.log"

// egressGate is a trial's gateway.
type egressGate struct {
	id      string
	applied harbor.Policy // the policy in force
	network string        // the trial's network, which it is on
	aliases []string      // main's names there
}

// egressNeeded reports whether a phase of the trial is an allowlist.
func (n *Net) egressNeeded() bool {
	return n.AgentPol.Mode == harbor.NetworkAllowlist || n.GraderPol.Mode == harbor.NetworkAllowlist
}

// startEgress builds (once, cached by content) and starts the trial's
// Gateway on network under aliases, and applies the agent's policy. On a
// network with no route out, the gateway gets the engine's default
// network besides, for its own.
func (n *Net) startEgress(ctx context.Context, network string, aliases []string, routeOut bool) error {
	s := &n.tr
	dir, err := os.MkdirTemp(n.tr.Scratch, "egress-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(egressDockerfile), 0o644); err != nil {
		return err
	}
	img, err := s.Engine.EnsureImage(ctx, sandbox.BuildSpec{
		Name: "egress", ContextDir: dir, Timeout: 10 * time.Minute, LogPath: filepath.Join(n.tr.Dir, egressBuildLog),
	})
	if err != nil {
		return fmt.Errorf("the egress gateway's image: %w", err)
	}
	if s.Images.Touch != nil {
		s.Images.Touch(img)
	}
	c, err := s.Engine.Start(ctx, sandbox.ContainerSpec{
		Image: img.Ref, Name: "egress-" + s.TrialID, RunID: s.RunID, TrialID: s.TrialID, NetAdmin: true,
		Network: routeOut,
		Labels:  map[string]string{sandbox.LabelPhase: "egress"},
		Service: &sandbox.ServiceSpec{NetworkName: network, Aliases: aliases, Cmd: []string{"sleep", "infinity"}},
	})
	if c.ID != "" {
		n.egress = &egressGate{id: c.ID}
		n.tr.Defer(n.tr.Remove(c.ID))
	}
	if err != nil {
		return fmt.Errorf("start the egress gateway: %w", err)
	}
	return n.applyPolicy(ctx, n.AgentPol)
}

// applyPolicy puts a phase's network policy in force in the gateway.
func (n *Net) applyPolicy(ctx context.Context, p harbor.Policy) error {
	mode := p.Mode
	if mode == harbor.NetworkNone {
		mode = "none"
	}
	log := filepath.Join(n.tr.Scratch, "egress.log")
	cmd := append([]string{"sh", "-c", egressScript, "egress.sh", mode}, p.Hosts...)
	res, err := n.tr.Engine.Exec(ctx, n.egress.id, sandbox.ExecSpec{Cmd: cmd, User: "0", StdoutPath: log, Timeout: time.Minute})
	if err == nil && (res.TimedOut || res.ExitCode != 0) {
		out, _ := os.ReadFile(log)
		err = fmt.Errorf("exit %d: %s", res.ExitCode, text.LastLines(string(out), 5))
	}
	if err != nil {
		return fmt.Errorf("apply the %s network policy in the egress gateway: %w", p.Mode, err)
	}
	n.egress.applied = p
	return nil
}

// samePolicy reports whether two policies allow the same.
func samePolicy(a, b harbor.Policy) bool {
	return a.Mode == b.Mode && slices.Equal(a.Hosts, b.Hosts)
}

// Gateway starts the trial's egress gateway when a phase is an allowlist,
// and returns its container, which main joins ("" without one). It takes
// main's place on the services' network (service, nil for a
// single-container task), else on a network of its own.
func (n *Net) Gateway(ctx context.Context, service *sandbox.ServiceSpec) (string, error) {
	if !n.egressNeeded() {
		return "", nil
	}
	s := &n.tr
	network, aliases, routeOut := "", []string{"main"}, false
	if service != nil {
		network, aliases, routeOut = service.NetworkName, service.Aliases, n.compose.internal
		service.NetworkName = ""
	} else {
		name, err := s.Engine.CreateNetwork(ctx, n.networkSpec(false))
		if err != nil {
			return "", fmt.Errorf("the egress gateway's network: %w", err)
		}
		network = name
		n.tr.Defer(func(cctx context.Context) error {
			if s.Keep {
				return nil
			}
			return s.Engine.RemoveNetwork(cctx, name)
		})
	}
	if err := n.startEgress(ctx, network, aliases, routeOut); err != nil {
		return "", err
	}
	n.egress.network, n.egress.aliases = network, aliases
	return n.egress.id, nil
}

// SnapshotService is main's place among the trial's services for a grade
// in a fresh container (a snapshot): main's own, or, behind an egress
// gateway, the trial's network under main's names when the verifier's
// phase is public, main's own behind the gateway when it is an allowlist
// (graderGateway), and none when it has no network.
func (n *Net) SnapshotService() *sandbox.ServiceSpec {
	if n.egress == nil {
		return n.Service
	}
	switch n.GraderPol.Mode {
	case harbor.NetworkAllowlist:
		return n.Service
	case harbor.NetworkNone:
		return nil
	}
	svc := &sandbox.ServiceSpec{}
	if n.Service != nil {
		c := *n.Service
		svc = &c
	}
	svc.NetworkName, svc.Aliases = n.egress.network, n.egress.aliases
	return svc
}

// GraderGateway puts the verifier's allowlist in force on the trial's
// egress gateway for a grade in a fresh container (a snapshot, a separate
// verifier), which joins the gateway's network namespace as main did; ""
// when the verifier's phase is not an allowlist.
func (n *Net) GraderGateway(ctx context.Context) (string, error) {
	if n.egress == nil || n.GraderPol.Mode != harbor.NetworkAllowlist {
		return "", nil
	}
	if !samePolicy(n.GraderPol, n.egress.applied) {
		if err := n.applyPolicy(ctx, n.GraderPol); err != nil {
			return "", err
		}
	}
	return n.egress.id, nil
}
