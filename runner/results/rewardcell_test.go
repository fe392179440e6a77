package results

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A table's reward cell says each figure once: the reward, a count as
// (passed/total), then any other key.
func TestRewardCell(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	tests := []struct {
		name   string
		reward *float64
		keys   map[string]float64
		want   string
	}{
		{"no reward", nil, nil, "-"},
		{"reward only", f(1), map[string]float64{"reward": 1}, "1"},
		{"the template's reward.json", f(0.75), map[string]float64{"reward": 0.75, "passed": 3, "total": 4}, "0.75 (3/4)"},
		{"other keys kept", f(0.5), map[string]float64{"reward": 0.5, "style": 0.2}, "0.5 [style=0.2]"},
		{"a reward key another key chose", f(0.2), map[string]float64{"reward": 1, "style": 0.2}, "0.2 [reward=1 style=0.2]"},
		{"a fraction is no count", f(1), map[string]float64{"reward": 1, "passed": 0.5, "total": 1}, "1 [passed=0.5 total=1]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, rewardCell(tc.reward, tc.keys))
		})
	}
}
