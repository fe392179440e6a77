package main

import (
	"context"
	"fmt"

	"github.com/flightdeck/flightdeck/runner/merge"
	"github.com/flightdeck/flightdeck/runner/results"
)

func runMerge(_ context.Context, env *cliEnv, args []string) int {
	fs := newFlags(env, "merge", "merge RUN_DIR... [--results DIR] [--allow-missing]",
		"flightdeck merge shards/*/results/2026*   # the runs of run --shard 1/3, 2/3 and 3/3")
	resultsPath := fs.String("results", "", "where the merged run goes (default: the first shard's results dir)")
	allowMissing := fs.Bool("allow-missing", false, "merge the shards given although some are missing: the run is incomplete and exits 3 (1 or 4 when the shards there failed an expectation or hold a task's defect)")
	asJSON := fs.Bool("json", false, "print the merged run.json instead of the summary table")
	if code, done := parseFlags(fs, env, args); done {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(env.stderr, "flightdeck merge: name the run dirs of the shards (flightdeck run --shard K/N wrote them)")
		return exitUsage
	}
	var dirs []string
	for _, d := range fs.Args() {
		dirs = append(dirs, absPath(env.cwd, d))
	}
	opts := merge.Options{Dirs: dirs, AllowMissing: *allowMissing}
	if *resultsPath != "" {
		opts.Results = absPath(env.cwd, *resultsPath)
	}
	rec, err := merge.Runs(opts)
	if err != nil {
		fmt.Fprintf(env.stderr, "flightdeck merge: %v\n", err)
		if rec == nil {
			return exitUsage
		}
	}
	if len(rec.MissingShards) > 0 {
		fmt.Fprintf(env.stderr, "flightdeck merge: incomplete: %s; its trials are listed as not run\n", results.MissingShardsText(rec))
	}
	if *asJSON {
		results.WriteJSON(env.stdout, rec)
	} else {
		results.WriteSummary(env.stdout, rec)
	}
	return rec.ExitCode
}
