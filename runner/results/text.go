package results

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/text"
)

// RewardText is a result's reward as progress lines and reports show it,
// or why it has none.
func RewardText(r *Result) string {
	if r.Reward == nil {
		switch r.Outcome {
		case grader.OutcomeInfraError:
			return "error: " + text.OneLine(r.Error, 200)
		case grader.OutcomeRefused:
			if r.Refusal != nil {
				return "reason: " + text.OneLine(r.Refusal.String(), 300)
			}
			return text.OneLine(r.Error, 300)
		}
		return "reward -"
	}
	text := fmt.Sprintf("reward %.3g", *r.Reward)
	if keys := rewardsText(r.Rewards); keys != "" {
		text += " " + keys
	}
	if r.Summary != nil && r.Summary.Total > 0 {
		// The grader's own count says more than a rounded reward.
		text += fmt.Sprintf(" (%d/%d)", r.Summary.Passed, r.Summary.Total)
	}
	return text
}

// ExpectText notes a failed expectation; "" when none failed.
func ExpectText(r *Result) string {
	if r.Expectation != nil && !*r.Expectation {
		return fmt.Sprintf("  (expected %s)", r.Expect)
	}
	return ""
}

// TamperText lists a result's tamper findings, "kind path, ...".
func TamperText(r *Result) string {
	var parts []string
	for _, f := range r.Tamper {
		parts = append(parts, f.Kind+" "+f.Path)
	}
	return strings.Join(parts, ", ")
}

// keysByValue is for stable output of counters.
func keysByValue(m map[string]int) []string {
	keys := slices.Sorted(maps.Keys(m))
	sort.SliceStable(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] })
	return keys
}
