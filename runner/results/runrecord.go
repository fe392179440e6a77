package results

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/text"
	"github.com/flightdeck/flightdeck/runner/suite"
)

// RunSchema is the version of run.json's layout.
const RunSchema = 1

// Run statuses.
const (
	StatusRunning     = "running"
	StatusFinished    = "finished"
	StatusInterrupted = "interrupted"
)

// RunRecord is run.json: what was run, with what, when, and how it went.
// It is written when the run starts (status running, so --resume can find
// its configuration) and again when it ends.
type RunRecord struct {
	Schema         int          `json:"schema"`
	RunID          string       `json:"run_id"`
	Dir            string       `json:"dir"`
	Suite          string       `json:"suite"`
	SuiteFile      string       `json:"suite_file,omitempty"`
	Config         suite.Config `json:"config"`
	Versions       Versions     `json:"versions"`
	Started        time.Time    `json:"started"`
	Finished       time.Time    `json:"finished,omitzero"`
	Resumed        []time.Time  `json:"resumed,omitempty"`
	Status         string       `json:"status"`
	FallbackImages []string     `json:"fallback_images,omitempty"` // "from=to" the run chose because from was missing
	// Substituted are every "from=to" stand-in of the run's trials (the
	// image map's and the fallbacks): their verdicts hold for to, not from.
	Substituted  []string            `json:"substituted_images,omitempty"`
	Trials       []TrialSummary      `json:"trials"`
	NotRun       []string            `json:"not_run,omitempty"` // trials without a result (interrupted)
	Refused      []suite.RefusedTask `json:"refused,omitempty"` // tasks that cannot run here, and why
	Variants     []VariantStats      `json:"variants"`
	Expectations []string            `json:"expectations_failed,omitempty"` // trials whose variant's expectation failed
	Tampered     []string            `json:"tampered,omitempty"`            // trials the tamper inspector flagged: "trial: kind path, ..."
	// Images is what the run's image budget did at its end; nil without one.
	Images *ImageBudget `json:"images,omitempty"`
	// Kept is what a run with --keep left in place; nil without --keep.
	Kept *Kept `json:"kept,omitempty"`
	// Shards are the shard runs a merged run joins ("K/N RUN_ID"), and
	// MissingShards those it lacks (flightdeck merge --allow-missing).
	Shards        []string `json:"shards,omitempty"`
	MissingShards []int    `json:"missing_shards,omitempty"`
	ExitCode      int      `json:"exit_code"`
	// Metrics are what the metric.py of the datasets the run's tasks come
	// from computed, per variant.
	Metrics []DatasetMetric `json:"metrics,omitempty"`
}

// Versions of what ran the run.
type Versions struct {
	Flightdeck string `json:"flightdeck"`
	Go         string `json:"go"`
	Engine     string `json:"engine,omitempty"`
	EngineAPI  string `json:"engine_api,omitempty"`
}

// TrialLine is what run.json and a report both say of a trial.
type TrialLine struct {
	Trial        string             `json:"trial"`
	TaskID       string             `json:"task_id"`
	Variant      string             `json:"variant"`
	Attempt      int                `json:"attempt"`
	Outcome      grader.Outcome     `json:"outcome"`
	OutcomeClass grader.SpecOutcome `json:"outcome_class"`
	Reward       *float64           `json:"reward"`
	Rewards      map[string]float64 `json:"rewards,omitempty"` // every key of the reward file
	Cached       bool               `json:"cached"`
	Error        string             `json:"error,omitempty"`
	Cause        string             `json:"cause,omitempty"`  // why a graded trial failed, as its grader said
	Tamper       int                `json:"tamper,omitempty"` // tamper findings (result.json lists them)
}

