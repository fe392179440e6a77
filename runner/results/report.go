package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/text"
	"github.com/flightdeck/flightdeck/runner/suite"
)

// Report is what `flightdeck report` shows of a run: each trial's outcome
// and spec verdicts, and per variant the rates with infrastructure errors
// left out.
type Report struct {
	RunID  string `json:"run_id"`
	Suite  string `json:"suite"`
	Dir    string `json:"dir"`
	Status string `json:"status"`
	// ExitCode is the code the run exited with (run.json's exit_code),
	// Expectations the trials whose variant's expectation failed.
	ExitCode     int                 `json:"exit_code"`
	Expectations []string            `json:"expectations_failed,omitempty"`
	Trials       []ReportTrial       `json:"trials"`
	Variants     []VariantStats      `json:"variants"`
	Refused      []suite.RefusedTask `json:"refused,omitempty"` // tasks that cannot run here, and why
	Missing      []string            `json:"missing,omitempty"` // trials whose result is absent or unreadable
	// Unreadable says, for each trial whose result.json exists but cannot
	// be read (truncated, corrupt, incomplete), why. `run --resume` reruns them.
	Unreadable map[string]string `json:"unreadable,omitempty"`
	// Metrics are the datasets' metric.py's (run.json's metrics).
	Metrics []DatasetMetric `json:"metrics,omitempty"`
}

// ReportTrial is one trial in a report.
type ReportTrial struct {
	TrialLine
	Refusal *suite.Refusal   `json:"refusal,omitempty"`
	Specs   []grader.Verdict `json:"specs,omitempty"`
}

// RunDir finds a run's directory: runID under resultsDir, or runID itself
// when it is a path to a run directory.
func RunDir(resultsDir, runID string) (string, error) {
	if suite.ValidName(runID) {
		dir := filepath.Join(resultsDir, runID)
		if _, err := os.Stat(filepath.Join(dir, RunFile)); err == nil {
			return dir, nil
		}
	}
	if _, err := os.Stat(filepath.Join(runID, RunFile)); err == nil {
		return filepath.Abs(runID)
	}
	if err := NotARun(runID); err != nil {
		return "", err
	}
	return "", suite.UsageErrorf("no run %s in %s (run.json not found)", runID, resultsDir)
}

// NotARun is the error for a results dir named where a run is wanted (a
// newcomer's `report results`): it says what to type instead. nil when
// dir holds no run.
func NotARun(dir string) error {
	runs := RunsIn(dir)
	if len(runs) == 0 {
		return nil
	}
	latest := runs[len(runs)-1]
	return suite.UsageErrorf("%s is a results dir, not a run: it holds %d run(s), the latest %s; name one: %s --results %s",
		dir, len(runs), latest, latest, dir)
}

// RunsIn lists the runs a results dir holds (dirs with a run.json), by
// name: run ids sort by their start time.
func RunsIn(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var runs []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(dir, e.Name(), RunFile)); e.IsDir() && err == nil {
			runs = append(runs, e.Name())
		}
	}
	return runs
}

// LoadReport reads a run's record and results.
func LoadReport(dir string) (*Report, error) {
	rec, err := ReadRunRecord(dir)
	if err != nil {
		return nil, err
	}
	results, missing, unreadable := readResults(dir, rec)
	rep := &Report{RunID: rec.RunID, Suite: rec.Suite, Dir: dir, Status: rec.Status, Missing: missing, Unreadable: unreadable,
		ExitCode: rec.ExitCode, Expectations: rec.Expectations, Metrics: rec.Metrics}
	for _, r := range results {
		rep.Trials = append(rep.Trials, ReportTrial{TrialLine: lineOf(r), Refusal: r.Refusal, Specs: r.Specs})
	}
	rep.Variants = computeStats(rec.Config.Variants, rec.Config.Attempts, results)
	rep.Refused = refusedTasks(results)
	return rep, nil
}

