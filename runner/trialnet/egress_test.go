package trialnet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/runner/harbor"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/sandbox/sandboxtest"
)

// A single-container task with an allowlist phase runs behind a gateway
// of its own network, built from the offline base, holding main's name;
// it applies each phase's policy as main enters it, and both are removed
// when the trial ends.
func TestGatewaySingleContainer(t *testing.T) {
	h := newHarness(t, writeTask(t, network{agent: `allowed_hosts = ["example.com", "*.pypi.org", "10.0.0.0/8"]`}, "", nil))
	var build sandbox.BuildSpec
	var dockerfile string
	h.fake.Build = func(spec sandbox.BuildSpec) (sandbox.Image, error) {
		build = spec
		b, err := os.ReadFile(filepath.Join(spec.ContextDir, "Dockerfile"))
		dockerfile = string(b)
		return sandbox.Image{Ref: "flightdeck/egress:abc"}, err
	}
	n := h.net(t)
	gw, err := n.Gateway(t.Context(), nil)
	require.NoError(t, err)

	c := egressContainer(h.fake)
	require.NotNil(t, c)
	assert.Equal(t, c.ID, gw)
	assert.Equal(t, []sandbox.NetworkSpec{{RunID: testRun, TrialID: testTrial}}, h.eng.networks, "a network of the gateway's, with a route out")
	assert.Equal(t, "egress", build.Name)
	assert.Equal(t, egressDockerfile, dockerfile)
	assert.Equal(t, 10*time.Minute, build.Timeout)
	assert.Equal(t, filepath.Join(h.trial.Dir, egressBuildLog), build.LogPath)
	assert.NoDirExists(t, build.ContextDir, "the build's context is removed")
	assert.Equal(t, []string{"flightdeck/egress:abc"}, h.touched)

	assert.Equal(t, "flightdeck/egress:abc", c.Spec.Image)
	assert.Equal(t, "egress-"+testTrial, c.Spec.Name)
	assert.Equal(t, testRun, c.Spec.RunID)
	assert.Equal(t, testTrial, c.Spec.TrialID)
	assert.True(t, c.Spec.NetAdmin)
	assert.False(t, c.Spec.Network, "its own network has a route out")
	assert.Equal(t, map[string]string{sandbox.LabelPhase: "egress"}, c.Spec.Labels)
	assert.Equal(t, &sandbox.ServiceSpec{NetworkName: testNet, Aliases: []string{"main"}, Cmd: []string{"sleep", "infinity"}}, c.Spec.Service)

	require.Len(t, c.Execs, 1)
	e := c.Execs[0]
	assert.Equal(t, []string{"sh", "-c", egressScript, "egress.sh", "allowlist", "example.com", "*.pypi.org", "10.0.0.0/8"}, e.Cmd)
	assert.Equal(t, "0", e.User)
	assert.Equal(t, time.Minute, e.Timeout)
	assert.Equal(t, filepath.Join(h.trial.Scratch, "egress.log"), e.StdoutPath)

	// The phases: the agent's is in force already; the verifier's is
	// public, then the agent's again.
	for _, forAgent := range []bool{true, false, false, true} {
		require.NoError(t, n.Enter(t.Context(), "main-id", forAgent))
	}
	assert.Equal(t, []string{"allowlist example.com *.pypi.org 10.0.0.0/8", "public", "allowlist example.com *.pypi.org 10.0.0.0/8"}, egressModes(c))
	assert.NotContains(t, strings.Join(h.fake.Calls(), "\n"), "SetNetwork", "the gateway decides, not the engine's network")

	// A snapshot grade with a public verifier takes main's name on the
	// gateway's network; it needs no gateway.
	assert.Equal(t, &sandbox.ServiceSpec{NetworkName: testNet, Aliases: []string{"main"}}, n.SnapshotService())
	ggw, err := n.GraderGateway(t.Context())
	require.NoError(t, err)
	assert.Empty(t, ggw)

	h.cleanup(t)
	assert.Empty(t, h.fake.Live(), "the gateway is removed")
	assert.Equal(t, []string{testNet}, h.eng.removedNetworks)
}