// lineOf is a result's TrialLine.
func lineOf(r *Result) TrialLine {
	return TrialLine{Trial: r.Trial, TaskID: r.TaskID, Variant: r.Variant, Attempt: r.Attempt, Outcome: r.Outcome,
		OutcomeClass: r.OutcomeClass, Reward: r.Reward, Rewards: r.Rewards, Cached: r.Cached, Error: r.Error,
		Cause: r.Cause, Tamper: len(r.Tamper)}
}

// TrialSummary is one trial's line in run.json.
type TrialSummary struct {
	TrialLine
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Seconds  float64   `json:"seconds"`
}

// ReadRunRecord reads dir/run.json.
func ReadRunRecord(dir string) (*RunRecord, error) {
	data, err := os.ReadFile(filepath.Join(dir, RunFile))
	if err != nil {
		return nil, err
	}
	var rec RunRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, RunFile), err)
	}
	if rec.Schema != RunSchema || rec.RunID == "" {
		return nil, fmt.Errorf("%s: not a flightdeck run record", filepath.Join(dir, RunFile))
	}
	return &rec, nil
}

// FillRecord computes trials, stats, expectations, refused tasks and the
// exit code from results.
func FillRecord(rec *RunRecord, variants []suite.Variant, attempts int, results []*Result) {
	rec.Trials = nil
	rec.Substituted = nil
	rec.Expectations = nil
	rec.Tampered = nil
	infra, defects := false, false
	for _, r := range results {
		rec.Trials = append(rec.Trials, TrialSummary{TrialLine: lineOf(r),
			Started: r.Started, Finished: r.Finished, Seconds: RoundSeconds(r.Finished.Sub(r.Started))})
		if r.Expectation != nil && !*r.Expectation {
			rec.Expectations = append(rec.Expectations, r.Trial)
		}
		if len(r.Tamper) > 0 {
			rec.Tampered = append(rec.Tampered, r.Trial+": "+TamperText(r))
		}
		infra = infra || r.Outcome == grader.OutcomeInfraError
		defects = defects || r.Outcome == grader.OutcomeTaskError
		for _, p := range r.MappedImages {
			if !slices.Contains(rec.Substituted, p) {
				rec.Substituted = append(rec.Substituted, p)
			}
		}
	}
	slices.Sort(rec.Substituted)
	rec.Variants = computeStats(variants, attempts, results)
	rec.Refused = refusedTasks(results)
	rec.ExitCode = ExitCode(len(rec.Expectations) > 0, defects || len(rec.Refused) > 0, infra || len(rec.NotRun) > 0)
}

// The exit codes of a run (docs/running.md has the table). When several
// apply, the first in this order wins: a failed expectation says most about
// what was run, an infrastructure error least.
const (
	ExitOK          = 0 // every trial graded, every expectation held
	ExitExpectation = 1 // a trial's outcome was not what its variant expects
	ExitUsage       = 2 // bad flags or suite file, a task dir that is not there: nothing ran
	ExitInfra       = 3 // an infrastructure error left after retries, or trials without a result
	ExitTask        = 4 // a task's own defect (task_error) or a refused task
	ExitInterrupted = 130
)

// ExitMeaning says what a run's exit code means, as the table in
// docs/running.md does.
func ExitMeaning(code int) string {
	switch code {
	case ExitOK:
		return "every trial graded, every expectation held"
	case ExitExpectation:
		return "a trial's outcome was not what its variant expects"
	case ExitUsage:
		return "a usage error: nothing ran"
	case ExitInfra:
		return "an infrastructure error left after retries, or trials without a result"
	case ExitTask:
		return "a task's own defect (task_error) or a refused task"
	case ExitInterrupted:
		return "interrupted"
	}
	return "unknown"
}

// ExitCode is a run's exit code from what went wrong in it.
func ExitCode(expectationFailed, taskDefect, infra bool) int {
	switch {
	case expectationFailed:
		return ExitExpectation
	case taskDefect:
		return ExitTask
	case infra:
		return ExitInfra
	}
	return ExitOK
}

