package results

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/flightdeck/flightdeck/internal/text"
)

// RegradeDelta is how a regrade's rewards differ from the recorded
// trials', over the trials it graded anew (refused ones, and those that
// ended without a grade, are left out).
type RegradeDelta struct {
	Trials, Changed, Up, Down int
	MeanBefore, MeanAfter     float64
	// Rebuilt counts the trials graded from a work dir rebuilt from their
	// diff.patch, not from their recorded artifacts.
	Rebuilt int
	// NotGraded counts the regrade's trials left out of the delta: refused,
	// or ended without a grade.
	NotGraded int
	// Lines are the trials whose reward changed: trial, before, after.
	Lines [][3]string
}

// Delta compares each regraded trial's reward with its source's; a trial
// without a reward counts 0 in the means, as in a variant's mean reward.
func Delta(rs []*Result) RegradeDelta {
	var d RegradeDelta
	var before, after float64
	for _, r := range rs {
		src := r.RegradedFrom
		if src == nil {
			continue
		}
		if r.Outcome.Ungraded() {
			// Refused, or not graded (a task_error: the recorded work did
			// not rebuild): no reward to compare; the summary says why.
			d.NotGraded++
			continue
		}
		d.Trials++
		if src.Reproduced == ReproducedWorkdir {
			d.Rebuilt++
		}
		b, a := rewardOr0(src.Reward), rewardOr0(r.Reward)
		before, after = before+b, after+a
		if (src.Reward == nil) == (r.Reward == nil) && b == a {
			continue
		}
		d.Changed++
		switch {
		case a > b:
			d.Up++
		case a < b:
			d.Down++
		}
		d.Lines = append(d.Lines, [3]string{r.Trial, rewardOrNone(src.Reward, src.Outcome), rewardOrNone(r.Reward, string(r.Outcome))})
	}
	if d.Trials > 0 {
		d.MeanBefore, d.MeanAfter = before/float64(d.Trials), after/float64(d.Trials)
	}
	return d
}

func rewardOr0(r *float64) float64 {
	if r == nil {
		return 0
	}
	return *r
}

func rewardOrNone(r *float64, outcome string) string {
	if r == nil {
		return outcome + ", no reward"
	}
	return fmt.Sprintf("%s %g", outcome, *r)
}

// WriteDelta prints the trials whose reward changed and the delta line,
// in Harbor's words.
func WriteDelta(w io.Writer, d RegradeDelta) {
	if d.Trials == 0 {
		fmt.Fprintln(w, "\nNothing was regraded: every trial was refused or ended without a grade (the summary above says why)")
		return
	}
	if len(d.Lines) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "trial\trecorded\tregraded")
		for _, l := range d.Lines {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", l[0], l[1], l[2])
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "\nRegrade delta over %d trial(s): %d changed (%d up, %d down), mean reward %.3f → %.3f\n",
		d.Trials, d.Changed, d.Up, d.Down, d.MeanBefore, d.MeanAfter)
	if d.NotGraded > 0 {
		fmt.Fprintf(w, "not in the delta: %s refused or ended without a grade (the summary above says why)\n", text.Count(d.NotGraded, "trial"))
	}
	if d.Rebuilt > 0 {
		fmt.Fprintf(w, "graded in a work dir rebuilt from the recorded diff.patch: %s; only the work dir is reproduced, "+
			"not what the agent changed outside it nor the processes it left (Harbor refuses such a regrade)\n", text.Count(d.Rebuilt, "trial"))
	}
}
