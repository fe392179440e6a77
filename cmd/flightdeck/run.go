package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/flightdeck/flightdeck/internal/text"
	"github.com/flightdeck/flightdeck/runner"
	"github.com/flightdeck/flightdeck/runner/audit"
	"github.com/flightdeck/flightdeck/runner/htmlreport"
	"github.com/flightdeck/flightdeck/runner/registry"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/shard"
	"github.com/flightdeck/flightdeck/runner/suite"
)

// runFlags are the flags `run` and `task verify` share.
type runFlags struct {
	tasks, variants, imageMap []string
	attempts, jobs, retries   int
	autoJobs                  bool // --jobs auto
	noCache, keep, json       bool
	noSubstitute              bool
	resume, resultsPath       string
	envFile                   string
	shard, shardTimings       string // --shard K/N, --shard-timings PATH

	// Datasets (run only).
	paths, include, exclude     []string
	nTasks                      int
	registry, dataset, cacheDir string
}

func runRun(ctx context.Context, env *cliEnv, args []string) int {
	fs := newFlags(env, "run", "run [SUITE] [flags]",
		"flightdeck run local.yaml -t semver --variant oracle -j 2\n  flightdeck run --path fixtures/harbor/tasks --variant oracle --variant nop --include 'reward-*'\n  flightdeck run --registry registry.json --dataset terminal-bench@2.0 --n-tasks 5")
	var f runFlags
	fs.StringArrayVarP(&f.tasks, "task", "t", nil, "a task or dataset dir (replaces the suite's tasks), or a task-id glob (narrows them); repeatable")
	fs.StringArrayVar(&f.variants, "variant", nil, "run only this variant; oracle and nop may be named even if the suite lacks them; repeatable")
	fs.IntVarP(&f.attempts, "attempts", "k", 0, "attempts per task and variant (default: the suite's)")
	fs.VarP(&jobsFlag{n: &f.jobs, auto: &f.autoJobs}, "jobs", "j", "trials at once, or auto: as many as the engine's CPUs and memory hold for the tasks' needs (default: the suite's concurrency, else auto)")
	fs.IntVar(&f.retries, "retries", 0, "retries of a trial that ends in infra_error (default: the suite's)")
	fs.BoolVar(&f.noCache, "no-cache", false, "run trials again even when a result for the same task, variant and attempt exists")
	fs.BoolVar(&f.keep, "keep", false, "keep containers, snapshots and work dirs for debugging")
	fs.BoolVar(&f.json, "json", false, "print run.json instead of the summary table")
	fs.StringVar(&f.resume, "resume", "", "continue run RUN_ID: run only its trials without a result")
	fs.StringVar(&f.resultsPath, "results", "", "results dir (default: the suite's)")
	fs.StringArrayVar(&f.imageMap, "image-map", nil, "use image TO where a task names FROM (FROM=TO); repeatable")
	noSubstituteFlag(fs, &f)
	fs.StringVar(&f.envFile, "env-file", "", "NAME=VALUE lines every agent gets, and that ${NAME} in a variant's env may name: secrets, never written to results/")
	fs.StringArrayVarP(&f.paths, "path", "p", nil, "a dataset dir (a dir of task dirs) or a task dir to run instead of the suite's tasks; repeatable; no suite needed")
	fs.StringArrayVar(&f.include, "include", nil, "run only tasks whose id matches this glob (on top of the suite's include:); repeatable")
	fs.StringArrayVar(&f.exclude, "exclude", nil, "skip tasks whose id matches this glob (on top of the suite's exclude:); repeatable")
	fs.IntVar(&f.nTasks, "n-tasks", 0, "run only the first N tasks left after the filters (default: all)")
	fs.StringVar(&f.registry, "registry", "", "a Harbor registry.json; with --dataset, runs that dataset instead of the suite's tasks")
	fs.StringVarP(&f.dataset, "dataset", "d", "", "a dataset.toml (or its dir) to run, as --path its dir; with --registry, the registry's dataset NAME@VERSION (NAME alone when it has one version)")
	fs.StringVar(&f.cacheDir, "cache-dir", "", "where git tasks of a registry dataset are fetched (default: $XDG_CACHE_HOME/flightdeck/tasks, else ~/.cache/flightdeck/tasks)")
	shardFlags(fs, &f)
	if code, done := parseFlags(fs, env, args); done {
		return code
	}
	if fs.NArg() > 1 {
		fmt.Fprintf(env.stderr, "flightdeck run: one suite file at most, got %d arguments\n", fs.NArg())
		return exitUsage
	}
	if f.attempts < 0 || f.jobs < 0 || f.retries < 0 || f.nTasks < 0 {
		fmt.Fprintln(env.stderr, "flightdeck run: --attempts, --jobs, --retries and --n-tasks cannot be negative")
		return exitUsage
	}
	if err := f.datasetPath(env); err != nil {
		fmt.Fprintf(env.stderr, "flightdeck run: %v\n", err)
		return exitUsage
	}
	datasets := len(f.paths) > 0 || f.registry != ""
	if !fs.Changed("retries") {
		f.retries = -1 // the suite's
	}
	opts := f.options(env)
	var req runner.Request
	var err error
	if f.resume != "" {
		if fs.NArg() > 0 || len(f.tasks) > 0 || len(f.variants) > 0 || f.attempts > 0 || len(f.imageMap) > 0 ||
			datasets || len(f.include) > 0 || len(f.exclude) > 0 || f.nTasks > 0 || f.shard != "" {
			fmt.Fprintln(env.stderr, "flightdeck run: --resume runs the recorded configuration (a shard's own part); it takes no suite, --task, --variant, --attempts, --image-map, --path, --registry, --include, --exclude, --n-tasks or --shard")
			return exitUsage
		}
		dir, ferr := findRun(env, "run", f.resultsPath, f.resume)
		if ferr != nil {
			fmt.Fprintf(env.stderr, "flightdeck run: --resume %s: %v\n", f.resume, ferr)
			return exitUsage
		}
		req, err = runner.PrepareResume(filepath.Dir(dir), filepath.Base(dir), opts)
	} else {
		suite := suite.DefaultSuiteFile
		switch {
		case fs.NArg() == 1:
			suite = fs.Arg(0)
		case datasets:
			suite = "" // the tasks are the flags'; no suite needed
		}
		req, err = runner.Prepare(ctx, suite, opts)
		if err == nil {
			err = applyShard(env, "run", &req, f)
		}
	}
	if err != nil {
		fmt.Fprintf(env.stderr, "flightdeck run: %v\n", err)
		return exitUsage
	}
	return execute(ctx, env, req, f.json, nil)
}

