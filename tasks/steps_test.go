package tasks

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const stepsBase = "schema_version = \"1.4\"\n\n[task]\nname = \"org/steps\"\nversion = \"1.0\"\n"

// [[steps]] is checked as Harbor reads it, and what flightdeck does not
// run is refused naming the file, the field and the step.
func TestCheckSteps(t *testing.T) {
	two := map[string]string{"steps/one/instruction.md": "1\n", "steps/two/instruction.md": "2\n"}
	for _, tc := range []struct {
		name, toml string
		files      map[string]string
		want       string // "" for no error
	}{
		{"two steps", "\n[[steps]]\nname = \"one\"\nmin_reward = 1\n\n[[steps]]\nname = \"two\"\nmin_reward = {reward = 0.5, b = 1}\n", two, ""},
		{"final", "TOP multi_step_reward_strategy = \"final\"\n" + "\n[[steps]]\nname = \"one\"\n", two, ""},
		{"bad strategy", "TOP multi_step_reward_strategy = \"best\"\n" + "\n[[steps]]\nname = \"one\"\n", two, `multi_step_reward_strategy: must be "mean" or "final"`},
		{"strategy without steps", "TOP multi_step_reward_strategy = \"mean\"\n", nil, "multi_step_reward_strategy: is set but the task has no [[steps]]"},
		{"bad name", "\n[[steps]]\nname = \"../up\"\n", two, "[[steps]][0].name: must be a plain directory name"},
		{"twice", "\n[[steps]]\nname = \"one\"\n\n[[steps]]\nname = \"one\"\n", two, `[[steps]][1].name: "one" names two steps`},
		{"no instruction", "\n[[steps]]\nname = \"three\"\n", two, `steps/three/instruction.md: missing: step "three" needs its instruction`},
		{"bad min_reward", "\n[[steps]]\nname = \"one\"\nmin_reward = \"high\"\n", two, "min_reward must be a number or a table of numbers"},
		{"step healthcheck and artifacts", "\n[[steps]]\nname = \"one\"\nartifacts = [\"/app/out.txt\"]\n[steps.healthcheck]\ncommand = \"true\"\n", two, ""},
		{"step healthcheck without a command", "\n[[steps]]\nname = \"one\"\n[steps.healthcheck]\ninterval_sec = 1.0\n", two, "[[steps]][0].healthcheck.command: missing"},
		{"bad step artifacts", "\n[[steps]]\nname = \"one\"\nartifacts = [\"relative.txt\"]\n", two, "[[steps]][0].artifacts:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{
				"task.toml": stepsTOML(tc.toml), "instruction.md": "x\n",
				"environment/Dockerfile": "FROM flightdeck/base:bookworm\n",
				"tests/test.sh":          "echo 1 > /logs/verifier/reward.txt\n",
			}
			for k, v := range tc.files {
				files[k] = v
			}
			writeTree(t, dir, files)
			errs := checkErrors(dir)
			if tc.want == "" {
				assert.Empty(t, errs)
				return
			}
			require.Len(t, errs, 1, "%v", errs)
			assert.Contains(t, errs[0], tc.want)
			assert.True(t, strings.HasPrefix(errs[0], dir), errs[0])
		})
	}
}

// stepsTOML puts a case's "TOP " line before the tables, the rest after.
func stepsTOML(s string) string {
	if rest, ok := strings.CutPrefix(s, "TOP "); ok {
		top, tables, _ := strings.Cut(rest, "\n")
		return top + "\n" + stepsBase + tables
	}
	return stepsBase + s
}

func TestMinRewards(t *testing.T) {
	assert.Nil(t, StepConfig{}.MinRewards())
	assert.Equal(t, map[string]float64{"reward": 1}, StepConfig{MinReward: int64(1)}.MinRewards())
	assert.Equal(t, map[string]float64{"reward": 0.5, "b": 1}, StepConfig{MinReward: map[string]any{"reward": 0.5, "b": int64(1)}}.MinRewards())
}

