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
			var errs []string
			for _, f := range Check(dir) {
				if f.Severity == SeverityError {
					errs = append(errs, f.Path+": "+f.Message)
				}
			}
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
