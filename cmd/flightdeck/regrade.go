package main

import (
	"context"
	"fmt"

	"github.com/flightdeck/flightdeck/runner"
	"github.com/flightdeck/flightdeck/runner/results"
)

func runRegrade(ctx context.Context, env *cliEnv, args []string) int {
	fs := newFlags(env, "regrade", "regrade RUN_ID --path TASK_DIR [--path ...] [flags]",
		"flightdeck regrade 20260716-154421-a1b2c3 --path ./my-task-v2\n  flightdeck regrade RUN_ID --path fixtures/harbor/tasks --image-map python:3.12-slim=flightdeck/base:bookworm")
	var f runFlags
	fs.StringArrayVarP(&f.paths, "path", "p", nil, "the task (or a dir of tasks) whose verifier grades the recorded work, matched to the run's trials by task id: "+
		"a separate verifier grades the recorded artifacts; any other grades the work dir rebuilt from the trial's diff.patch; repeatable")
	fs.StringVar(&f.resultsPath, "results", "", "results dir the run is in, and the regrade's goes to (default: ./results)")
	fs.StringArrayVar(&f.imageMap, "image-map", nil, "use image TO where a task names FROM (FROM=TO); repeatable")
	fs.IntVarP(&f.jobs, "jobs", "j", 0, "trials at once (default: auto)")
	fs.BoolVar(&f.noCache, "no-cache", false, "grade again even when this regrade's result exists")
	fs.BoolVar(&f.json, "json", false, "print run.json instead of the summary and the delta")
	if code, done := parseFlags(fs, env, args); done {
		return code
	}
	if fs.NArg() != 1 || len(f.paths) == 0 {
		fmt.Fprintln(env.stderr, "flightdeck regrade: want RUN_ID, a finished run, and --path, the task as it is now (see flightdeck regrade --help)")
		return exitUsage
	}
	source, err := findRun(env, "regrade", f.resultsPath, fs.Arg(0))
	if err != nil {
		fmt.Fprintf(env.stderr, "flightdeck regrade: %v\n", err)
		return exitUsage
	}
	f.autoJobs = f.jobs == 0
	f.retries = -1
	req, err := runner.PrepareRegrade(ctx, source, f.options(env))
	if err != nil {
		fmt.Fprintf(env.stderr, "flightdeck regrade: %v\n", err)
		return exitUsage
	}
	if f.json {
		return execute(ctx, env, req, true, nil)
	}
	code, rec := executeRun(ctx, env, req, false, nil)
	if rec != nil && ctx.Err() == nil {
		// The delta against the recorded rewards, after the summary.
		if _, rs, err := results.LoadResults(rec.Dir); err == nil {
			results.WriteDelta(env.stdout, results.Delta(rs))
		}
	}
	return code
}
