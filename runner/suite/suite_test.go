package suite

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSuite(t *testing.T) {
	s, err := ParseSuite([]byte(`
name: local
tasks:
  - tasks/smoke/semver
  - tasks/fixtures/*
include: ["*"]
exclude: [broken-*]
variants:
  oracle: {agent: oracle, expect: passed}
  nop:    {agent: nop, expect: failed}
  mine:   {agent: command, command: "my-agent --instruction-file /flightdeck/instruction.md", env: {MODEL: small}}
  replay: {agent: deterministic, script: scripts/replay.json}
  treatment: {}
attempts: 3
concurrency: 2
retries: 0
timeout_multiplier: {agent: 2, verifier: 1.5}
images: {"python:3.12-slim": "flightdeck/base:bookworm"}
specs: [specs/]
results: out
reward_key: correctness
image_budget: 20GB
`), "/suites/local.yaml")
	require.NoError(t, err)
	assert.Equal(t, "local", s.Name)
	assert.Equal(t, "/suites", s.Dir)
	assert.Equal(t, []string{"tasks/smoke/semver", "tasks/fixtures/*"}, s.Tasks)
	assert.Equal(t, []string{"broken-*"}, s.Exclude)
	assert.Equal(t, 3, s.Attempts)
	assert.Equal(t, 2, s.Concurrency)
	assert.Equal(t, 0, s.Retries)
	assert.Equal(t, Multipliers{Agent: 2, Verifier: 1.5, Build: 1}, s.TimeoutMultiplier)
	assert.Equal(t, map[string]string{"python:3.12-slim": "flightdeck/base:bookworm"}, s.Images)
	assert.Equal(t, "out", s.Results)
	assert.Equal(t, "correctness", s.RewardKey)
	assert.Equal(t, int64(20<<30), s.ImageBudget)
	var names []string
	for _, v := range s.Variants {
		names = append(names, v.Name)
	}
	assert.Equal(t, []string{"oracle", "nop", "mine", "replay", "treatment"}, names, "variants keep the file's order")
	mine, _ := s.Variant("mine")
	assert.Equal(t, map[string]string{"MODEL": "small"}, mine.Env)
	replay, _ := s.Variant("replay")
	assert.Equal(t, filepath.FromSlash("/suites/scripts/replay.json"), replay.Script, "script paths are relative to the suite")
	empty, _ := s.Variant("treatment")
	assert.Empty(t, empty.Agent, "an empty variant is accepted in the file")
}

func TestParseSuiteDefaults(t *testing.T) {
	s, err := ParseSuite([]byte("tasks: [a]\nvariants: {oracle: {agent: oracle}}\n"), "/x/s.yaml")
	require.NoError(t, err)
	assert.Equal(t, 1, s.Attempts)
	assert.Equal(t, 1, s.Retries)
	assert.Equal(t, 0, s.Concurrency, "0 means the number of CPUs")
	assert.Equal(t, Multipliers{1, 1, 1}, s.TimeoutMultiplier)
	assert.Equal(t, "results", s.Results)
	assert.Empty(t, s.RewardKey, "the reward key, else the lowest key, decides")
}

func TestParseSuiteErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown key", "tasks: [a]\nvariants: {o: {agent: oracle}}\nconcurency: 2\n", `s.yaml:3: unknown key "concurency" in the suite`},
		{"unknown variant key", "variants:\n  o:\n    agent: oracle\n    expected: passed\n", `s.yaml:4: unknown key "expected" in variant o`},
		{"duplicate key", "attempts: 1\nattempts: 2\nvariants: {o: {agent: oracle}}\n", `s.yaml:2: suite: key "attempts" appears twice`},
		{"attempts zero", "attempts: 0\nvariants: {o: {agent: oracle}}\n", "s.yaml:1: attempts must be at least 1"},
		{"attempts text", "attempts: many\nvariants: {o: {agent: oracle}}\n", "s.yaml:1: attempts must be a whole number"},
		{"tasks not a list", "tasks: a\nvariants: {o: {agent: oracle}}\n", "s.yaml:1: tasks must be a list of strings"},
		{"bad multiplier", "timeout_multiplier: {agent: 0}\nvariants: {o: {agent: oracle}}\n", "timeout_multiplier.agent must be above 0"},
		{"unknown multiplier", "timeout_multiplier: {grade: 2}\nvariants: {o: {agent: oracle}}\n", `unknown key "grade" in timeout_multiplier`},
		{"unknown agent", "variants: {o: {agent: claude}}\n", `variant o: unknown agent "claude"`},
		{"task verify's adversary", "variants: {o: {agent: attack}}\n", `variant o: unknown agent "attack"`},
		{"task shell's person", "variants: {o: {agent: shell}}\n", `variant o: unknown agent "shell"`},
		{"command without command", "variants: {o: {agent: command}}\n", "agent command needs command:"},
		{"deterministic without script", "variants: {o: {agent: deterministic}}\n", "agent deterministic needs script:"},
		{"oracle with command", "variants: {o: {agent: oracle, command: x}}\n", "agent oracle takes neither command nor script"},
		{"bad expect", "variants: {o: {agent: oracle, expect: pass}}\n", `expect must be "passed" or "failed"`},
		{"bad variant name", "variants: {\"a b\": {agent: oracle}}\n", `variant name "a b"`},
		{"no variants", "tasks: [a]\n", "the suite has no variants"},
		{"not a mapping", "- a\n- b\n", "the suite must be a mapping"},
		{"bad image map", "images: {\"a b\": c}\nvariants: {o: {agent: oracle}}\n", "image references must be non-empty"},
		{"bad glob", "include: [\"[\"]\nvariants: {o: {agent: oracle}}\n", `include[0]: "[" is not a valid glob`},
		{"bad env name", "variants: {o: {agent: command, command: x, env: {\"1X\": y}}}\n", `"1X" is not a valid variable name`},
		{"reward_key empty", "variants: {o: {agent: oracle}}\nreward_key: \"\"\n", `s.yaml:2: reward_key: "" is not a key name`},
		{"reward_key with a space", "variants: {o: {agent: oracle}}\nreward_key: \"tests passed\"\n", `s.yaml:2: reward_key: "tests passed" is not a key name`},
		{"reward_key a list", "variants: {o: {agent: oracle}}\nreward_key: [a, b]\n", "s.yaml:2: reward_key must be a string"},
		{"reward_key null", "variants: {o: {agent: oracle}}\nreward_key:\n", "s.yaml:2: reward_key must be a string"},
		{"image_budget not a size", "variants: {o: {agent: oracle}}\nimage_budget: lots\n", `s.yaml:2: image_budget: "lots" is not a size above 0`},
		{"image_budget zero", "variants: {o: {agent: oracle}}\nimage_budget: 0\n", `s.yaml:2: image_budget: "0" is not a size above 0`},
		{"bad tamper", "variants: {o: {agent: oracle}}\ntamper: strict\n", `s.yaml:2: tamper: want "flag", "fail" or "off", not "strict"`},
		{"bad variant tamper", "variants: {o: {agent: oracle, tamper: yes}}\n", `variant o: tamper must be "flag", "fail" or "off", not "yes"`},
		{"empty", "", "the suite is empty"},
		{"syntax", "variants: [\n", "s.yaml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSuite([]byte(tc.yaml), "s.yaml")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// The suite's tamper: is each variant's unless the variant says.
func TestParseSuiteTamper(t *testing.T) {
	s, err := ParseSuite([]byte("tamper: fail\nvariants: {a: {agent: oracle}, b: {agent: oracle, tamper: flag}, c: {agent: nop, tamper: off}}\n"), "s.yaml")
	require.NoError(t, err)
	got := map[string]string{}
	for _, v := range s.Variants {
		got[v.Name] = v.Tamper
	}
	assert.Equal(t, map[string]string{"a": TamperFail, "b": TamperFlag, "c": TamperOff}, got)
}

func TestTimeoutMultiplierScalar(t *testing.T) {
	s, err := ParseSuite([]byte("timeout_multiplier: 3\nvariants: {o: {agent: oracle}}\n"), "s.yaml")
	require.NoError(t, err)
	assert.Equal(t, Multipliers{3, 3, 3}, s.TimeoutMultiplier)
}

func FuzzLoadSuite(f *testing.F) {
	f.Add([]byte("name: local\ntasks: [a, b/*]\nvariants:\n  oracle: {agent: oracle, expect: passed}\nattempts: 2\n"))
	f.Add([]byte("variants: {x: {agent: command, command: 'a b', env: {K: v}}}\ntimeout_multiplier: 2\nimages: {a: b}\n"))
	f.Add([]byte("variants:\n  t: {}\n  r: {agent: deterministic, script: s.json}\nspecs: [specs/]\n"))
	f.Add([]byte("&a [*a]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSuite(data, "/suite/s.yaml")
		if err != nil {
			return
		}
		if len(s.Variants) == 0 || s.Attempts < 1 || s.Retries < 0 {
			t.Fatalf("accepted a suite without variants or with bad numbers: %+v", s)
		}
		for _, v := range s.Variants {
			if !ValidName(v.Name) {
				t.Fatalf("accepted variant name %q", v.Name)
			}
		}
	})
}

func TestSelected(t *testing.T) {
	tests := []struct {
		id                        string
		include, exclude, filters []string
		want                      bool
	}{
		{"a/b", nil, nil, nil, true},
		{"a/b", []string{"a/*"}, nil, nil, true},
		{"a/b", []string{"c/*"}, nil, nil, false},
		{"a/b", []string{"a/*"}, []string{"*/b"}, nil, false},
		{"a/b", nil, nil, []string{"*/c"}, false},
		{"a/b", []string{"a/*"}, nil, []string{"*/b"}, true},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, Selected(tc.id, tc.include, tc.exclude, tc.filters), "%+v", tc)
	}
}