// execute runs a prepared request and prints the outcome: the summary (or
// run.json with --json), or, when show is set, what show prints.
func execute(ctx context.Context, env *cliEnv, req runner.Request, asJSON bool, show func(io.Writer, *runner.Runner, *results.RunRecord) int) int {
	code, _ := executeRun(ctx, env, req, asJSON, show)
	return code
}

// executeRun is execute, and the run's record (nil when it could not
// start).
func executeRun(ctx context.Context, env *cliEnv, req runner.Request, asJSON bool, show func(io.Writer, *runner.Runner, *results.RunRecord) int) (int, *results.RunRecord) {
	r, closeAll := newRunner(env, req.Config.Results)
	defer closeAll()
	r.TTY, r.Width = isTerminal(env.stderr), terminalWidth(env.stderr)
	rec, err := r.Run(ctx, req)
	if err != nil {
		fmt.Fprintf(env.stderr, "flightdeck: %v\n", err)
		var ue *suite.UsageError
		if errors.As(err, &ue) {
			return exitUsage, nil
		}
		return exitInfra, nil
	}
	code := rec.ExitCode
	switch {
	case show != nil && ctx.Err() != nil:
		// An audit of the trials a signal cut short would judge the task
		// on what is missing (and the engine calls it makes would fail
		// on the cancelled context): the trials done are in the results
		// cache, and the same command takes them from there.
		fmt.Fprintln(env.stderr, "flightdeck task verify: interrupted before the audit; the finished trials are kept in the results cache: run the same command again to finish")
		return exitInterrupted, rec
	case show != nil:
		code = show(env.stdout, r, rec)
	case asJSON:
		results.WriteJSON(env.stdout, rec)
	default:
		results.WriteSummary(env.stdout, rec)
	}
	if ctx.Err() != nil {
		fmt.Fprintf(env.stderr, "flightdeck: interrupted; %s with a result kept, %s without: finish with %s\n",
			text.Count(len(rec.Trials), "trial"), text.Count(len(rec.NotRun), "trial"), results.ResumeCommand(rec, env.cwd))
		return exitInterrupted, rec
	}
	return code, rec
}

// shardFlags adds --shard and --shard-timings, which run, task verify
// and build take.
func shardFlags(fs *pflag.FlagSet, f *runFlags) {
	fs.StringVar(&f.shard, "shard", "", "run only the K-th of N parts of the tasks (K/N), every trial of a task in the same part; flightdeck merge joins the parts' runs")
	fs.StringVar(&f.shardTimings, "shard-timings", "", "balance the parts by the seconds each task took in an earlier run (its dir or run.json) instead of by count")
}

