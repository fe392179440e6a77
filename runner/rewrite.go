package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/vtrace"
	"github.com/flightdeck/flightdeck/runner/agent"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
)

// isRewrite reports whether t is task verify's rewrite attack, which needs
// its task's traced oracle graded first.
func isRewrite(t *suite.Trial) bool {
	return t.Variant.Agent == suite.AgentAttack && t.Variant.Attack == agent.AttackRewrite
}

// tracedOf is the trial whose record the rewrite attack t reads.
func tracedOf(t *suite.Trial) string {
	return suite.TrialID(t.Task.ID, results.VerifyTraced, 1)
}

// rewritesLast moves the rewrite attacks after every other trial, in
// order: a worker that takes one then finds its traced oracle started
// already (or done), so waiting for it cannot hold every worker.
func rewritesLast(todo []*suite.Trial) []*suite.Trial {
	out := slices.DeleteFunc(slices.Clone(todo), isRewrite)
	for _, t := range todo {
		if isRewrite(t) {
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
	t.Rewrite = rewritePlan(filepath.Join(s.dir, tracedOf(t)))
	return nil
}

// rewritePlan reads a traced oracle's trial dir: the files its verifier
// executed or loaded as code, less those the oracle changed in its work
// dir, and what the verifier printed.
func rewritePlan(dir string) *suite.Rewrite {
	res, err := results.ReadResult(filepath.Join(dir, results.ResultFile))
	if err != nil {
		return &suite.Rewrite{Note: "the traced oracle has no result (" + results.VerifyTraced + " did not finish)"}
	}
	f, err := os.Open(filepath.Join(dir, grader.TraceFile))
	if err != nil {
		why := "the traced oracle left no trace"
		if errors.Is(err, os.ErrNotExist) && res.Error != "" {
			why += ": " + res.Error
		}
		return &suite.Rewrite{Note: why}
	}
	defer f.Close()
	events, err := vtrace.Read(f)
	if err != nil {
		return &suite.Rewrite{Note: fmt.Sprintf("the trace does not read: %v", err)}
	}
	changed := diffFiles(dir, res.WorkDir)
	rw := &suite.Rewrite{}
	for _, tg := range vtrace.Targets(events, func(p string) bool { return changed[p] }) {
		rw.Files = append(rw.Files, tg.Path)
	}
	if len(rw.Files) == 0 {
		rw.Note = "the verifier ran or loaded no file outside the system's, /tests and the oracle's own work"
	}
	if out, err := os.ReadFile(filepath.Join(dir, results.GraderLog)); err == nil {
		rw.Output = string(out)
	}
	return rw
}

// diffFiles are the absolute paths of the files a trial changed in its
// work dir (diff.files).
func diffFiles(dir, workdir string) map[string]bool {
	out := map[string]bool{}
	data, err := os.ReadFile(filepath.Join(dir, results.DiffFiles))
	if err != nil || workdir == "" {
		return out
	}
	for line := range strings.Lines(string(data)) {
		name := strings.TrimRight(line, "\n")
		if uq, err := strconv.Unquote(name); err == nil && strings.HasPrefix(name, `"`) {
			name = uq
		}
		if name != "" {
			out[path.Join(workdir, name)] = true
		}
	}
	return out
}