// readResults reads every trial's result.json the record lists, and every
// other trial directory's, in the record's order. It returns the results,
// the trials without one, and why each existing but unreadable one is.
func readResults(dir string, rec *RunRecord) ([]*Result, []string, map[string]string) {
	var names []string
	seen := map[string]bool{}
	for _, t := range rec.Trials {
		names = append(names, t.Trial)
		seen[t.Trial] = true
	}
	names = append(names, rec.NotRun...)
	for _, n := range rec.NotRun {
		seen[n] = true
	}
	if ents, err := os.ReadDir(dir); err == nil {
		for _, e := range ents {
			if e.IsDir() && !seen[e.Name()] && strings.Count(e.Name(), "__") == 2 {
				names = append(names, e.Name())
			}
		}
	}
	var results []*Result
	var missing []string
	var unreadable map[string]string
	for _, n := range names {
		r, err := ReadResult(filepath.Join(dir, n, ResultFile))
		if err != nil {
			missing = append(missing, n)
			if !errors.Is(err, fs.ErrNotExist) {
				if unreadable == nil {
					unreadable = map[string]string{}
				}
				unreadable[n] = err.Error()
			}
			continue
		}
		results = append(results, r)
	}
	return results, missing, unreadable
}

// WriteReport prints a report: a line per trial with its outcome class and
// spec verdicts, then the per-variant rates.
func WriteReport(w io.Writer, rep *Report) {
	fmt.Fprintf(w, "run %s (%s, %s)\n\n", rep.RunID, rep.Suite, rep.Status)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "task\tvariant\tattempt\toutcome\tclass\treward\tspecs")
	for _, t := range rep.Trials {
		reward := rewardCell(t.Reward, t.Rewards)
		outcome := string(t.Outcome)
		if t.Cached {
			outcome += " (cached)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", t.TaskID, t.Variant, t.Attempt, outcome, t.OutcomeClass, reward, verdictsText(t.Specs))
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "variant\ttrials\tinfra errors\trefused\tgraded\tpassed\tpass rate\tmean reward\tclasses (infra errors and refused left out of rates)")
	for _, v := range rep.Variants {
		if v.Trials == 0 {
			continue // planned, none ran (a check with nothing to run)
		}
		var classes []string
		for _, k := range keysByValue(v.Classes) {
			classes = append(classes, fmt.Sprintf("%s=%d", k, v.Classes[k]))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", v.Variant, v.Trials, v.Errors, v.Refused, v.Graded, v.Passed,
			pct(v.PassRate), num(v.MeanReward), strings.Join(classes, " "))
	}
	tw.Flush()
	writeClassLegend(w, rep)
	writeKeyMeans(w, rep.Variants)
	WriteMetrics(w, rep.Metrics)
	lines := make([]TrialLine, len(rep.Trials))
	for i, t := range rep.Trials {
		lines[i] = t.TrialLine
	}
	writeReasons(w, lines, nil)
	writeRefused(w, rep.Refused)
	if len(rep.Expectations) > 0 {
		fmt.Fprintf(w, "\nexpectations failed: %s\n", strings.Join(rep.Expectations, ", "))
	}
	if len(rep.Missing) > 0 {
		fmt.Fprintf(w, "\nno result: %s\n", strings.Join(rep.Missing, ", "))
	}
	for _, n := range rep.Missing {
		if why, ok := rep.Unreadable[n]; ok {
			fmt.Fprintf(w, "unreadable result of %s: %s\n", n, why)
		}
	}
	if len(rep.Unreadable) > 0 || len(rep.Missing) > 0 && rep.Status == StatusInterrupted {
		fmt.Fprintf(w, "run again with: flightdeck run --resume %s\n", rep.RunID)
	}
	fmt.Fprintf(w, "\nexit code %d: %s\n", rep.ExitCode, ExitMeaning(rep.ExitCode))
}

// writeReasons says why each trial that did not pass ended as it did
// (a refused trial's reason is in the refused list); with only, for those
// trials alone.
func writeReasons(w io.Writer, trials []TrialLine, only []string) {
	var lines []string
	for _, t := range trials {
		why := t.Error
		if why == "" {
			why = t.Cause
		}
		listed := only != nil && slices.Contains(only, t.Trial)
		if t.Outcome == grader.OutcomePassed && listed {
			// A pass its variant did not expect: nothing went wrong to
			// quote, and that is the finding.
			lines = append(lines, fmt.Sprintf("  %s  passed, where its variant expects failed: it got the reward without "+
				"the work a pass needs (for nop, the empty attempt: the tests are weak)", t.Trial))
			continue
		}
		if t.Outcome == grader.OutcomePassed || t.Outcome == grader.OutcomeRefused || why == "" || only != nil && !listed {
			continue
		}
		lines = append(lines, fmt.Sprintf("  %s  %s: %s", t.Trial, t.Outcome, text.OneLine(why, 600)))
	}
	if len(lines) > 0 {
		fmt.Fprintf(w, "\nwhy:\n%s\n", strings.Join(lines, "\n"))
	}
}