// applyShard narrows req to --shard's part, saying what it holds.
func applyShard(env *cliEnv, name string, req *runner.Request, f runFlags) error {
	if f.shard == "" {
		if f.shardTimings != "" {
			return fmt.Errorf("--shard-timings balances --shard's parts: give --shard K/N too")
		}
		return nil
	}
	spec, err := shard.Parse(f.shard)
	if err != nil {
		return err
	}
	var weights map[string]float64
	if f.shardTimings != "" {
		if weights, err = shard.Timings(absPath(env.cwd, f.shardTimings)); err != nil {
			return err
		}
	}
	req.Shard(spec, weights)
	sh := req.Config.Shard
	if len(sh.Tasks) == 0 {
		fmt.Fprintf(env.stderr, "flightdeck %s: shard %s holds none of the %d tasks (more shards than tasks): nothing to run\n", name, spec, len(sh.All))
	} else {
		fmt.Fprintf(env.stderr, "flightdeck %s: shard %s: %d of the %d tasks\n", name, spec, len(sh.Tasks), len(sh.All))
	}
	return nil
}

// noSubstituteFlag adds --no-substitute, which every command that builds
// task images takes.
func noSubstituteFlag(fs *pflag.FlagSet, f *runFlags) {
	fs.BoolVar(&f.noSubstitute, "no-substitute", false, "build every image from the base it names: no image map, and no offline base standing in for a missing official image (use it where a registry or loaded images have the real bases)")
}

func (f runFlags) options(env *cliEnv) suite.Options {
	return suite.Options{
		Tasks: f.tasks, Variants: f.variants, Attempts: f.attempts, Jobs: f.jobs, AutoJobs: f.autoJobs, Retries: f.retries,
		NoCache: f.noCache, Keep: f.keep, ImageMap: f.imageMap, NoSubstitute: f.noSubstitute, Results: f.resultsPath, Cwd: env.cwd,
		Path: f.paths, Include: f.include, Exclude: f.exclude, NTasks: f.nTasks,
		Registry: f.registry, Dataset: f.dataset, CacheDir: f.cacheDir, EnvFile: f.envFile,
	}
}

func runTaskVerify(ctx context.Context, env *cliEnv, args []string) int {
	var checks strings.Builder
	for _, c := range audit.Checks {
		fmt.Fprintf(&checks, "\n  %-9s %s", c, audit.CheckText[c])
	}
	fs := newFlags(env, "task verify", "task verify DIR... [flags]", "flightdeck task verify tasks/smoke/semver --repeat 5 --skip repro\n\n"+
		"Checks (a line each in the verdict; docs/running.md says how each is run):"+checks.String())
	var f runFlags
	var vo runner.VerifyOptions
	fs.VarP(&jobsFlag{n: &f.jobs, auto: &f.autoJobs}, "jobs", "j", "trials at once, or auto (the default): as many as the engine's CPUs and memory hold for the tasks' needs")
	fs.BoolVar(&f.noCache, "no-cache", false, "run again even when results for the same task exist")
	fs.BoolVar(&f.keep, "keep", false, "keep containers, snapshots and work dirs for debugging")
	fs.BoolVar(&f.json, "json", false, "print the audit as JSON")
	fs.StringVar(&f.resultsPath, "results", "", "results dir (default: the default suite's, else ./results)")
	fs.StringArrayVar(&f.imageMap, "image-map", nil, "use image TO where a task names FROM (FROM=TO); repeatable")
	noSubstituteFlag(fs, &f)
	fs.IntVar(&vo.Repeat, "repeat", runner.DefaultRepeat, "runs of the oracle (a task whose runs differ is flaky)")
	fs.StringSliceVar(&vo.Skip, "skip", nil, "checks to leave out, comma-separated: "+strings.Join(audit.Checks, ", "))
	shardFlags(fs, &f)
	if code, done := parseFlags(fs, env, args); done {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(env.stderr, "flightdeck task verify: name at least one task directory")
		return exitUsage
	}
	if vo.Repeat < 1 {
		fmt.Fprintf(env.stderr, "flightdeck task verify: --repeat %d: want 1 or more\n", vo.Repeat)
		return exitUsage
	}
	opts := f.options(env)
	opts.Retries = -1
	req, err := runner.PrepareVerify(ctx, fs.Args(), opts, vo)
	if err == nil {
		err = applyShard(env, "task verify", &req, f)
	}
	if err != nil {
		fmt.Fprintf(env.stderr, "flightdeck task verify: %v\n", err)
		if _, refused := errors.AsType[*runner.RefusedError](err); refused {
			return exitTask
		}
		return exitUsage
	}
	return execute(ctx, env, req, false, func(w io.Writer, r *runner.Runner, rec *results.RunRecord) int {
		rep, err := r.Audit(ctx, req, rec, vo)
		if err != nil {
			// The audit's own reads (the image's files, the results)
			// failed: the machine's error, not a finding on the task.
			fmt.Fprintf(env.stderr, "flightdeck task verify: %v\n", err)
			return exitInfra
		}
		if f.json {
			audit.WriteJSON(w, rep)
		} else {
			audit.Write(w, rep)
		}
		// A trial the machine failed leaves the checks that read it
		// unproven: neither "ok" nor a finding on the task (the report
		// says "not judged").
		if rep.Incomplete() {
			return exitInfra
		}
		if rep.OK() {
			return exitOK
		}
		if rep.OnlyDefects() {
			// Nothing ran to be found wanting: the task's own defect,
			// as run and build say of an image that does not build or
			// a verifier that fails on the oracle.
			return exitTask
		}
		return exitFindings
	})
}

