package results

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/flightdeck/flightdeck/grader"
)

// ApplyRewardKey makes key, a key of the reward file the suite names
// (reward_key:), decide the trial's reward, and so whether a graded trial
// passed. A trial without a reward, or one that was never graded, is left
// as it is; one whose grader did not write the key fails with a missing_key
// reward error naming it. rewardDir is the trial's copy of the reward
// directory, for the message.
func ApplyRewardKey(r *Result, key, rewardDir string) {
	if key == "" || r.Reward == nil || r.Outcome.Ungraded() {
		return
	}
	graded := r.Outcome == grader.OutcomePassed || r.Outcome == grader.OutcomeFailed
	got, err := grader.Reward{Value: *r.Reward, Values: r.Rewards, Source: r.RewardSource}.Key(key)
	if err != nil {
		var re *grader.RewardError
		if errors.As(err, &re) {
			re.File = filepath.Join(rewardDir, r.RewardSource)
		}
		r.Reward, r.RewardError = nil, RewardProblemOf(err)
		if graded {
			r.Outcome = grader.OutcomeFailed
		}
		if r.Error == "" {
			r.Error = "no reward: " + r.RewardError.Detail
		}
		r.OutcomeClass = grader.TrialOutcome(r.Outcome, nil, r.Specs)
		return
	}
	v := got.Value
	r.Reward = &v
	if graded {
		r.Outcome = grader.OutcomeFailed
		if v >= 1 {
			r.Outcome = grader.OutcomePassed
		}
	}
	r.OutcomeClass = grader.TrialOutcome(r.Outcome, &got, r.Specs)
}

// rewardCell is a reward as a table shows it: the reward, then a count
// the file carries as passed and total, "(3/4)", then any other key; no
// key is said twice.
func rewardCell(reward *float64, m map[string]float64) string {
	s := "-"
	if reward != nil {
		s = fmt.Sprintf("%.3g", *reward)
	}
	rest := maps.Clone(m)
	if reward != nil && rest["reward"] == *reward {
		delete(rest, "reward")
	}
	p, okP := rest["passed"]
	t, okT := rest["total"]
	if okP && okT && t > 0 && p == float64(int64(p)) && t == float64(int64(t)) {
		s += fmt.Sprintf(" (%d/%d)", int64(p), int64(t))
		delete(rest, "passed")
		delete(rest, "total")
	}
	if len(rest) == 0 {
		return s
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(rest)) {
		parts = append(parts, fmt.Sprintf("%s=%.3g", k, rest[k]))
	}
	return s + " [" + strings.Join(parts, " ") + "]"
}

// rewardsText shows every key of a reward file, "[a=1 b=0.5]"; "" when the
// only key is reward (reward.txt, or {"reward": v}), which the reward shows.
func rewardsText(m map[string]float64) string {
	if _, only := m["reward"]; len(m) == 0 || len(m) == 1 && only {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%.3g", k, m[k]))
	}
	return "[" + strings.Join(parts, " ") + "]"
}