// Under Keep the gateway's network stays.
func TestGatewayKeep(t *testing.T) {
	h := newHarness(t, writeTask(t, network{env: `allowed_hosts = ["example.com"]`}, "", nil))
	h.trial.Keep = true
	_, err := h.net(t).Gateway(t.Context(), nil)
	require.NoError(t, err)
	h.cleanup(t)
	assert.Empty(t, h.eng.removedNetworks)
}

// Which policy the gateway applies when, and what a grade in a fresh
// container gets, by the phases' policies.
func TestGatewayPhases(t *testing.T) {
	tests := []struct {
		name    string
		net     network
		offline bool
		// applied are the modes egress.sh ran with, in turn, over
		// Gateway, GraderGateway (a snapshot grade), Enter for the
		// verifier (a live grade) and GraderGateway again.
		applied []string
		grader  bool // GraderGateway returns the gateway
	}{
		{name: "agent allowlist, verifier none", net: network{agent: `allowed_hosts = ["a.example"]`, verifier: `network_mode = "no-network"`},
			applied: []string{"allowlist a.example", "none"}},
		{name: "verifier offline variant", offline: true, net: network{agent: `allowed_hosts = ["a.example"]`},
			applied: []string{"allowlist a.example", "none"}},
		{name: "agent public, verifier allowlist", net: network{verifier: `allowed_hosts = ["v.example"]`},
			applied: []string{"public", "allowlist v.example"}, grader: true},
		{name: "agent none, verifier allowlist", net: network{agent: `network_mode = "no-network"`, verifier: `allowed_hosts = ["v.example"]`},
			applied: []string{"none", "allowlist v.example"}, grader: true},
		{name: "one allowlist for both", net: network{env: `allowed_hosts = ["x.example"]`},
			applied: []string{"allowlist x.example"}, grader: true},
		{name: "two allowlists", net: network{agent: `allowed_hosts = ["a.example"]`, verifier: `allowed_hosts = ["v.example"]`},
			applied: []string{"allowlist a.example", "allowlist v.example"}, grader: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, writeTask(t, tt.net, "", nil))
			h.trial.VerifierOffline = tt.offline
			n := h.net(t)
			gw, err := n.Gateway(t.Context(), nil)
			require.NoError(t, err)
			require.NotEmpty(t, gw)
			c := egressContainer(h.fake)
			// A snapshot grade: the verifier's policy is put in force for it.
			ggw, err := n.GraderGateway(t.Context())
			require.NoError(t, err)
			if tt.grader {
				assert.Equal(t, gw, ggw)
				assert.Nil(t, n.SnapshotService(), "it joins the gateway: main's own place (none for a single container)")
			} else {
				assert.Empty(t, ggw)
				assert.Nil(t, n.SnapshotService(), "the verifier has no network")
			}
			// A live grade: main enters the verifier's phase; the policy
			// is in force once.
			require.NoError(t, n.Enter(t.Context(), "main-id", false))
			ggw2, err := n.GraderGateway(t.Context())
			require.NoError(t, err)
			assert.Equal(t, ggw, ggw2)
			assert.Equal(t, tt.applied, egressModes(c))
		})
	}
}

// A compose task's gateway takes main's place on the services' network:
// under main's names, with no network of its own; main joins it.
func TestGatewayCompose(t *testing.T) {
	compose := `services:
  main:
    hostname: app
    networks:
      default:
        aliases: [frontend]
  cache:
    image: redis:7
`
	tests := []struct {
		name     string
		verifier string
		snap     func(svc *sandbox.ServiceSpec) *sandbox.ServiceSpec // what SnapshotService is, from main's
	}{
		{name: "public verifier", snap: func(svc *sandbox.ServiceSpec) *sandbox.ServiceSpec {
			c := *svc
			c.NetworkName, c.Aliases = testNet, []string{"main", "frontend"}
			return &c
		}},
		{name: "allowlist verifier", verifier: `allowed_hosts = ["v.example"]`,
			snap: func(svc *sandbox.ServiceSpec) *sandbox.ServiceSpec { return svc }},
		{name: "offline verifier", verifier: `network_mode = "no-network"`,
			snap: func(*sandbox.ServiceSpec) *sandbox.ServiceSpec { return nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, writeTask(t, network{agent: `allowed_hosts = ["a.example"]`, verifier: tt.verifier}, compose, nil))
			n := h.net(t)
			spec := sandbox.ContainerSpec{}
			require.NoError(t, n.Join(t.Context(), &spec))
			require.NotNil(t, n.Service)
			assert.Equal(t, "app", n.Service.Hostname)
			// As the shared model does: main's place is n.Service.
			spec.Service = n.Service
			gw, err := n.Gateway(t.Context(), spec.Service)
			require.NoError(t, err)
			require.Len(t, h.eng.networks, 1, "the services' network only")
			assert.False(t, h.eng.networks[0].Internal, "behind the gateway it has a route out")
			c := egressContainer(h.fake)
			require.NotNil(t, c)
			assert.Equal(t, c.ID, gw)
			assert.Equal(t, testNet, c.Spec.Service.NetworkName)
			assert.Equal(t, []string{"main", "frontend"}, c.Spec.Service.Aliases, "the gateway holds main's names")
			assert.False(t, c.Spec.Network, "the network has a route out")
			assert.Empty(t, spec.Service.NetworkName, "main is on the gateway's network namespace, not the services' network")
			if want := tt.snap(n.Service); want == nil {
				assert.Nil(t, n.SnapshotService())
			} else {
				assert.Equal(t, want, n.SnapshotService())
			}
			h.cleanup(t)
			assert.Empty(t, h.fake.Live())
		})
	}
}