func runReport(_ context.Context, env *cliEnv, args []string) int {
	fs := newFlags(env, "report", "report RUN_ID [RUN_B] [flags]",
		"flightdeck report 20250130-101500-a1b2c3 --json\n  flightdeck report 20250130-101500-a1b2c3 --html --open\n  flightdeck report RUN_A RUN_B          # the trials whose outcome differs, and the counts\n  flightdeck report RUN_A RUN_B --html   # the same as a page")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	asHTML := fs.Bool("html", false, "write the run's report.html (one self-contained page) and print its path")
	openIt := fs.Bool("open", false, "with --html, open the page in the desktop's browser")
	resultsPath := fs.String("results", "", "results dir (default: the default suite's, else ./results)")
	if code, done := parseFlags(fs, env, args); done {
		return code
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		first := resultsDir(env, *resultsPath)
		fmt.Fprintf(env.stderr, "flightdeck report: name one run id, or two to compare them (%s)\n", runsText(first, shown(env.cwd, first)))
		return exitUsage
	}
	if fs.NArg() == 2 && *asJSON {
		fmt.Fprintln(env.stderr, "flightdeck report: --json reports one run: name one run id")
		return exitUsage
	}
	dir, err := findRun(env, "report", *resultsPath, fs.Arg(0))
	if err != nil {
		fmt.Fprintf(env.stderr, "flightdeck report: %v\n", err)
		return exitUsage
	}
	if *asHTML {
		return writeHTMLReport(env, fs.Args(), dir, *resultsPath, *openIt)
	}
	rep, err := results.LoadReport(dir)
	if err != nil {
		fmt.Fprintf(env.stderr, "flightdeck report: %v\n", err)
		return exitUsage
	}
	if fs.NArg() == 2 {
		other, err := findRun(env, "report", *resultsPath, fs.Arg(1))
		if err != nil {
			fmt.Fprintf(env.stderr, "flightdeck report: %v\n", err)
			return exitUsage
		}
		after, err := results.LoadReport(other)
		if err != nil {
			fmt.Fprintf(env.stderr, "flightdeck report: %v\n", err)
			return exitUsage
		}
		results.WriteComparison(env.stdout, rep, after)
		return exitOK
	}
	if *asJSON {
		results.WriteJSON(env.stdout, rep)
		return exitOK
	}
	results.WriteReport(env.stdout, rep)
	// A task verify run: its checks, as the command printed them.
	checks, err := audit.Load(dir)
	if err != nil {
		fmt.Fprintf(env.stderr, "flightdeck report: %v\n", err)
		return exitUsage
	}
	if checks != nil {
		fmt.Fprintf(env.stdout, "\ntask verify's checks (%s):\n", audit.File)
		audit.Write(env.stdout, checks)
	}
	return exitOK
}

