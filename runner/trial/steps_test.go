package trial

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/tasks"
)

func rw(values map[string]float64) grader.Reward {
	r := grader.Reward{Values: values, Value: math.Inf(1)}
	if v, ok := values["reward"]; ok {
		r.Value = v
	}
	return r
}

// Harbor's strategies: mean per key over the graded steps (a key a step
// did not write counts 0), or the last graded step's.
func TestStepsGrade(t *testing.T) {
	graded := []grader.Reward{rw(map[string]float64{"reward": 1}), rw(map[string]float64{"reward": 0, "b": 1})}
	last := grader.Grade{Reward: &graded[1]}

	g := stepsGrade(tasks.StrategyMean, graded, last)
	require.NotNil(t, g.Reward)
	assert.Equal(t, 0.5, g.Reward.Value)
	assert.Equal(t, map[string]float64{"reward": 0.5, "b": 0.5}, g.Reward.Values)
	assert.Equal(t, "steps (mean)", g.Reward.Source)

	g = stepsGrade(tasks.StrategyFinal, graded, last)
	require.NotNil(t, g.Reward)
	assert.Equal(t, 0.0, g.Reward.Value)
	assert.Equal(t, map[string]float64{"reward": 0, "b": 1}, g.Reward.Values)

	// The last step ran and wrote no reward: final has none, mean keeps
	// the graded steps'.
	noReward := grader.Grade{RewardErr: &grader.RewardError{Kind: grader.RewardMissing}}
	assert.Nil(t, stepsGrade(tasks.StrategyFinal, graded, noReward).Reward)
	assert.NotNil(t, stepsGrade(tasks.StrategyMean, graded, noReward).Reward)

	// No step graded: no reward.
	g = stepsGrade(tasks.StrategyMean, nil, grader.Grade{})
	assert.Nil(t, g.Reward)
	require.NotNil(t, g.RewardErr)

	// Without a "reward" key, the lowest key decides, as for reward.json.
	m := meanReward([]grader.Reward{rw(map[string]float64{"x": 1, "y": 0.5})})
	assert.Equal(t, 0.5, m.Value)
}

func TestBelowMinReward(t *testing.T) {
	r := rw(map[string]float64{"reward": 0.5, "b": 1})
	assert.Empty(t, belowMinReward(&r, nil))
	assert.Empty(t, belowMinReward(&r, map[string]float64{"reward": 0.5}))
	assert.Contains(t, belowMinReward(&r, map[string]float64{"reward": 1}), "reward = 0.5 is below its min_reward 1")
	assert.Contains(t, belowMinReward(&r, map[string]float64{"c": 0}), "c = -Inf", "a key not written is -inf")
	assert.Contains(t, belowMinReward(nil, map[string]float64{"reward": 0}), "-Inf", "no reward at all")
}
