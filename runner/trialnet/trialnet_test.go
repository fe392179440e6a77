package trialnet

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/runner/harbor"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/tasks"
)

// New decides each phase's policy from task.toml as Harbor does; a native
// trial's grade and an offline verifier get none, whatever the task says.
func TestNewPolicies(t *testing.T) {
	public := harbor.Policy{Mode: harbor.NetworkPublic}
	none := harbor.Policy{Mode: harbor.NetworkNone}
	allow := func(hosts ...string) harbor.Policy { return harbor.Policy{Mode: harbor.NetworkAllowlist, Hosts: hosts} }
	tests := []struct {
		name             string
		net              network
		native, offline  bool
		agent, grader    harbor.Policy
		agentNet, grdNet bool
	}{
		{name: "default public", agent: public, grader: public, agentNet: true, grdNet: true},
		{name: "no network", net: network{env: `network_mode = "no-network"`}, agent: none, grader: none},
		{name: "allow_internet false", net: network{env: "allow_internet = false"}, agent: none, grader: none},
		{name: "agent offline", net: network{agent: `network_mode = "no-network"`}, agent: none, grader: public, grdNet: true},
		{name: "baseline allowlist", net: network{env: `allowed_hosts = ["example.com"]`},
			agent: allow("example.com"), grader: allow("example.com")},
		{name: "agent's own allowlist", net: network{agent: `allowed_hosts = ["pypi.org", "10.0.0.0/8"]`},
			agent: allow("pypi.org", "10.0.0.0/8"), grader: public, grdNet: true},
		{name: "native grade has none", native: true, agent: public, grader: none, agentNet: true},
		{name: "verifier offline", offline: true, agent: public, grader: none, agentNet: true},
		{name: "offline over an allowlist", offline: true, net: network{verifier: `allowed_hosts = ["example.com"]`},
			agent: public, grader: none, agentNet: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, writeTask(t, tt.net, "", nil))
			h.trial.Native, h.trial.VerifierOffline = tt.native, tt.offline
			n := h.net(t)
			assert.Equal(t, tt.agent, n.AgentPol)
			assert.Equal(t, tt.grader, n.GraderPol)
			assert.Equal(t, tt.agentNet, n.AgentNet)
			assert.Equal(t, tt.grdNet, n.GraderNet)
			assert.Nil(t, n.ComposeFile, "a single-container task")
			assert.Empty(t, h.fake.Calls(), "New makes nothing")
		})
	}
}

// A mode New cannot run is an error naming task.toml and the key; a
// native trial never reads the verifier's.
func TestNewUnknownMode(t *testing.T) {
	tests := []struct {
		name    string
		cfg     func(*tasks.Config)
		native  bool
		wantErr string // "" for none
	}{
		{name: "agent", cfg: func(c *tasks.Config) { c.Agent.NetworkMode = "bridge" }, wantErr: `[agent].network_mode = "bridge": unknown network mode`},
		{name: "verifier", cfg: func(c *tasks.Config) { c.Verifier.NetworkMode = "host" }, wantErr: `[verifier].network_mode = "host": unknown network mode`},
		{name: "environment", cfg: func(c *tasks.Config) { c.Environment.NetworkMode = "bridge" }, wantErr: `[environment].network_mode = "bridge"`},
		{name: "native ignores the verifier's", cfg: func(c *tasks.Config) { c.Verifier.NetworkMode = "host" }, native: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task := &tasks.Task{ID: "lit", Dir: t.TempDir()}
			tt.cfg(&task.Config)
			h := newHarness(t, task)
			h.trial.Native = tt.native
			n, err := New(h.trial)
			if tt.wantErr == "" {
				require.NoError(t, err)
				assert.Equal(t, harbor.NetworkNone, n.GraderPol.Mode)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), filepath.Join(task.Dir, tasks.TaskFile)+": ")
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.Nil(t, n)
		})
	}
}

// A single-container task has nothing to join and no place among
// services: Join changes nothing and touches no engine.
func TestSingleContainerJoin(t *testing.T) {
	h := newHarness(t, writeTask(t, network{}, "", nil))
	n := h.net(t)
	spec := sandbox.ContainerSpec{Env: []string{"A=1"}, Mounts: []sandbox.Mount{{HostPath: "/h", ContainerPath: "/c"}}}
	require.NoError(t, n.Join(t.Context(), &spec))
	assert.Equal(t, []string{"A=1"}, spec.Env)
	assert.Len(t, spec.Mounts, 1)
	assert.Nil(t, n.Service)
	assert.Nil(t, n.NativeService())
	assert.Nil(t, n.NativeGraderService())
	assert.Nil(t, n.SnapshotService())
	assert.Empty(t, n.ServiceContainer("main"))
	gw, err := n.Gateway(t.Context(), nil)
	require.NoError(t, err)
	assert.Empty(t, gw, "no allowlist: no gateway")
	gw, err = n.GraderGateway(t.Context())
	require.NoError(t, err)
	assert.Empty(t, gw)
	assert.Empty(t, h.phases, "no services phase")
	assert.Empty(t, h.fake.Calls())
	assert.Empty(t, h.cleanups)
}