// A native trial's services' network has no route out: its gateway gets
// the engine's network besides, and the agent's container and the grade
// get keep-alive copies of main's place (the grade without main's names,
// which the gateway holds).
func TestGatewayNative(t *testing.T) {
	compose := `services:
  main:
    hostname: app
    entrypoint: ["/entry"]
    command: ["serve"]
  cache:
    image: redis:7
`
	h := newHarness(t, writeTask(t, network{env: `allowed_hosts = ["a.example"]`}, compose, nil))
	h.trial.Native = true
	n := h.net(t)
	require.NoError(t, n.Join(t.Context(), &sandbox.ContainerSpec{}))
	require.Len(t, h.eng.networks, 1)
	assert.True(t, h.eng.networks[0].Internal)
	main := *n.Service

	svc := n.NativeService()
	require.NotNil(t, svc)
	assert.Equal(t, []string{"sleep", "infinity"}, svc.Entrypoint)
	assert.NotNil(t, svc.Cmd, "an empty command, not the image's")
	assert.Empty(t, svc.Cmd)
	assert.Equal(t, testNet, svc.NetworkName)
	assert.Equal(t, []string{"main"}, svc.Aliases)
	assert.Equal(t, "app", svc.Hostname)
	assert.Equal(t, []string{"/entry"}, n.Service.Entrypoint, "main's own place is unchanged")
	assert.Equal(t, []string{"serve"}, n.Service.Cmd)
	grader := n.NativeGraderService()
	assert.Equal(t, []string{"main"}, grader.Aliases, "without a gateway the grade takes main's names")

	gw, err := n.Gateway(t.Context(), svc)
	require.NoError(t, err)
	c := egressContainer(h.fake)
	require.NotNil(t, c)
	assert.Equal(t, c.ID, gw)
	assert.True(t, c.Spec.Network, "the gateway alone gets a route out")
	assert.Equal(t, testNet, c.Spec.Service.NetworkName)
	assert.Empty(t, svc.NetworkName, "the agent's container joins the gateway")
	assert.Equal(t, main, *n.Service, "main's place is unchanged")

	grader = n.NativeGraderService()
	require.NotNil(t, grader)
	assert.Equal(t, testNet, grader.NetworkName, "the grade reaches the services")
	assert.Nil(t, grader.Aliases, "the gateway holds main's names")
	assert.Empty(t, grader.Hostname)
	assert.Equal(t, []string{"sleep", "infinity"}, grader.Entrypoint)
	ggw, err := n.GraderGateway(t.Context())
	require.NoError(t, err)
	assert.Empty(t, ggw, "a native grade has no network")
}