func verdictsText(vs []grader.Verdict) string {
	if len(vs) == 0 {
		return "-"
	}
	var parts []string
	for _, v := range vs {
		s := v.SpecID + ":" + v.Status
		if v.RecordedBy != "" && v.RecordedBy != grader.JudgeRecorder {
			s += "(" + v.RecordedBy + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// RecordVerdict records a person's verdict (pass or fail) on a spec of a
// trial, rewriting that trial's result.json (atomically) and the run's
// record. The spec must be one the trial was judged on.
func RecordVerdict(runDir, trial, specID, status, note, who string) (*Result, error) {
	if status != grader.StatusPass && status != grader.StatusFail {
		return nil, suite.UsageErrorf("verdict %q: want pass or fail", status)
	}
	if !validTrialName(trial) {
		return nil, suite.UsageErrorf("trial %q: not a trial name (TASK__VARIANT__ATTEMPT)", trial)
	}
	path := filepath.Join(runDir, trial, ResultFile)
	r, err := ReadResult(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, suite.UsageErrorf("trial %s has no result in %s", trial, runDir)
		}
		return nil, suite.UsageErrorf("%v", err)
	}
	i := -1
	var ids []string
	for j, v := range r.Specs {
		ids = append(ids, v.SpecID)
		if v.SpecID == specID {
			i = j
		}
	}
	if i < 0 {
		return nil, suite.UsageErrorf("trial %s was not judged on spec %s (its specs: %s)", trial, specID, strings.Join(ids, ", "))
	}
	v := &r.Specs[i]
	v.Status, v.RecordedBy, v.Note = status, who, note
	v.Reason = "recorded by " + who
	var reward *grader.Reward
	if r.Reward != nil {
		reward = &grader.Reward{Value: *r.Reward}
	}
	r.OutcomeClass = grader.TrialOutcome(r.Outcome, reward, r.Specs)
	if err := WriteJSONFile(path, r); err != nil {
		return nil, err
	}
	if err := refreshRecord(runDir); err != nil {
		return r, err
	}
	return r, nil
}

// refreshRecord recomputes run.json's trials and stats from the results.
func refreshRecord(runDir string) error {
	rec, err := ReadRunRecord(runDir)
	if err != nil {
		return err
	}
	results, _, _ := readResults(runDir, rec)
	notRun := rec.NotRun
	FillRecord(rec, rec.Config.Variants, rec.Config.Attempts, results)
	rec.NotRun = notRun
	return WriteJSONFile(filepath.Join(runDir, RunFile), rec)
}

func validTrialName(s string) bool {
	parts := strings.Split(s, "__")
	return len(parts) == 3 && !strings.ContainsAny(s, `/\`) && s != "." && s != ".."
}

// WriteJSON prints v as indented JSON.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// refusedTasks lists each refused task of results once, in their order.
func refusedTasks(results []*Result) []suite.RefusedTask {
	var out []suite.RefusedTask
	seen := map[string]bool{}
	for _, r := range results {
		if r.Outcome != grader.OutcomeRefused || seen[r.TaskID] {
			continue
		}
		seen[r.TaskID] = true
		rt := suite.RefusedTask{ID: r.TaskID, Dir: r.TaskDir}
		if r.Refusal != nil {
			rt.Refusal = *r.Refusal
		} else {
			rt.Rule = r.Error
		}
		out = append(out, rt)
	}
	return out
}

// LoadResults reads a run's record and every result it has, in the
// record's order (trials without a readable result left out).
func LoadResults(dir string) (*RunRecord, []*Result, error) {
	rec, err := ReadRunRecord(dir)
	if err != nil {
		return nil, nil, err
	}
	rs, _, _ := readResults(dir, rec)
	return rec, rs, nil
}

// writeClassLegend says what each outcome class in the report means, the
// specification's names kept.
func writeClassLegend(w io.Writer, rep *Report) {
	seen := map[grader.SpecOutcome]bool{}
	var order []grader.SpecOutcome
	for _, t := range rep.Trials {
		if c := t.OutcomeClass; c != "" && !seen[c] {
			seen[c] = true
			order = append(order, c)
		}
	}
	if len(order) == 0 {
		return
	}
	slices.Sort(order)
	fmt.Fprintln(w, "\nclasses:")
	for _, c := range order {
		if m := c.Meaning(); m != "" {
			fmt.Fprintf(w, "  %s: %s\n", c, m)
		}
	}
}
