package runner

import (
	"context"
	"runtime"
	"time"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/runner/metric"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
)

// finishRecord fills in the trials, the stats and the exit code.
func (s *runState) finishRecord(rec *results.RunRecord, trials []*suite.Trial, interrupted bool) {
	done := s.ordered(trials)
	have := map[string]bool{}
	for _, r := range done {
		have[r.Trial] = true
	}
	rec.NotRun = nil
	for _, t := range trials {
		if !have[t.ID] {
			rec.NotRun = append(rec.NotRun, t.ID)
		}
	}
	rec.Versions.Go = runtime.Version()
	results.FillRecord(rec, s.cfg.Variants, s.cfg.Attempts, done)
	rec.Finished = time.Now().UTC()
	rec.Status = results.StatusFinished
	if interrupted || len(rec.NotRun) > 0 {
		rec.Status = results.StatusInterrupted
	}
	if interrupted {
		// The process exits 130 (a signal stopped it): run.json and
		// report.html say the same code.
		rec.ExitCode = results.ExitInterrupted
	}
}

// metrics runs the metric.py of the datasets the trials' tasks come from,
// over the finished trials, per variant.
func (s *runState) metrics(ctx context.Context, trials []*suite.Trial) []results.DatasetMetric {
	var rows []metric.Trial
	for _, r := range s.ordered(trials) {
		if r.Outcome == grader.OutcomeRefused {
			continue
		}
		rows = append(rows, metric.Trial{TaskDir: r.TaskDir, Variant: r.Variant, Reward: r.Reward, Rewards: r.Rewards})
	}
	var variants []string
	for _, v := range s.cfg.Variants {
		variants = append(variants, v.Name)
	}
	return metric.Compute(ctx, rows, variants)
}
