package runner

import (
	"context"
	"path/filepath"
	"slices"

	"github.com/flightdeck/flightdeck/runner/agent"
	"github.com/flightdeck/flightdeck/runner/audit"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
)

// readsTrace reports whether t is one of task verify's trials made from
// its task's traced oracle (the rewrite and answer attacks, the oracle
// with the answers hidden), which must be graded first.
func readsTrace(t *suite.Trial) bool {
	return t.Variant.Agent == suite.AgentAttack && agent.ReadsOracle(t.Variant.Attack) || t.Variant.HideAnswers
}

// tracedOf is the trial whose record the attack t reads.
func tracedOf(t *suite.Trial) string {
	return suite.TrialID(t.Task.ID, results.VerifyTraced, 1)
}

// tracedLast moves those attacks after every other trial, in
// order: a worker that takes one then finds its traced oracle started
// already (or done), so waiting for it cannot hold every worker.
func tracedLast(todo []*suite.Trial) []*suite.Trial {
	out := slices.DeleteFunc(slices.Clone(todo), readsTrace)
	for _, t := range todo {
		if readsTrace(t) {
			out = append(out, t)
		}
	}
	return out
}

// waitForTrace waits for t's traced oracle when it runs in this run, then
// sets t's plan from its record.
func (s *runState) waitForTrace(ctx context.Context, t *suite.Trial) error {
	if done, ok := s.done[tracedOf(t)]; ok {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	t.Rewrite = audit.RewritePlan(filepath.Join(s.dir, tracedOf(t)))
	return nil
}