// What fails in starting the gateway or applying a policy fails Gateway
// (or Enter) saying so; a gateway made is removed all the same.
func TestGatewayFailures(t *testing.T) {
	tests := []struct {
		name    string
		fail    func(method, id string) error
		run     func(ctx context.Context, c *sandboxtest.Container, spec sandbox.ExecSpec) (sandbox.ExecResult, error)
		scratch string // replaces the trial's scratch dir when set
		wantErr []string
		made    int // gateways made
	}{
		{name: "network", fail: failOn("CreateNetwork", ""), wantErr: []string{"the egress gateway's network: CreateNetwork"}},
		{name: "image", fail: failOn("EnsureImage", ""), wantErr: []string{"the egress gateway's image: EnsureImage"}},
		{name: "start", fail: failOn("Start", ""), wantErr: []string{"start the egress gateway: Start"}},
		{name: "created, not started", fail: failOn("Start", "c1"), wantErr: []string{"start the egress gateway: Start"}, made: 1},
		{name: "exec", fail: failOn("Exec", "c1"), made: 1,
			wantErr: []string{"apply the allowlist network policy in the egress gateway: Exec"}},
		{name: "script fails", made: 1,
			run: func(_ context.Context, _ *sandboxtest.Container, spec sandbox.ExecSpec) (sandbox.ExecResult, error) {
				out := "one\ntwo\nthree\nfour\nfive\nsix\nnft: no such table\n"
				return sandbox.ExecResult{ExitCode: 2}, os.WriteFile(spec.StdoutPath, []byte(out), 0o644)
			},
			wantErr: []string{"apply the allowlist network policy in the egress gateway: exit 2: three\nfour\nfive\nsix\nnft: no such table"}},
		{name: "script times out", made: 1,
			run: func(context.Context, *sandboxtest.Container, sandbox.ExecSpec) (sandbox.ExecResult, error) {
				return sandbox.ExecResult{ExitCode: -1, TimedOut: true}, nil
			},
			wantErr: []string{"apply the allowlist network policy in the egress gateway: exit -1"}},
		{name: "no scratch dir", scratch: "missing", wantErr: []string{"missing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, writeTask(t, network{agent: `allowed_hosts = ["a.example"]`}, "", nil))
			if tt.scratch != "" {
				h.trial.Scratch = filepath.Join(h.trial.Scratch, tt.scratch)
			}
			h.fake.Fail, h.fake.Run = tt.fail, tt.run
			n := h.net(t)
			gw, err := n.Gateway(t.Context(), nil)
			require.Error(t, err)
			assert.Empty(t, gw)
			for _, want := range tt.wantErr {
				assert.Contains(t, err.Error(), want)
			}
			assert.Len(t, h.fake.Containers(), tt.made)
			h.fake.Fail = nil
			h.cleanup(t)
			assert.Empty(t, h.fake.Live(), "a gateway made is removed")
		})
	}
}

// A policy that cannot be applied when main enters a phase fails Enter
// and is tried again at the next.
func TestGatewayEnterFails(t *testing.T) {
	h := newHarness(t, writeTask(t, network{agent: `allowed_hosts = ["a.example"]`}, "", nil))
	n := h.net(t)
	_, err := n.Gateway(t.Context(), nil)
	require.NoError(t, err)
	boom := errors.New("boom")
	h.fake.Run = func(context.Context, *sandboxtest.Container, sandbox.ExecSpec) (sandbox.ExecResult, error) {
		return sandbox.ExecResult{}, boom
	}
	err = n.Enter(t.Context(), "main-id", false)
	require.ErrorIs(t, err, boom)
	assert.Contains(t, err.Error(), fmt.Sprintf("apply the %s network policy", harbor.NetworkPublic))
	h.fake.Run = nil
	require.NoError(t, n.Enter(t.Context(), "main-id", false))
	assert.Equal(t, []string{"allowlist a.example", "public", "public"}, egressModes(egressContainer(h.fake)))
}

func TestSamePolicy(t *testing.T) {
	allow := func(hosts ...string) harbor.Policy { return harbor.Policy{Mode: harbor.NetworkAllowlist, Hosts: hosts} }
	tests := []struct {
		a, b harbor.Policy
		want bool
	}{
		{allow("a"), allow("a"), true},
		{allow("a", "b"), allow("b", "a"), false},
		{allow("a"), allow("a", "b"), false},
		{allow(), harbor.Policy{Mode: harbor.NetworkAllowlist}, true},
		{harbor.Policy{Mode: harbor.NetworkPublic}, harbor.Policy{Mode: harbor.NetworkNone}, false},
		{harbor.Policy{Mode: harbor.NetworkNone}, harbor.Policy{Mode: harbor.NetworkNone}, true},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, samePolicy(tt.a, tt.b), "%v %v", tt.a, tt.b)
	}
}
