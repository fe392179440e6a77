package results

import (
	"fmt"
	"math"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/runner/suite"
)

// VariantStats are one variant's numbers. Infrastructure errors and refused
// tasks' trials are counted but left out of every rate, and so are the
// trials that showed a task's own defect and those that needed input:
// Graded = Trials - Errors - TaskErrors - Refused - NeedsInput.
type VariantStats struct {
	Variant          string             `json:"variant"`
	Agent            string             `json:"agent"`
	Expect           string             `json:"expect,omitempty"`
	Trials           int                `json:"trials"`
	Graded           int                `json:"graded"`
	Passed           int                `json:"passed"`
	Failed           int                `json:"failed"`
	AgentTimeouts    int                `json:"agent_timeouts"`
	VerifierTimeouts int                `json:"verifier_timeouts"`
	Errors           int                `json:"errors"`
	TaskErrors       int                `json:"task_errors"`
	Refused          int                `json:"refused"`
	NeedsInput       int                `json:"needs_input"`
	Cached           int                `json:"cached"`
	PassRate         *float64           `json:"pass_rate"`   // passed / graded
	MeanReward       *float64           `json:"mean_reward"` // over graded trials; no reward counts 0
	PassAtK          map[string]float64 `json:"pass_at_k,omitempty"`
	Classes          map[string]int     `json:"outcome_classes"`
	// MeanRewards are, per key of the reward files, the mean over the
	// graded trials whose reward file has that key. A key with a value
	// outside 0..1 (a count: passed, total) is not a reward: it is summed
	// in KeyTotals instead.
	MeanRewards map[string]float64 `json:"mean_rewards,omitempty"`
	KeyTotals   map[string]float64 `json:"key_totals,omitempty"`
}

// computeStats tallies results per variant, in the variants' order.
func computeStats(variants []suite.Variant, attempts int, results []*Result) []VariantStats {
	counts := countKeys(results)
	var out []VariantStats
	for _, v := range variants {
		out = append(out, variantStats(v, attempts, results, counts))
	}
	return out
}

// countKeys are the reward keys that are counts, not rewards: a key with
// a value outside 0..1 in any graded trial of the run, or one that carries
// a count of the trial's RESULT line (its passed or total, which the line
// declares counts: a one-trial run whose oracle failed 0 of 1 tests has no
// value above 1 to show it). A key's kind is the run's, whatever one
// variant's values happen to be (nop's passed=0 is a count of 0, not a
// mean).
func countKeys(results []*Result) map[string]bool {
	counts := map[string]bool{}
	for _, r := range results {
		if r.Outcome.Ungraded() {
			continue
		}
		for k, v := range r.Rewards {
			if v < 0 || v > 1 || resultCount(r.Summary, k, v) {
				counts[k] = true
			}
		}
	}
	return counts
}

// resultCount tells whether reward key k, of value v, is a count the
// grader's RESULT line declares: its passed or total, with the same value.
func resultCount(s *grader.Summary, k string, v float64) bool {
	if s == nil {
		return false
	}
	switch k {
	case "passed":
		return v == float64(s.Passed)
	case "total":
		return v == float64(s.Total)
	}
	return false
}

// variantStats are variant v's counts, rates and means over results.
func variantStats(v suite.Variant, attempts int, results []*Result, counts map[string]bool) VariantStats {
	st := VariantStats{Variant: v.Name, Agent: v.Agent, Expect: v.Expect, Classes: map[string]int{}}
	perTask := map[string][2]int{} // task → graded, passed
	var taskOrder []string
	sum := 0.0
	keys := map[string][2]float64{} // key → sum, trials
	for _, r := range results {
		if r.Variant != v.Name {
			continue
		}
		st.Trials++
		if r.Cached {
			st.Cached++
		}
		st.Classes[string(r.OutcomeClass)]++
		if !st.count(r.Outcome) {
			continue
		}
		st.Graded++
		if r.Reward != nil {
			sum += *r.Reward
		}
		for k, v := range r.Rewards {
			keys[k] = [2]float64{keys[k][0] + v, keys[k][1] + 1}
		}
		pt, seen := perTask[r.TaskID]
		if !seen {
			taskOrder = append(taskOrder, r.TaskID)
		}
		pt[0]++
		if r.Outcome == grader.OutcomePassed {
			pt[1]++
		}
		perTask[r.TaskID] = pt
	}
	if st.Graded == 0 {
		return st
	}
	rate := float64(st.Passed) / float64(st.Graded)
	mean := sum / float64(st.Graded)
	st.PassRate, st.MeanReward = &rate, &mean
	for k, sn := range keys {
		if counts[k] {
			if st.KeyTotals == nil {
				st.KeyTotals = map[string]float64{}
			}
			st.KeyTotals[k] = sn[0]
			continue
		}
		if st.MeanRewards == nil {
			st.MeanRewards = map[string]float64{}
		}
		st.MeanRewards[k] = sn[0] / sn[1]
	}
	st.PassAtK = map[string]float64{}
	for _, k := range passKs(attempts) {
		if p, ok := passAtK(k, taskOrder, perTask); ok {
			st.PassAtK[fmt.Sprintf("pass@%d", k)] = p
		}
	}
	return st
}

// count adds a trial's outcome to its counter, and tells whether the
// trial was graded (an infra error, refusal, task error or question is
// not, and is kept out of every rate).
func (st *VariantStats) count(o grader.Outcome) bool {
	switch o {
	case grader.OutcomeInfraError:
		st.Errors++
	case grader.OutcomeRefused:
		st.Refused++
	case grader.OutcomeTaskError:
		st.TaskErrors++
	case grader.OutcomeNeedsInput:
		st.NeedsInput++
	case grader.OutcomePassed:
		st.Passed++
		return true
	case grader.OutcomeAgentTimeout:
		st.AgentTimeouts++
		return true
	case grader.OutcomeVerifierTimeout:
		st.VerifierTimeouts++
		return true
	default:
		st.Failed++
		return true
	}
	return false
}

func passKs(attempts int) []int {
	if attempts <= 1 {
		return []int{1}
	}
	return []int{1, attempts}
}

// passAtK averages the unbiased pass@k estimator, 1 - C(n-c, k)/C(n, k),
// over the tasks with at least k graded attempts.
func passAtK(k int, tasks []string, perTask map[string][2]int) (float64, bool) {
	total, count := 0.0, 0
	for _, id := range tasks {
		n, c := perTask[id][0], perTask[id][1]
		if n < k {
			continue
		}
		total += 1 - comb(n-c, k)/comb(n, k)
		count++
	}
	if count == 0 {
		return 0, false
	}
	return math.Round(total/float64(count)*1e6) / 1e6, true
}

// comb is the binomial coefficient as a float (0 when k > n).
func comb(n, k int) float64 {
	if k < 0 || k > n {
		return 0
	}
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}
