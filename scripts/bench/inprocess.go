package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/flightdeck/flightdeck/internal/files"
	"github.com/flightdeck/flightdeck/runner"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/sandbox"
)

// inProcessRun is one run of flightdeck's runner inside this process.
type inProcessRun struct {
	rec     *results.RunRecord
	wall    time.Duration // Prepare (suite and task load) to the end of Run
	windows map[string]window
	byTrial map[string]*results.Result
	calls   []call
}

// runInProcess runs a suite with flightdeck's runner, as `flightdeck run`
// does, on the bench's (timed) engine. Every trial must pass.
func (b *bench) runInProcess(ctx context.Context, suiteFile, resultsDir string, noCache bool) (*inProcessRun, error) {
	b.eng.take()
	progress := &stampedLines{}
	start := time.Now()
	req, err := runner.Prepare(ctx, suiteFile, suite.Options{Cwd: b.ws.root, Results: resultsDir, NoCache: noCache, Retries: -1})
	if err != nil {
		return nil, fmt.Errorf("prepare %s: %w", suiteFile, err)
	}
	// The binary's build digest: a result is reused only by the build
	// that got it, and the cached rerun in process reads what the
	// binary's runs left.
	build, err := files.SHA256(b.bin)
	if err != nil {
		return nil, fmt.Errorf("digest %s: %w", b.bin, err)
	}
	r := &runner.Runner{
		Open:        func(context.Context) (sandbox.Engine, error) { return b.eng, nil },
		Progress:    progress,
		Version:     "bench",
		Owner:       sandbox.Owner{UID: os.Getuid(), GID: os.Getgid()},
		BuildDigest: build,
	}
	rec, err := r.Run(ctx, req)
	wall := time.Since(start)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", suiteFile, err)
	}
	b.noteRun(rec.RunID)
	out := &inProcessRun{rec: rec, wall: wall, windows: progress.windows(), byTrial: map[string]*results.Result{}, calls: b.eng.take()}
	for _, t := range rec.Trials {
		if t.Outcome != "passed" {
			return nil, fmt.Errorf("run %s: trial %s ended %s: %s\n%s", suiteFile, t.Trial, t.Outcome, t.Error, progress.tail(10))
		}
		res, err := results.ReadResult(filepath.Join(rec.Dir, t.Trial, results.ResultFile))
		if err != nil {
			return nil, err
		}
		out.byTrial[t.Trial] = res
	}
	if len(rec.NotRun) > 0 {
		return nil, fmt.Errorf("run %s: %d trials not run", suiteFile, len(rec.NotRun))
	}
	return out, nil
}

// trialTime is a trial's wall-clock time: from its start line to its
// result line (result.json and the cache index written), falling back to
// the result's own times.
func (r *inProcessRun) trialTime(trial string) time.Duration {
	if w, ok := r.windows[trial]; ok {
		return w.took()
	}
	res := r.byTrial[trial]
	return res.Finished.Sub(res.Started)
}

// trialsOf lists the run's trials of a variant in run order.
func (r *inProcessRun) trialsOf(variant string) []string {
	var out []string
	for _, t := range r.rec.Trials {
		if t.Variant == variant {
			out = append(out, t.Trial)
		}
	}
	return out
}
