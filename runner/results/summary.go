package results

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/text"
	"github.com/flightdeck/flightdeck/runner/suite"
)

// WriteSummary prints a run's table (a row per task, a column per variant)
// and its per-variant numbers.
func WriteSummary(w io.Writer, rec *RunRecord) {
	writeMatrix(w, rec)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "variant\ttrials\tpassed\tfailed\ttimeouts\tinfra errors\ttask errors\trefused\tneeds input\tpass rate\tmean reward\tpass@k\tcached")
	for _, v := range rec.Variants {
		if v.Trials == 0 {
			continue // planned, none ran (a check with nothing to run); not a row of zeros
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%d\n", v.Variant, v.Trials, v.Passed, v.Failed,
			v.AgentTimeouts+v.VerifierTimeouts, v.Errors, v.TaskErrors, v.Refused, v.NeedsInput, pct(v.PassRate), num(v.MeanReward), passKText(v.PassAtK), v.Cached)
	}
	tw.Flush()
	writeKeyMeans(w, rec.Variants)
	WriteMetrics(w, rec.Metrics)
	writeRefused(w, rec.Refused)
	writeTaskErrors(w, rec.Trials)
	writeInfraErrors(w, rec.Trials)
	if len(rec.Substituted) > 0 {
		fmt.Fprintf(w, "\nsubstitute base images (verdicts hold for the image after =, not the one the task names; --no-substitute forbids): %s\n",
			strings.Join(rec.Substituted, ", "))
	}
	if len(rec.Expectations) > 0 {
		fmt.Fprintf(w, "\nexpectations failed: %s\n", strings.Join(rec.Expectations, ", "))
		// Why, here too: the progress lines may have gone elsewhere.
		lines := make([]TrialLine, len(rec.Trials))
		for i, t := range rec.Trials {
			lines[i] = t.TrialLine
		}
		writeReasons(w, lines, rec.Expectations)
	}
	if rec.Images != nil {
		fmt.Fprintf(w, "\n%s\n", rec.Images.Line())
	}
	if rec.Kept != nil {
		fmt.Fprintf(w, "\n%s\n", rec.Kept.Text(rec.RunID))
	}
	if len(rec.Tampered) > 0 {
		fmt.Fprintf(w, "\ntampering flagged (result.json's tamper lists the evidence):\n  %s\n", strings.Join(rec.Tampered, "\n  "))
	}
	switch {
	case len(rec.MissingShards) > 0:
		// A merge of some shards: nothing was interrupted, a shard's
		// run is not there.
		fmt.Fprintf(w, "\n%s without a result: %s; merge again with its run dir, or run it (--shard K/N) first\n",
			text.Count(len(rec.NotRun), "trial"), MissingShardsText(rec))
	case len(rec.NotRun) > 0:
		cwd, _ := os.Getwd()
		fmt.Fprintf(w, "\n%s without a result (interrupted); finish with: %s\n", text.Count(len(rec.NotRun), "trial"), ResumeCommand(rec, cwd))
	}
	fmt.Fprintf(w, "\nresults: %s\n", rec.Dir)
	if _, err := os.Stat(filepath.Join(rec.Dir, ReportPage)); err == nil {
		fmt.Fprintf(w, "report:  %s\n", filepath.Join(rec.Dir, ReportPage))
	}
}

