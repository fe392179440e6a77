package runner

import (
	"fmt"
	"path/filepath"
	"sort"
	"time"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/files"
	"github.com/flightdeck/flightdeck/runner/agent"
	"github.com/flightdeck/flightdeck/runner/harbor"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/tasks"
)

// runRefusal is why a loaded task still cannot run: a host variable its
// env tables need is unset, a phase's network is one the runner cannot
// give, its memory does not parse, or the oracle would replay a
// deterministic.json that is invalid. nil when it can run.
func runRefusal(t *tasks.Task, variants []suite.Variant) *suite.Refusal {
	toml := t.Path(tasks.TaskFile)
	if err := harbor.CheckRunnable(t); err != nil {
		r := suite.RefusalOf(err, toml)
		return &r
	}
	if _, err := t.MemoryBytes(); err != nil {
		r := suite.RefusalOf(err, toml)
		return &r
	}
	if script := t.Path(tasks.SolutionDir, "deterministic.json"); fileExists(script) && usesOracle(variants) {
		if _, err := agent.LoadScript(script); err != nil {
			r := suite.RefusalOf(err, script)
			return &r
		}
	}
	return nil
}

// planRefused lists a refused task's trials, as PlanTrials would list its
// trials had it loaded: variant, attempt order. They have no cache key: a
// refused task is checked again on every run.
func planRefused(cfg suite.Config, rt suite.RefusedTask) []*suite.Trial {
	task := &tasks.Task{ID: rt.ID, Dir: rt.Dir}
	refusal := rt.Refusal
	var out []*suite.Trial
	for _, v := range cfg.Variants {
		if v.HarborOnly {
			continue
		}
		for a := 1; a <= cfg.Attempts; a++ {
			out = append(out, &suite.Trial{ID: suite.TrialID(rt.ID, v.Name, a), Task: task, Variant: v, Attempt: a, Refusal: &refusal})
		}
	}
	return out
}

// inTaskOrder orders trials by their task's place in dirs (the run's task
// dirs), keeping the order of each task's trials.
func inTaskOrder(dirs []string, trials []*suite.Trial) []*suite.Trial {
	place := map[string]int{}
	for i, d := range dirs {
		place[filepath.Clean(d)] = i
	}
	at := func(t *suite.Trial) int {
		if i, ok := place[filepath.Clean(t.Task.Dir)]; ok {
			return i
		}
		return len(dirs)
	}
	sort.SliceStable(trials, func(i, j int) bool { return at(trials[i]) < at(trials[j]) })
	return trials
}

// splitRefused separates the trials of refused tasks from those that run.
func splitRefused(trials []*suite.Trial) (run, refused []*suite.Trial) {
	for _, t := range trials {
		if t.Refusal != nil {
			refused = append(refused, t)
		} else {
			run = append(run, t)
		}
	}
	return run, refused
}

// refuse writes the results of refused trials: nothing ran, the reason is
// recorded. A result that cannot be written leaves its trial without one.
func (s *runState) refuse(trials []*suite.Trial) {
	for _, t := range trials {
		res := s.refusedResult(t)
		if err := files.ResetDir(filepath.Join(s.dir, t.ID)); err != nil {
			s.progress.Line(fmt.Sprintf("%s: %v", t.ID, err))
			continue
		}
		if err := results.WriteJSONFile(filepath.Join(s.dir, t.ID, results.ResultFile), res); err != nil {
			s.progress.Line(fmt.Sprintf("%s: %v", t.ID, err))
			continue
		}
		s.record(t, res)
		s.progress.Refused(t, res)
	}
}

// refusedResult is a refused trial's result.
func (s *runState) refusedResult(t *suite.Trial) *results.Result {
	now := time.Now().UTC()
	refusal := *t.Refusal
	res := &results.Result{
		Schema: results.ResultSchema, RunID: s.runID, Trial: t.ID, TaskID: t.Task.ID, TaskDir: t.Task.Dir,
		Variant: t.Variant.Name, Agent: t.Variant.Agent, Attempt: t.Attempt, Started: now, Finished: now,
		Outcome: grader.OutcomeRefused, OutcomeClass: grader.SpecRefused, Error: "refused: " + refusal.String(),
		Refusal: &refusal,
	}
	results.SetExpectation(res, t.Variant)
	return res
}
