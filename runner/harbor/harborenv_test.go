package harbor

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/tasks"
)

func TestHarborEnvResolve(t *testing.T) {
	host := map[string]string{"API_KEY": "sk-1", "EMPTY": "", "GREETING": "howdy"}
	lookup := func(k string) (string, bool) { v, ok := host[k]; return v, ok }
	tests := []struct {
		name    string
		env     map[string]string
		want    []string
		wantErr []string // substrings of the error
	}{
		{name: "nil table", env: nil, want: []string{}},
		{name: "literal", env: map[string]string{"MODE": "fixture"}, want: []string{"MODE=fixture"}},
		{name: "template from host", env: map[string]string{"KEY": "${API_KEY}"}, want: []string{"KEY=sk-1"}},
		{name: "default unused when host sets it", env: map[string]string{"G": "${GREETING:-hello}"}, want: []string{"G=howdy"}},
		{name: "default when host lacks it", env: map[string]string{"G": "${FD_UNSET:-hello}"}, want: []string{"G=hello"}},
		{name: "empty default", env: map[string]string{"G": "${FD_UNSET:-}"}, want: []string{"G="}},
		{name: "default with colons and spaces", env: map[string]string{"U": "${FD_UNSET:-http://h:1/a b}"}, want: []string{"U=http://h:1/a b"}},
		{name: "set but empty wins over default", env: map[string]string{"E": "${EMPTY:-x}"}, want: []string{"E="}},
		{name: "embedded reference stays literal", env: map[string]string{"M": "a-${FD_UNSET}-b"}, want: []string{"M=a-${FD_UNSET}-b"}},
		{name: "two references stay literal", env: map[string]string{"M": "${API_KEY}${GREETING}"}, want: []string{"M=${API_KEY}${GREETING}"}},
		{name: "dollar without braces is literal", env: map[string]string{"M": "$API_KEY"}, want: []string{"M=$API_KEY"}},
		{name: "sorted by key", env: map[string]string{"B": "2", "A": "1", "C": "${GREETING}"}, want: []string{"A=1", "B=2", "C=howdy"}},
		{name: "missing names key and variable", env: map[string]string{"TOKEN": "${FD_MISSING_TOKEN}"}, wantErr: []string{"TOKEN", "FD_MISSING_TOKEN", "not set"}},
		{name: "first missing in key order", env: map[string]string{"Z": "${FD_Z}", "A": "${FD_A}"}, wantErr: []string{"env key A", "FD_A"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resolveEnv(tc.env, lookup)
			if tc.wantErr != nil {
				require.Error(t, err)
				for _, s := range tc.wantErr {
					assert.Contains(t, err.Error(), s)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func harborBool(b bool) *bool { return &b }

func TestHarborEnvNetwork(t *testing.T) {
	tests := []struct {
		name          string
		cfg           tasks.Config
		agent, verify bool
		agentErr      string // substring; "" means no error
		verifyErr     string
	}{
		{name: "default is public", agent: true, verify: true},
		{name: "baseline no-network applies to both",
			cfg:   tasks.Config{Environment: tasks.EnvConfig{NetworkMode: "no-network"}},
			agent: false, verify: false},
		{name: "allow_internet false means no-network",
			cfg:   tasks.Config{Environment: tasks.EnvConfig{AllowInternet: harborBool(false)}},
			agent: false, verify: false},
		{name: "allow_internet true is public",
			cfg:   tasks.Config{Environment: tasks.EnvConfig{AllowInternet: harborBool(true)}},
			agent: true, verify: true},
		{name: "network_mode wins over allow_internet",
			cfg:   tasks.Config{Environment: tasks.EnvConfig{NetworkMode: "public", AllowInternet: harborBool(false)}},
			agent: true, verify: true},
		{name: "verifier override opens the verifier only",
			cfg: tasks.Config{Environment: tasks.EnvConfig{NetworkMode: "no-network"},
				Verifier: tasks.VerifierConfig{NetworkMode: "public"}},
			agent: false, verify: true},
		{name: "agent override closes the agent only",
			cfg:   tasks.Config{Agent: tasks.AgentConfig{NetworkMode: "no-network"}},
			agent: false, verify: true},
		{name: "overrides over legacy allow_internet",
			cfg: tasks.Config{Environment: tasks.EnvConfig{AllowInternet: harborBool(false)},
				Agent: tasks.AgentConfig{NetworkMode: "public"}},
			agent: true, verify: false},
		{name: "allowlist baseline",
			cfg:   tasks.Config{Environment: tasks.EnvConfig{NetworkMode: "allowlist", AllowedHosts: []string{"pkgs.example.com"}}},
			agent: false, verify: false},
		{name: "allowlist baseline unused when both phases override",
			cfg: tasks.Config{Environment: tasks.EnvConfig{NetworkMode: "allowlist"},
				Agent: tasks.AgentConfig{NetworkMode: "no-network"}, Verifier: tasks.VerifierConfig{NetworkMode: "public"}},
			agent: false, verify: true},
		{name: "a phase's mode wins over its allowed_hosts",
			cfg:   tasks.Config{Verifier: tasks.VerifierConfig{NetworkMode: "no-network", AllowedHosts: []string{"pkgs.example.com"}}},
			agent: true, verify: false},
		{name: "unknown mode refused",
			cfg:      tasks.Config{Agent: tasks.AgentConfig{NetworkMode: "host"}},
			agentErr: "[agent].network_mode = \"host\": unknown network mode", verify: true},
		{name: "modes are case-sensitive as in Harbor",
			cfg:      tasks.Config{Environment: tasks.EnvConfig{NetworkMode: "Public"}},
			agentErr: "unknown network mode", verifyErr: "unknown network mode"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			check := func(phase string, want bool, wantErr string) {
				got, err := NetworkFor(tc.cfg, phase)
				if wantErr != "" {
					require.Error(t, err, phase)
					assert.Contains(t, err.Error(), wantErr, phase)
					return
				}
				require.NoError(t, err, phase)
				assert.Equal(t, want, got, phase)
			}
			check("agent", tc.agent, tc.agentErr)
			check("verifier", tc.verify, tc.verifyErr)
		})
	}
}

func TestHarborEnvNetworkBadPhase(t *testing.T) {
	_, err := NetworkFor(tasks.Config{}, "build")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"build"`)
}

func TestHarborEnvTimeouts(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	tests := []struct {
		name                   string
		cfg                    tasks.Config
		mult                   suite.Multipliers
		agent, verifier, build time.Duration
	}{
		{name: "defaults: no agent limit, 600 s verifier and build",
			mult: suite.Multipliers{Agent: 1, Verifier: 1, Build: 1}, agent: 0, verifier: 600 * time.Second, build: 600 * time.Second},
		{name: "task values",
			cfg: tasks.Config{Agent: tasks.AgentConfig{TimeoutSec: f(120)}, Verifier: tasks.VerifierConfig{TimeoutSec: f(30.5)},
				Environment: tasks.EnvConfig{BuildTimeoutSec: f(900)}},
			mult: suite.Multipliers{Agent: 1, Verifier: 1, Build: 1}, agent: 120 * time.Second, verifier: 30500 * time.Millisecond, build: 900 * time.Second},
		{name: "each times its multiplier",
			cfg:  tasks.Config{Agent: tasks.AgentConfig{TimeoutSec: f(100)}},
			mult: suite.Multipliers{Agent: 2, Verifier: 0.5, Build: 3}, agent: 200 * time.Second, verifier: 300 * time.Second, build: 1800 * time.Second},
		{name: "no agent limit stays none under a multiplier",
			mult: suite.Multipliers{Agent: 4, Verifier: 1, Build: 1}, agent: 0, verifier: 600 * time.Second, build: 600 * time.Second},
		{name: "zero multipliers count as one",
			cfg:   tasks.Config{Agent: tasks.AgentConfig{TimeoutSec: f(10)}},
			agent: 10 * time.Second, verifier: 600 * time.Second, build: 600 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, v, b := Timeouts(tc.cfg, tc.mult)
			assert.Equal(t, tc.agent, a, "agent")
			assert.Equal(t, tc.verifier, v, "verifier")
			assert.Equal(t, tc.build, b, "build")
		})
	}
}

func TestHarborEnvStepTimeouts(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	cfg := tasks.Config{Agent: tasks.AgentConfig{TimeoutSec: f(100)}, Verifier: tasks.VerifierConfig{TimeoutSec: f(50)}}
	tests := []struct {
		name            string
		step            tasks.StepConfig
		mult            suite.Multipliers
		agent, verifier time.Duration
	}{
		{name: "a step that sets none gets the task's", mult: suite.Multipliers{Agent: 2, Verifier: 3},
			agent: 200 * time.Second, verifier: 150 * time.Second},
		{name: "a step's own, times the multipliers",
			step: tasks.StepConfig{Agent: tasks.StepAgent{TimeoutSec: f(10)}, Verifier: tasks.StepVerifier{TimeoutSec: f(2.5)}},
			mult: suite.Multipliers{Agent: 2, Verifier: 2}, agent: 20 * time.Second, verifier: 5 * time.Second},
		{name: "zero multipliers count as one, as for the task",
			step:  tasks.StepConfig{Verifier: tasks.StepVerifier{TimeoutSec: f(7)}},
			agent: 100 * time.Second, verifier: 7 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, v := StepTimeouts(cfg, tc.step, tc.mult)
			assert.Equal(t, tc.agent, a, "agent")
			assert.Equal(t, tc.verifier, v, "verifier")
		})
	}
}

func FuzzHarborEnvResolve(f *testing.F) {
	for _, s := range []string{"${A}", "${A:-x}", "${B:-}", "a${A}b", "${", "${:-}", "${A:-${B}}", "$A", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		lookup := func(k string) (string, bool) {
			if k == "A" {
				return "set", true
			}
			return "", false
		}
		out, err := resolveEnv(map[string]string{"K": v}, lookup)
		if err != nil {
			if !envTemplate.MatchString(v) {
				t.Fatalf("a literal %q was refused: %v", v, err)
			}
			return
		}
		if len(out) != 1 || len(out[0]) < 2 || out[0][:2] != "K=" {
			t.Fatalf("ResolveEnv(%q) = %q", v, out)
		}
		if !envTemplate.MatchString(v) && out[0] != "K="+v {
			t.Fatalf("a literal %q changed to %q", v, out[0])
		}
	})
}

// harborFixtures is fixtures/harbor's expected.json, the parts read here.
type harborFixtures struct {
	HostEnvUnset []string                  `json:"host_env_unset"`
	Tasks        map[string]map[string]any `json:"tasks"`
	Refused      map[string]struct {
		Field string `json:"field"`
	} `json:"refused"`
}

func TestHarborEnvFixtures(t *testing.T) {
	root := filepath.Join("..", "..", "fixtures", "harbor")
	data, err := os.ReadFile(filepath.Join(root, "expected.json"))
	require.NoError(t, err)
	var exp harborFixtures
	require.NoError(t, json.Unmarshal(data, &exp))
	unset := map[string]bool{}
	for _, k := range exp.HostEnvUnset {
		unset[k] = true
	}
	lookup := func(k string) (string, bool) {
		if unset[k] {
			return "", false
		}
		return os.LookupEnv(k)
	}
	dirs, err := os.ReadDir(filepath.Join(root, "tasks"))
	require.NoError(t, err)
	require.Len(t, exp.Tasks, len(dirs), "expected.json names every fixture task")
	for _, d := range dirs {
		t.Run(d.Name(), func(t *testing.T) {
			require.Contains(t, exp.Tasks, d.Name())
			task, err := tasks.Load(filepath.Join(root, "tasks", d.Name()), tasks.LoadOptions{Local: true})
			require.NoError(t, err)
			assert.False(t, task.Native(), "a Harbor fixture has no [flightdeck.grader]")
			for _, env := range []map[string]string{task.Config.Environment.Env, task.Config.Solution.Env, task.Config.Verifier.Env} {
				_, err := resolveEnv(env, lookup)
				assert.NoError(t, err)
			}
			for _, phase := range []string{"agent", "verifier"} {
				_, err := NetworkFor(task.Config, phase)
				assert.NoError(t, err, phase)
			}
		})
	}
}

// A phase's policy: its mode, and an allowlist's hosts (the phase's own,
// else the environment's).
func TestHarborEnvPolicy(t *testing.T) {
	tests := []struct {
		name          string
		cfg           tasks.Config
		agent, verify Policy
	}{
		{"default", tasks.Config{}, Policy{Mode: "public"}, Policy{Mode: "public"}},
		{"allowed_hosts alone mean an allowlist",
			tasks.Config{Environment: tasks.EnvConfig{AllowedHosts: []string{"pkgs.example.com"}}},
			Policy{Mode: "allowlist", Hosts: []string{"pkgs.example.com"}}, Policy{Mode: "allowlist", Hosts: []string{"pkgs.example.com"}}},
		{"a phase's allowed_hosts replace the environment's",
			tasks.Config{Environment: tasks.EnvConfig{AllowedHosts: []string{"a.example.com"}},
				Agent: tasks.AgentConfig{AllowedHosts: []string{"b.example.com", "10.0.0.0/8"}}},
			Policy{Mode: "allowlist", Hosts: []string{"b.example.com", "10.0.0.0/8"}}, Policy{Mode: "allowlist", Hosts: []string{"a.example.com"}}},
		{"an allowlist phase without hosts of its own takes the environment's",
			tasks.Config{Environment: tasks.EnvConfig{AllowedHosts: []string{"*.example.com"}}, Verifier: tasks.VerifierConfig{NetworkMode: "allowlist"}},
			Policy{Mode: "allowlist", Hosts: []string{"*.example.com"}}, Policy{Mode: "allowlist", Hosts: []string{"*.example.com"}}},
		{"a phase's public mode wins over the environment's allowlist",
			tasks.Config{Environment: tasks.EnvConfig{AllowedHosts: []string{"a.example.com"}}, Verifier: tasks.VerifierConfig{NetworkMode: "public"}},
			Policy{Mode: "allowlist", Hosts: []string{"a.example.com"}}, Policy{Mode: "public"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := PolicyFor(tc.cfg, NetAgent)
			require.NoError(t, err)
			v, err := PolicyFor(tc.cfg, NetVerifier)
			require.NoError(t, err)
			assert.Equal(t, tc.agent, a)
			assert.Equal(t, tc.verify, v)
		})
	}
}
