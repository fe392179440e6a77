package runner

import (
	"runtime"
	"time"

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