// Without a gateway, Enter switches main's engine network only when the
// phase's differs from what main has.
func TestEnterWithoutGateway(t *testing.T) {
	type step struct {
		forAgent bool
		online   bool // main's network after Enter
	}
	tests := []struct {
		name     string
		net      network
		steps    []step
		switches int // SetNetwork calls
	}{
		{name: "public throughout", steps: []step{{true, true}, {false, true}, {true, true}}},
		{name: "offline throughout", net: network{env: `network_mode = "no-network"`},
			steps: []step{{true, false}, {false, false}}},
		{name: "offline agent, online verifier", net: network{agent: `network_mode = "no-network"`},
			steps: []step{{true, false}, {false, true}, {false, true}, {true, false}}, switches: 2},
		{name: "online agent, offline verifier", net: network{verifier: `network_mode = "no-network"`},
			steps: []step{{true, true}, {false, false}}, switches: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, writeTask(t, tt.net, "", nil))
			n := h.net(t)
			c, err := h.fake.Start(t.Context(), sandbox.ContainerSpec{Network: n.AgentNet})
			require.NoError(t, err)
			before := len(h.fake.Calls())
			for i, s := range tt.steps {
				require.NoError(t, n.Enter(t.Context(), c.ID, s.forAgent), "step %d", i)
				assert.Equal(t, s.online, h.fake.Containers()[0].Online, "step %d: main online", i)
			}
			switches := 0
			for _, call := range h.callsSince(before) {
				assert.Equal(t, "SetNetwork "+c.ID, call)
				switches++
			}
			assert.Equal(t, tt.switches, switches)
		})
	}
}

// An engine that cannot switch main's network fails Enter naming the
// phase, and the next Enter tries again.
func TestEnterSetNetworkFails(t *testing.T) {
	h := newHarness(t, writeTask(t, network{agent: `network_mode = "no-network"`}, "", nil))
	n := h.net(t)
	c, err := h.fake.Start(t.Context(), sandbox.ContainerSpec{})
	require.NoError(t, err)
	boom := errors.New("boom")
	h.fake.Fail = func(method, _ string) error {
		if method == "SetNetwork" {
			return boom
		}
		return nil
	}
	err = n.Enter(t.Context(), c.ID, false)
	require.ErrorIs(t, err, boom)
	assert.Contains(t, err.Error(), "give the verifier its network")
	h.fake.Fail = nil
	require.NoError(t, n.Enter(t.Context(), c.ID, false))
	assert.True(t, h.fake.Containers()[0].Online, "the retry switched it")
}

// The compose file's variables come from the task's [environment].env;
// one the host does not set fails New naming the key.
func TestLoadComposeEnv(t *testing.T) {
	compose := "services:\n  cache:\n    image: redis:7\n    environment:\n      PORT: ${CACHE_PORT}\n"
	task := writeTask(t, network{}, compose, nil)
	task.Config.Environment.Env = map[string]string{"CACHE_PORT": "6380"}
	c, err := LoadCompose(task)
	require.NoError(t, err)
	require.Len(t, c.Services, 1)
	assert.Equal(t, []string{"PORT=6380"}, c.Services[0].Env)

	task.Config.Environment.Env = map[string]string{"CACHE_PORT": "${FLIGHTDECK_TRIALNET_TEST_UNSET}"}
	h := newHarness(t, task)
	_, err = New(h.trial)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CACHE_PORT")
	assert.Contains(t, err.Error(), "FLIGHTDECK_TRIALNET_TEST_UNSET")
}

// A compose file flightdeck refuses fails New, naming the file.
func TestNewRefusedCompose(t *testing.T) {
	task := writeTask(t, network{}, "services:\n  cache:\n    image: redis:7\n", nil)
	path := task.Path(tasks.EnvironmentDir, "docker-compose.yaml")
	require.NoError(t, os.WriteFile(path, []byte("services:\n  cache:\n    image: redis:7\n    privileged: true\n"), 0o644))
	h := newHarness(t, task)
	_, err := New(h.trial)
	require.Error(t, err)
	assert.Contains(t, err.Error(), path)
	assert.Contains(t, err.Error(), "privileged")
}

func TestEnvVars(t *testing.T) {
	tests := []struct {
		in   []string
		want map[string]string
	}{
		{in: nil, want: map[string]string{}},
		{in: []string{"A=1", "B=x=y", "C=", "D"}, want: map[string]string{"A": "1", "B": "x=y", "C": "", "D": ""}},
		{in: []string{"A=1", "A=2"}, want: map[string]string{"A": "2"}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, envVars(tt.in), "%q", tt.in)
	}
}