// ImageBudget is the image cache's state when a run's image budget was
// Kept is what a run with --keep left on the engine and on disk.
type Kept struct {
	Containers int    `json:"containers"`
	Networks   int    `json:"networks"`
	Volumes    int    `json:"volumes"`
	Images     int    `json:"images"`             // snapshots of trials' containers
	WorkDir    string `json:"work_dir,omitempty"` // the trials' work dirs and scratch files
	Cached     int    `json:"cached"`             // trials that came from the cache: nothing of theirs ran, nothing is kept
}

// Text says what was kept and how to look at it and remove it.
func (k *Kept) Text(runID string) string {
	engine := k.Containers + k.Networks + k.Volumes + k.Images
	if engine == 0 && k.WorkDir == "" {
		if k.Cached > 0 {
			return "kept nothing (--keep): every trial came from the results cache; --no-cache --keep runs them again and keeps what they leave"
		}
		return "kept nothing (--keep)"
	}
	var on []string
	for _, c := range []struct {
		n    int
		noun string
	}{{k.Containers, "container"}, {k.Networks, "network"}, {k.Volumes, "volume"}, {k.Images, "snapshot image"}} {
		if c.n > 0 {
			on = append(on, text.Count(c.n, c.noun))
		}
	}
	s := "kept (--keep): nothing on the engine"
	if len(on) > 0 {
		s = fmt.Sprintf("kept (--keep): %s of run %s on the engine", strings.Join(on, ", "), runID)
	}
	if k.WorkDir != "" {
		s += ", the trials' work dirs in " + k.WorkDir
	}
	s += fmt.Sprintf("; a shell in a trial's: flightdeck trial shell %s TRIAL; remove them: flightdeck gc --run %s", runID, runID)
	if k.WorkDir != "" {
		s += " and rm -rf " + k.WorkDir
	}
	if k.Cached > 0 {
		s += fmt.Sprintf("; %s came from the results cache and kept nothing", text.Count(k.Cached, "trial"))
	}
	return s
}

// enforced: sizes in bytes, the sum of the task images' own layers (not
// their base images', which flightdeck does not evict).
type ImageBudget struct {
	Budget  int64    `json:"budget"`
	Before  int64    `json:"before"`
	After   int64    `json:"after"`
	Freed   int64    `json:"freed"`
	Evicted []string `json:"evicted,omitempty"`
}

// Line says what the budget did, in one line.
func (b ImageBudget) Line() string {
	if len(b.Evicted) == 0 {
		return fmt.Sprintf("images: %s cached, within the budget of %s", text.Bytes(b.After), text.Bytes(b.Budget))
	}
	return fmt.Sprintf("images: evicted %d least recently used (%s) to fit the budget of %s; %s cached",
		len(b.Evicted), text.Bytes(b.Freed), text.Bytes(b.Budget), text.Bytes(b.After))
}

// ResumeCommand is the command that finishes rec's run from cwd: with
// --results when the run's results dir is not the one flightdeck would
// look in there, so that it works as printed.
func ResumeCommand(rec *RunRecord, cwd string) string {
	cmd := "flightdeck run --resume " + rec.RunID
	dir := filepath.Dir(rec.Dir)
	if cwd == "" || filepath.Clean(suite.DefaultResultsDir(cwd)) != filepath.Clean(dir) {
		if rel, err := filepath.Rel(cwd, dir); cwd != "" && err == nil && !strings.HasPrefix(rel, "..") {
			dir = rel
		}
		cmd += " --results " + shellQuote(dir)
	}
	return cmd
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:@+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// DatasetMetric is one dataset's metric.py over one variant's trials.
type DatasetMetric struct {
	Dataset string         `json:"dataset"`
	Script  string         `json:"script"`
	Variant string         `json:"variant"`
	Trials  int            `json:"trials"`
	Metrics map[string]any `json:"metrics,omitempty"`
	// Error says why there are no metrics: not run, or failed.
	Error string `json:"error,omitempty"`
}
