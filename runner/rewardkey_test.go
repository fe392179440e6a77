package runner

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
)

// A suite's reward_key: decides each trial's outcome; every key stays
// recorded, and the per-key means are in the variant's statistics.
func TestRunRewardKey(t *testing.T) {
	body := `
name: keys
tasks: [FIXTURES/answer]
variants:
  right: {agent: command, command: "echo 42"}
  wrong: {agent: command, command: "echo 41"}
results: RESULTS
`
	keys := func(answer string) string {
		if answer == "42" {
			return `{"correctness": 1, "style": 0}`
		}
		return `{"correctness": 0, "style": 1}`
	}
	tests := []struct {
		name     string
		key      string
		outcomes map[string]grader.Outcome
		errKind  string
	}{
		{"the lowest key decides", "", map[string]grader.Outcome{"right": grader.OutcomeFailed, "wrong": grader.OutcomeFailed}, ""},
		{"correctness decides", "correctness", map[string]grader.Outcome{"right": grader.OutcomePassed, "wrong": grader.OutcomeFailed}, ""},
		{"style decides", "style", map[string]grader.Outcome{"right": grader.OutcomeFailed, "wrong": grader.OutcomePassed}, ""},
		{"a key never written", "speed", map[string]grader.Outcome{"right": grader.OutcomeFailed, "wrong": grader.OutcomeFailed}, grader.RewardMissingKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			suiteFile := body
			if tt.key != "" {
				suiteFile += "reward_key: " + tt.key + "\n"
			}
			req := fakeRequest(t, suiteFile, suite.Options{})
			assert.Equal(t, tt.key, req.Config.RewardKey)
			eng := newFake(t)
			eng.agent = answerAgent
			eng.reward = keys
			rec := fakeRun(t, eng, context.Background(), req)
			for variant, want := range tt.outcomes {
				res, err := results.ReadResult(filepath.Join(rec.Dir, "answer__"+variant+"__1", results.ResultFile))
				require.NoError(t, err)
				assert.Equal(t, want, res.Outcome, "%s: %s", variant, res.Error)
				assert.Len(t, res.Rewards, 2, "every key is recorded")
				if tt.errKind != "" && assert.NotNil(t, res.RewardError, variant) {
					assert.Equal(t, tt.errKind, res.RewardError.Kind)
					assert.Contains(t, res.Error, `"speed"`)
				}
			}
			for _, v := range rec.Variants {
				assert.Len(t, v.MeanRewards, 2, v.Variant)
			}
			assert.Equal(t, map[string]float64{"correctness": 1, "style": 0}, rec.Variants[0].MeanRewards)
			assert.Equal(t, map[string]float64{"correctness": 1, "style": 0}, rec.Trials[0].Rewards)
		})
	}
}

func reward(v float64) *float64 { return &v }
