package results

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteComparison prints how run b differs from run a, as `report A B`
// does: each trial whose outcome or reward differs (or that only one run
// has), before and after, then each variant's counts in both.
func WriteComparison(w io.Writer, a, b *Report) {
	fmt.Fprintf(w, "run %s (%s, %s) → run %s (%s, %s)\n\n", a.RunID, a.Suite, a.Status, b.RunID, b.Suite, b.Status)
	before := map[string]ReportTrial{}
	for _, t := range a.Trials {
		before[t.Trial] = t
	}
	after := map[string]ReportTrial{}
	var order []string
	for _, t := range a.Trials {
		order = append(order, t.Trial)
	}
	for _, t := range b.Trials {
		after[t.Trial] = t
		if _, ok := before[t.Trial]; !ok {
			order = append(order, t.Trial)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "trial\tbefore\tafter")
	changed, up, down := 0, 0, 0
	for _, id := range order {
		x, inA := before[id]
		y, inB := after[id]
		bx, by := trialCell(x, inA), trialCell(y, inB)
		if bx == by {
			continue
		}
		changed++
		switch {
		case inA && inB && rewardOf(y) > rewardOf(x):
			up++
		case inA && inB && rewardOf(y) < rewardOf(x):
			down++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", id, bx, by)
	}
	if changed == 0 {
		fmt.Fprintln(w, "no trial's outcome or reward differs")
	} else {
		tw.Flush()
	}
	fmt.Fprintf(w, "\n%d of %d trial(s) differ (%d up, %d down)\n\n", changed, len(order), up, down)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "variant\tpassed before\tpassed after\tmean reward before\tmean reward after")
	va := map[string]VariantStats{}
	for _, v := range a.Variants {
		va[v.Variant] = v
	}
	seen := map[string]bool{}
	row := func(name string, x, y *VariantStats) {
		if (x == nil || x.Trials == 0) && (y == nil || y.Trials == 0) {
			return // ran in neither
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, passedText(x), passedText(y), meanText(x), meanText(y))
	}
	for _, v := range b.Variants {
		seen[v.Variant] = true
		var x *VariantStats
		if s, ok := va[v.Variant]; ok {
			x = &s
		}
		row(v.Variant, x, &v)
	}
	for _, v := range a.Variants {
		if !seen[v.Variant] {
			row(v.Variant, &v, nil)
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "\nexit code %d → %d\n", a.ExitCode, b.ExitCode)
}

// trialCell is a trial's outcome and reward, "-" when the run has none.
func trialCell(t ReportTrial, ok bool) string {
	if !ok {
		return "-"
	}
	s := string(t.Outcome)
	if t.Reward != nil || len(t.Rewards) > 0 {
		s += " " + rewardCell(t.Reward, t.Rewards)
	}
	return strings.TrimSpace(s)
}

func rewardOf(t ReportTrial) float64 {
	if t.Reward == nil {
		return 0
	}
	return *t.Reward
}

func passedText(v *VariantStats) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%d/%d", v.Passed, v.Graded)
}

func meanText(v *VariantStats) string {
	if v == nil {
		return "-"
	}
	return num(v.MeanReward)
}