// With [[steps]], a task's files may live only under steps/<name>/, as
// Harbor loads them: no top-level instruction.md, tests/ or solution/; a
// shared step needs a test.sh (its own or the task's), a separate step an
// image (a Dockerfile in its build context, or a docker_image).
func TestStepsOnlyLayout(t *testing.T) {
	step := func(name string) map[string]string {
		return map[string]string{
			"steps/" + name + "/instruction.md":    "Do " + name + ".\n",
			"steps/" + name + "/tests/test.sh":     "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n",
			"steps/" + name + "/solution/solve.sh": "#!/bin/bash\ntrue\n",
		}
	}
	for _, tc := range []struct {
		name, toml string
		drop       []string // files of the two steps left out
		more       map[string]string
		want       string // "" for no error
	}{
		{"files only under steps/", "\n[[steps]]\nname = \"one\"\n\n[[steps]]\nname = \"two\"\n", nil, nil, ""},
		{"a shared step without a test.sh", "\n[[steps]]\nname = \"one\"\n\n[[steps]]\nname = \"two\"\n", []string{"steps/two/tests/test.sh"}, nil,
			`steps/two/tests/test.sh: missing: step "two" has no test.sh and the task has no tests/test.sh`},
		{"a separate step builds from its tests/", "\n[[steps]]\nname = \"one\"\n\n[[steps]]\nname = \"two\"\n[steps.verifier]\nenvironment_mode = \"separate\"\n", nil,
			map[string]string{"steps/two/tests/Dockerfile": "FROM flightdeck/base:bookworm\nCOPY test.sh /tests/test.sh\n"}, ""},
		{"a separate step without an image", "\n[[steps]]\nname = \"one\"\n\n[[steps]]\nname = \"two\"\n[steps.verifier]\nenvironment_mode = \"separate\"\n", nil, nil,
			`[[steps]][1].verifier: step "two"'s verifier is separate and needs an image: steps/two/tests/Dockerfile`},
		{"inherited separate, overridden shared", "TOP artifacts = [\"/app/x\"]\n[verifier]\nenvironment_mode = \"separate\"\n\n[[steps]]\nname = \"one\"\n[steps.verifier]\nenvironment_mode = \"shared\"\n\n[[steps]]\nname = \"two\"\n[steps.verifier.environment]\ndocker_image = \"flightdeck/base:bookworm\"\n", nil, nil, ""},
		{"shared with an environment", "\n[[steps]]\nname = \"one\"\n[steps.verifier]\nenvironment_mode = \"shared\"\n[steps.verifier.environment]\ndocker_image = \"x\"\n\n[[steps]]\nname = \"two\"\n", nil, nil,
			"[[steps]][0].verifier.environment: a verifier environment makes no sense"},
		{"a sidecar's artifact in a single-container task", "TOP artifacts = [{ source = \"/var/log/x.log\", service = \"api\" }]\n[[steps]]\nname = \"one\"\n\n[[steps]]\nname = \"two\"\n", nil, nil,
			`artifacts entry 1.service: "api": a single-container task has only the service "main"`},
		{"a service the compose file lacks", "TOP artifacts = [{ source = \"/var/log/x.log\", service = \"apj\" }]\n[[steps]]\nname = \"one\"\n\n[[steps]]\nname = \"two\"\n", nil,
			map[string]string{"environment/docker-compose.yaml": "services:\n  api:\n    image: flightdeck/base:bookworm\n"},
			`artifacts entry 1.service: "apj": environment/docker-compose.yaml has no such service (its services: main, api)`},
		{"a compose file's service", "TOP artifacts = [{ source = \"/var/log/x.log\", service = \"api\" }]\n[[steps]]\nname = \"one\"\n\n[[steps]]\nname = \"two\"\n", nil,
			map[string]string{"environment/docker-compose.yaml": "services:\n  api:\n    image: flightdeck/base:bookworm\n"}, ""},
		{"a bad service name", "TOP artifacts = [{ source = \"/var/log/x.log\", service = \"../api\" }]\n[[steps]]\nname = \"one\"\n\n[[steps]]\nname = \"two\"\n", nil, nil,
			"entry 1: service must be a compose service's name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{"task.toml": stepsTOML(tc.toml), "environment/Dockerfile": "FROM flightdeck/base:bookworm\n"}
			for _, n := range []string{"one", "two"} {
				for k, v := range step(n) {
					files[k] = v
				}
			}
			for _, d := range tc.drop {
				delete(files, d)
			}
			for k, v := range tc.more {
				files[k] = v
			}
			writeTree(t, dir, files)
			errs := checkErrors(dir)
			if tc.want != "" {
				require.Len(t, errs, 1, "%v", errs)
				assert.Contains(t, errs[0], tc.want)
				return
			}
			assert.Empty(t, errs)
			task, err := Load(dir, LoadOptions{Local: true})
			require.NoError(t, err)
			assert.NotEmpty(t, task.Digest, "the digest covers steps/ without a top-level instruction.md")
		})
	}
}

// A step's verifier resolves as Harbor's: the step's mode, else its
// environment table meaning separate, else the task's.
func TestStepSeparateVerifier(t *testing.T) {
	c := Config{Verifier: VerifierConfig{EnvironmentMode: "separate", Environment: &EnvConfig{DockerImage: "task-verifier"}},
		Environment: EnvConfig{DockerImage: "agent"},
		Steps: []StepConfig{
			{Name: "inherits"},
			{Name: "shared", Verifier: StepVerifier{EnvironmentMode: "shared"}},
			{Name: "own", Verifier: StepVerifier{Environment: &EnvConfig{DockerImage: "step-verifier"}}},
		}}
	task := &Task{Config: c}
	env, sep := task.StepSeparateVerifier("inherits")
	assert.True(t, sep)
	assert.Equal(t, "task-verifier", env.DockerImage)
	_, sep = task.StepSeparateVerifier("shared")
	assert.False(t, sep)
	env, sep = task.StepSeparateVerifier("own")
	assert.True(t, sep)
	assert.Equal(t, "step-verifier", env.DockerImage)

	c.Verifier = VerifierConfig{}
	task = &Task{Config: c}
	_, sep = task.StepSeparateVerifier("inherits")
	assert.False(t, sep, "shared by default")
	env, sep = task.StepSeparateVerifier("own")
	assert.True(t, sep, "a step's environment table alone makes it separate")
	assert.Equal(t, "step-verifier", env.DockerImage)
}

// checkErrors is Check's errors, "path: message" each.
func checkErrors(dir string) []string {
	var errs []string
	for _, f := range Check(dir) {
		if f.Severity == SeverityError {
			errs = append(errs, f.Path+": "+f.Message)
		}
	}
	return errs
}
