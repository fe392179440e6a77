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
		case grader.OutcomeTaskError:
			return text.OneLine(r.Error, 400)
		case grader.OutcomeNeedsInput:
			if r.NeedsInput != nil {
				return fmt.Sprintf("needs input: %q (%s)", text.OneLine(r.NeedsInput.Question, 200), r.NeedsInput.Reason)
			}
			return text.OneLine(r.Error, 300)
		case grader.OutcomeRefused:
			if r.Refusal != nil {
				return "reason: " + text.OneLine(r.Refusal.String(), 300)
			}
			return text.OneLine(r.Error, 300)
		}
		if r.Error != "" {
			// Why there is no reward, in the line itself.
			return text.OneLine(r.Error, 400)
		}
		return "reward -"
	}
	s := fmt.Sprintf("reward %.3g", *r.Reward)
	if keys := rewardsText(r.Rewards); keys != "" && !restatesSummary(r) {
		s += " " + keys
	}
	if r.Summary != nil && r.Summary.Total > 0 {
		// The grader's own count says more than a rounded reward.
		s += fmt.Sprintf(" (%d/%d)", r.Summary.Passed, r.Summary.Total)
	}
	switch {
	case r.Outcome != grader.OutcomePassed && r.Error != "":
		s += "; " + text.OneLine(r.Error, 200)
	case r.Outcome == grader.OutcomeFailed && r.Cause != "" && (r.Expectation == nil || !*r.Expectation):
		// Why, unless the failure is what the variant expects (nop's).
		s += "; " + text.OneLine(r.Cause, 300)
	}
	return s
}

// restatesSummary reports whether the reward file's keys say no more than
// the reward and the grader's RESULT count (the template's reward.json:
// reward, passed, total), which the line shows already.
func restatesSummary(r *Result) bool {
	if r.Summary == nil || r.Summary.Total == 0 {
		return false
	}
	for k, v := range r.Rewards {
		switch {
		case k == "reward":
		case k == "passed" && v == float64(r.Summary.Passed):
		case k == "total" && v == float64(r.Summary.Total):
		default:
			return false
		}
	}
	return true
}

// SubstituteText notes the images that stood in for those the task names,
// for a trial's line: "" when none did.
func SubstituteText(r *Result) string {
	if len(r.MappedImages) == 0 {
		return ""
	}
	var parts []string
	for _, p := range r.MappedImages {
		from, to, _ := strings.Cut(p, "=")
		parts = append(parts, to+" for "+from)
	}
	return "  [substitute base: " + strings.Join(parts, ", ") + "]"
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