// writeMatrix writes the table of task × variant, a trial without a
// result in its cell too.
func writeMatrix(w io.Writer, rec *RunRecord) {
	var tasks []string
	cells := map[string]map[string][]TrialSummary{}
	for _, t := range rec.Trials {
		if cells[t.TaskID] == nil {
			cells[t.TaskID] = map[string][]TrialSummary{}
			tasks = append(tasks, t.TaskID)
		}
		cells[t.TaskID][t.Variant] = append(cells[t.TaskID][t.Variant], t)
	}
	// A trial without a result (the run was interrupted, or its shard is
	// missing) has its row and cell too.
	notRun := map[string]map[string]int{}
	for _, id := range rec.NotRun {
		task, variant, _ := splitTrialID(id)
		if cells[task] == nil {
			cells[task] = map[string][]TrialSummary{}
			tasks = append(tasks, task)
		}
		if notRun[task] == nil {
			notRun[task] = map[string]int{}
		}
		notRun[task][variant]++
	}
	var variants []string
	for _, v := range rec.Variants {
		variants = append(variants, v.Variant)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "task\t%s\n", strings.Join(variants, "\t"))
	for _, task := range tasks {
		row := []string{task}
		for _, v := range variants {
			cell := cellText(cells[task][v])
			if n := notRun[task][v]; n > 0 {
				word := "not run"
				if rec.Status == StatusInterrupted {
					word = "interrupted"
				}
				if len(cells[task][v]) == 0 {
					cell = word
				} else {
					cell += fmt.Sprintf(", %d %s", n, word)
				}
			}
			row = append(row, cell)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	tw.Flush()
}

// cellText is one task × variant cell: the outcome and reward for one
// attempt, passed/graded for several.
func cellText(ts []TrialSummary) string {
	switch len(ts) {
	case 0:
		return "-"
	case 1:
		t := ts[0]
		s := string(t.Outcome)
		if t.Reward != nil || len(t.Rewards) > 0 {
			s += " " + rewardCell(t.Reward, t.Rewards)
		}
		if t.Tamper > 0 {
			s += " (tamper)"
		}
		if t.Cached {
			s += " (cached)"
		}
		return s
	}
	passed, graded, refused, taskErrs, needsInput, cached := 0, 0, 0, 0, 0, 0
	for _, t := range ts {
		if t.Outcome == grader.OutcomeTaskError {
			taskErrs++
		}
		if t.Outcome == grader.OutcomeNeedsInput {
			needsInput++
		}
		if !t.Outcome.Ungraded() {
			graded++
		}
		if t.Outcome == grader.OutcomeRefused {
			refused++
		}
		if t.Outcome == grader.OutcomePassed {
			passed++
		}
		if t.Cached {
			cached++
		}
	}
	if refused == len(ts) {
		return string(grader.OutcomeRefused)
	}
	s := fmt.Sprintf("%d/%d passed", passed, graded)
	if errs := len(ts) - graded - refused - taskErrs - needsInput; errs > 0 {
		s += fmt.Sprintf(", infra_error %d", errs)
	}
	if taskErrs > 0 {
		s += fmt.Sprintf(", task_error %d", taskErrs)
	}
	if refused > 0 {
		s += fmt.Sprintf(", refused %d", refused)
	}
	if needsInput > 0 {
		s += fmt.Sprintf(", needs_input %d", needsInput)
	}
	if cached == len(ts) {
		s += " (cached)"
	}
	return s
}

// writeTaskErrors lists the tasks whose trials showed the task's own
// defect, once each, with the first trial's reason.
func writeTaskErrors(w io.Writer, trials []TrialSummary) {
	var lines []string
	seen := map[string]bool{}
	for _, t := range trials {
		if t.Outcome != grader.OutcomeTaskError || seen[t.TaskID] {
			continue
		}
		seen[t.TaskID] = true
		lines = append(lines, fmt.Sprintf("  %s: %s", t.TaskID, text.OneLine(t.Error, 600)))
	}
	if len(lines) > 0 {
		fmt.Fprintf(w, "\ntask errors (the task's own defect, not the agent's: fix the task; left out of every rate):\n%s\n", strings.Join(lines, "\n"))
	}
}

// writeKeyMeans prints each variant's mean per reward key, when some
// reward file had keys besides reward.
func writeKeyMeans(w io.Writer, vs []VariantStats) {
	var lines []string
	for _, v := range vs {
		_, only := v.MeanRewards["reward"]
		if len(v.KeyTotals) == 0 && (len(v.MeanRewards) == 0 || only && len(v.MeanRewards) == 1) {
			continue
		}
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(v.MeanRewards)) {
			parts = append(parts, fmt.Sprintf("%s=%.3f", k, v.MeanRewards[k]))
		}
		line := "  " + v.Variant + ": " + strings.Join(parts, " ")
		if len(v.KeyTotals) > 0 {
			var sums []string
			for _, k := range slices.Sorted(maps.Keys(v.KeyTotals)) {
				sums = append(sums, fmt.Sprintf("%s=%g", k, v.KeyTotals[k]))
			}
			if len(parts) > 0 {
				line += ";"
			}
			line += " summed (counts, not rewards): " + strings.Join(sums, " ")
		}
		lines = append(lines, line)
	}
	if len(lines) > 0 {
		fmt.Fprintf(w, "\nmean reward per key (over the graded trials that wrote the key):\n%s\n", strings.Join(lines, "\n"))
	}
}

// writeRefused lists the tasks that cannot run here, with why.
func writeRefused(w io.Writer, refused []suite.RefusedTask) {
	if len(refused) == 0 {
		return
	}
	fmt.Fprintln(w, "\nrefused tasks (not run, left out of every rate):")
	for _, rt := range refused {
		fmt.Fprintf(w, "  %s: %s\n", rt.ID, rt.Refusal)
	}
}

func pct(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", *p*100)
}

func num(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.3f", *p)
}

func passKText(m map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%.3f", k, m[k]))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

// MissingShardsText names a merged run's missing shards: "shard 2 of 3 is
// missing", "shards 2, 3 of 4 are missing".
func MissingShardsText(rec *RunRecord) string {
	n := 0
	for _, sh := range rec.Shards {
		var k, of int
		if _, err := fmt.Sscanf(sh, "%d/%d", &k, &of); err == nil {
			n = of
		}
	}
	ks := make([]string, len(rec.MissingShards))
	for i, k := range rec.MissingShards {
		ks[i] = fmt.Sprint(k)
	}
	if len(ks) == 1 {
		return fmt.Sprintf("shard %s of %d is missing", ks[0], n)
	}
	return fmt.Sprintf("shards %s of %d are missing", strings.Join(ks, ", "), n)
}

// WriteMetrics prints what the datasets' metric.py computed, per variant,
// or why it did not.
func WriteMetrics(w io.Writer, ms []DatasetMetric) {
	script := ""
	for _, m := range ms {
		if m.Script != script {
			script = m.Script
			fmt.Fprintf(w, "\nmetrics of dataset %s (%s, per variant):\n", m.Dataset, m.Script)
		}
		fmt.Fprintf(w, "  %s (%s): %s\n", m.Variant, text.Count(m.Trials, "trial"), MetricText(m))
	}
}

// MetricText is one variant's metrics, key=value in key order, or why
// there are none.
func MetricText(m DatasetMetric) string {
	if m.Error != "" {
		return m.Error
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m.Metrics)) {
		v := m.Metrics[k]
		if f, ok := v.(float64); ok {
			parts = append(parts, fmt.Sprintf("%s=%.4g", k, f))
			continue
		}
		data, _ := json.Marshal(v) // from JSON: cannot fail
		parts = append(parts, k+"="+string(data))
	}
	if len(parts) == 0 {
		return "(no metric)"
	}
	return strings.Join(parts, " ")
}

// writeInfraErrors says, per trial the machine failed, why: the progress
// lines that said it may have gone elsewhere.
func writeInfraErrors(w io.Writer, trials []TrialSummary) {
	var lines []string
	for _, t := range trials {
		if t.Outcome == grader.OutcomeInfraError && t.Error != "" {
			lines = append(lines, fmt.Sprintf("  %s: %s", t.Trial, text.OneLine(t.Error, 600)))
		}
	}
	if len(lines) > 0 {
		fmt.Fprintf(w, "\ninfra errors (the machine's, not the task's or the agent's; left out of every rate):\n%s\n", strings.Join(lines, "\n"))
	}
}