func runSpec(_ context.Context, env *cliEnv, args []string) int {
	if len(args) == 0 || args[0] != "record" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintln(env.stdout, "Usage: flightdeck spec record RUN_ID TRIAL SPEC pass|fail --note TEXT")
			return exitOK
		}
		fmt.Fprintln(env.stderr, "Usage: flightdeck spec record RUN_ID TRIAL SPEC pass|fail --note TEXT")
		return exitUsage
	}
	fs := newFlags(env, "spec record", "spec record RUN_ID TRIAL SPEC pass|fail --note TEXT [flags]",
		"flightdeck spec record 20250130-101500-a1b2c3 csv-validator__treatment__1 csv.quality pass --note \"reads well\"")
	note := fs.String("note", "", "why (required)")
	by := fs.String("by", "", "who records it (default: the current user)")
	resultsPath := fs.String("results", "", "results dir (default: the default suite's, else ./results)")
	if code, done := parseFlags(fs, env, args[1:]); done {
		return code
	}
	if fs.NArg() != 4 {
		fmt.Fprintln(env.stderr, "flightdeck spec record: want RUN_ID TRIAL SPEC pass|fail")
		return exitUsage
	}
	if *note == "" {
		fmt.Fprintln(env.stderr, "flightdeck spec record: --note is required: say why")
		return exitUsage
	}
	who := *by
	if who == "" {
		who = currentUser()
	}
	dir, err := results.RunDir(resultsDir(env, *resultsPath), fs.Arg(0))
	if err != nil {
		fmt.Fprintf(env.stderr, "flightdeck spec record: %v\n", err)
		return exitUsage
	}
	r, err := results.RecordVerdict(dir, fs.Arg(1), fs.Arg(2), fs.Arg(3), *note, who)
	if err != nil {
		fmt.Fprintf(env.stderr, "flightdeck spec record: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(env.stdout, "recorded %s %s on %s (outcome class now %s)\n", fs.Arg(2), fs.Arg(3), r.Trial, r.OutcomeClass)
	return exitOK
}

func resultsDir(env *cliEnv, flag string) string {
	if flag != "" {
		return absPath(env.cwd, flag)
	}
	return suite.DefaultResultsDir(env.cwd)
}

func absPath(cwd, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(cwd, p)
}

func currentUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return fmt.Sprintf("uid %d", os.Getuid())
}

// jobsFlag is --jobs: a number of trials above 0, or auto.
type jobsFlag struct {
	n    *int
	auto *bool
}

func (j *jobsFlag) String() string {
	if j.auto != nil && *j.auto {
		return "auto"
	}
	if j.n == nil || *j.n == 0 {
		return ""
	}
	return strconv.Itoa(*j.n)
}

func (j *jobsFlag) Set(v string) error {
	if v == "auto" {
		*j.n, *j.auto = 0, true
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return fmt.Errorf("%q is not a number of jobs above 0, nor auto", v)
	}
	*j.n, *j.auto = n, false
	return nil
}

func (j *jobsFlag) Type() string { return "N|auto" }

// writeHTMLReport writes the run's report.html (compared with a second
// run when two are named: then the page is written in the first run's
// dir as report-vs-<RUN_B>.html) and prints its path.
func writeHTMLReport(env *cliEnv, args []string, dir, resultsPath string, openIt bool) int {
	against, path := "", filepath.Join(dir, htmlreport.File)
	if len(args) == 2 {
		var err error
		if against, err = findRun(env, "report", resultsPath, args[1]); err != nil {
			fmt.Fprintf(env.stderr, "flightdeck report: %v\n", err)
			return exitUsage
		}
		path = filepath.Join(dir, "report-vs-"+filepath.Base(against)+".html")
	}
	if err := htmlreport.WriteFile(path, dir, against); err != nil {
		fmt.Fprintf(env.stderr, "flightdeck report: %v\n", err)
		return exitFindings
	}
	fmt.Fprintln(env.stdout, path)
	if openIt {
		if err := exec.Command("xdg-open", path).Start(); err != nil {
			fmt.Fprintf(env.stderr, "flightdeck report: open %s: %v (open it in a browser: it needs no server)\n", path, err)
		}
	}
	return exitOK
}

// datasetPath makes --dataset PATH/dataset.toml (or its dir), given
// without --registry, a --path of that dataset dir.
func (f *runFlags) datasetPath(env *cliEnv) error {
	if f.registry == "" && f.dataset != "" {
		dir, ok := manifestDir(resolveTaskDir(env, f.dataset))
		if !ok {
			return fmt.Errorf("--dataset %s: no dataset.toml there; a registry's dataset goes with --registry FILE --dataset NAME@VERSION", f.dataset)
		}
		f.paths, f.dataset = append(f.paths, dir), ""
	}
	if f.registry != "" && f.dataset == "" {
		return errors.New("--registry and --dataset go together: --registry FILE --dataset NAME@VERSION")
	}
	return nil
}

// manifestDir is the dataset dir of p, a dataset.toml or a dir that holds
// one.
func manifestDir(p string) (string, bool) {
	if filepath.Base(p) == registry.ManifestFile {
		_, err := os.Stat(p)
		return filepath.Dir(p), err == nil
	}
	_, err := os.Stat(filepath.Join(p, registry.ManifestFile))
	return p, err == nil
}
