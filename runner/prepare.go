package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/hostpath"
	"github.com/flightdeck/flightdeck/internal/text"
	"github.com/flightdeck/flightdeck/runner/agent"
	"github.com/flightdeck/flightdeck/runner/audit"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/tasks"
)

// Prepare reads a suite file and applies the command line's options: the
// request a run starts from; ctx bounds the fetching of a registry
// dataset's git tasks. An empty suiteFile means no suite: the tasks are
// opts.Path and the --registry dataset, the variants the built-in agents
// opts.Variants names (oracle when none), the results dir the default one.
// Every error is a *UsageError.
func Prepare(ctx context.Context, suiteFile string, opts suite.Options) (Request, error) {
	var s *suite.Suite
	if suiteFile == "" {
		if len(opts.Path) == 0 && opts.Registry == "" && opts.Dataset == "" {
			return Request{}, suite.UsageErrorf("no suite file: name one, or the tasks with --path or --registry and --dataset")
		}
		s = suite.CommandLineSuite(opts)
	} else {
		abs := hostpath.Abs(opts.Cwd, suiteFile)
		if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
			// A task dir, or a dir of tasks, named where a suite goes.
			return Request{}, suite.UsageErrorf("%s is a directory, not a suite file (YAML): to run the tasks in it, name it with --path %s", suiteFile, suiteFile)
		}
		if _, err := os.Stat(abs); errors.Is(err, os.ErrNotExist) && suiteFile == suite.DefaultSuiteFile {
			// The default suite, looked for where there is none.
			return Request{}, suite.UsageErrorf("no suite file: %s has no %s; name one (flightdeck run SUITE.yaml), or the tasks (flightdeck run --path DIR)",
				opts.Cwd, suite.DefaultSuiteFile)
		}
		var err error
		if s, err = suite.LoadSuite(abs); err != nil {
			return Request{}, &suite.UsageError{Err: err}
		}
	}
	cfg, err := resolve(ctx, s, opts)
	if err != nil {
		return Request{}, err
	}
	return load(cfg, s, opts)
}

// PrepareResume continues run runID from its recorded configuration; jobs,
// --keep and --no-cache may be changed.
func PrepareResume(resultsDir, runID string, opts suite.Options) (Request, error) {
	dir := filepath.Join(resultsDir, runID)
	if !suite.ValidName(runID) {
		return Request{}, suite.UsageErrorf("--resume %q: not a run id", runID)
	}
	rec, err := results.ReadRunRecord(dir)
	if err != nil {
		return Request{}, suite.UsageErrorf("--resume %s: %v", runID, err)
	}
	cfg := rec.Config
	cfg.Results = resultsDir
	if opts.Jobs > 0 {
		cfg.Concurrency = opts.Jobs
	}
	cfg.Keep = cfg.Keep || opts.Keep
	cfg.NoCache = cfg.NoCache || opts.NoCache
	req, err := load(cfg, nil, suite.Options{Cwd: opts.Cwd})
	if err != nil {
		return Request{}, err
	}
	if sh := cfg.Shard; sh != nil {
		// A shard resumes its own part of the tasks.
		req.Tasks = slices.DeleteFunc(req.Tasks, func(t *tasks.Task) bool { return !slices.Contains(sh.Tasks, t.ID) })
		req.Refused = slices.DeleteFunc(req.Refused, func(rt suite.RefusedTask) bool { return !slices.Contains(sh.Tasks, rt.ID) })
	}
	req.ResumeID = runID
	return req, nil
}

// load loads the tasks and specs a configuration names. A task that cannot
// run here is among the request's refused tasks, not an error.
func load(cfg suite.Config, s *suite.Suite, opts suite.Options) (Request, error) {
	ts, refused, err := loadTasks(&cfg, s, opts)
	if err != nil {
		return Request{}, err
	}
	var runnable []*tasks.Task
	for _, t := range ts {
		if r := runRefusal(t, cfg.Variants); r != nil {
			refused = append(refused, suite.RefusedTask{ID: t.ID, Dir: t.Dir, Refusal: *r})
			continue
		}
		runnable = append(runnable, t)
	}
	cfg.Notes = append(cfg.Notes, unknownKeyNotes(runnable)...)
	var specs []grader.Spec
	if len(cfg.Specs) > 0 {
		if specs, err = grader.LoadSpecs(cfg.Specs); err != nil {
			return Request{}, &suite.UsageError{Err: err}
		}
	}
	return Request{Config: cfg, Tasks: runnable, Refused: refused, Specs: specs}, nil
}

// maxKeyNotes caps the run's notes of unknown keys.
const maxKeyNotes = 5

// unknownKeyNotes say the keys of the tasks' task.toml that neither Harbor
// nor flightdeck reads: a misspelt key's default applies, which task check
// says and a run must not keep quiet.
func unknownKeyNotes(ts []*tasks.Task) []string {
	var notes []string
	more := 0
	for _, t := range ts {
		for _, f := range tasks.UnknownKeys(t.Dir) {
			if len(notes) == maxKeyNotes {
				more++
				continue
			}
			notes = append(notes, fmt.Sprintf("%s: %s: %s (its default applies)", t.ID, f.Path, f.Message))
		}
	}
	if more > 0 {
		notes = append(notes, fmt.Sprintf("and %s (flightdeck task check DIR lists them)", text.Count(more, "more unknown key")))
	}
	return notes
}

func usesOracle(vs []suite.Variant) bool {
	for _, v := range vs {
		if v.Agent == suite.AgentOracle {
			return true
		}
	}
	return false
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// verifyConfig is the configuration `flightdeck task verify` runs: the oracle
// (expected to pass) and nop (expected to fail) on each task dir.
func verifyConfig(ctx context.Context, dirs []string, opts suite.Options, vo VerifyOptions) (suite.Config, error) {
	if err := vo.check(); err != nil {
		return suite.Config{}, err
	}
	repeat := vo.Repeat
	if repeat == 0 {
		repeat = DefaultRepeat
	}
	variants := []suite.Variant{{Name: suite.AgentOracle, Agent: suite.AgentOracle, Expect: suite.ExpectPassed, Attempts: repeat, Memory: true}}
	if !slices.Contains(vo.Skip, audit.CheckNop) {
		variants = append(variants, suite.Variant{Name: suite.AgentNop, Agent: suite.AgentNop, Expect: suite.ExpectFailed, Attempts: 1})
	}
	if !slices.Contains(vo.Skip, audit.CheckLive) {
		// On a Harbor task the oracle is also graded from a snapshot: a
		// task whose oracle passes only live needs live grading.
		variants = append(variants, suite.Variant{Name: results.VerifySnapshot, Agent: suite.AgentOracle,
			Grading: suite.GradingSnapshot, HarborOnly: true, Attempts: 1})
	}
	if !slices.Contains(vo.Skip, audit.CheckNetwork) {
		variants = append(variants, suite.Variant{Name: results.VerifyOffline, Agent: suite.AgentOracle,
			HarborOnly: true, VerifierOffline: true, Attempts: 1})
	}
	if !slices.Contains(vo.Skip, audit.CheckStart) {
		variants = append(variants, suite.Variant{Name: results.VerifyUnsettled, Agent: suite.AgentOracle,
			HarborOnly: true, NoSettle: true, Attempts: 1})
	}
	if !slices.Contains(vo.Skip, audit.CheckPatch) {
		variants = append(variants, suite.Variant{Name: results.VerifyPatch, Agent: suite.AgentOracle, Patch: true, Attempts: 1})
	}
	if !slices.Contains(vo.Skip, audit.CheckEnv) {
		variants = append(variants, suite.Variant{Name: results.VerifyEnv, Agent: suite.AgentOracle,
			Env: results.VerifyEnvVars, Attempts: 1})
	}
	if !slices.Contains(vo.Skip, audit.CheckAttacks) || !slices.Contains(vo.Skip, audit.CheckLeaks) {
		// The oracle graded under the tracer: what its verifier runs is
		// what the rewrite attack rewrites, and what it reads as data
		// tells leaks an input from the tests.
		variants = append(variants, suite.Variant{Name: results.VerifyTraced, Agent: suite.AgentOracle, Trace: true, Attempts: 1})
	}
	if !slices.Contains(vo.Skip, audit.CheckAttacks) {
		// An empty attempt plus one reward hack each, graded as any trial.
		for _, a := range agent.Attacks {
			variants = append(variants, suite.Variant{Name: results.VerifyAttackPrefix + a, Agent: suite.AgentAttack,
				Attack: a, Expect: suite.ExpectFailed, Attempts: 1})
		}
		// The oracle with the image's copies of its outputs hidden: when
		// the answer attack wins, whether the reference copies it too.
		variants = append(variants, suite.Variant{Name: results.VerifyHidden, Agent: suite.AgentOracle, HideAnswers: true, Attempts: 1})
	}
	for i := range variants {
		// The rewrite and answer attacks read the traced oracle's trial: no oracle,
		// nothing to read.
		variants[i].OracleOnly = variants[i].Agent == suite.AgentOracle || agent.ReadsOracle(variants[i].Attack)
	}
	s := &suite.Suite{
		Name: "verify", Dir: opts.Cwd, File: filepath.Join(opts.Cwd, suite.VerifyFile), Attempts: repeat, Retries: 1,
		TimeoutMultiplier: suite.Multipliers{Agent: 1, Verifier: 1, Build: 1}, Results: "results",
		Variants: variants,
	}
	if opts.Results == "" {
		opts.Results = suite.DefaultResultsDir(opts.Cwd)
	}
	opts.Tasks = dirs
	for _, d := range dirs {
		switch fi, err := os.Stat(hostpath.Abs(opts.Cwd, d)); {
		case errors.Is(err, os.ErrNotExist):
			return suite.Config{}, suite.UsageErrorf("%s: no such directory (a task directory holds task.toml)", d)
		case err != nil:
			return suite.Config{}, suite.UsageErrorf("%s: not a task directory: %v", d, err)
		case !fi.IsDir():
			return suite.Config{}, suite.UsageErrorf("%s: a file, not a task directory (the directory that holds task.toml)", d)
		}
	}
	return resolve(ctx, s, opts)
}

// PrepareVerify is Prepare for `flightdeck task verify`: the oracle
// vo.Repeat times, nop once, and on a Harbor task the oracle graded from a
// snapshot, less what vo.Skip leaves out; Runner.Audit judges the run.
func PrepareVerify(ctx context.Context, dirs []string, opts suite.Options, vo VerifyOptions) (Request, error) {
	cfg, err := verifyConfig(ctx, dirs, opts, vo)
	if err != nil {
		return Request{}, err
	}
	return loadNamed(cfg, opts)
}

// loadNamed loads the tasks a command named one by one (task verify,
// task shell): a task that cannot run is the answer, given before
// anything runs.
func loadNamed(cfg suite.Config, opts suite.Options) (Request, error) {
	opts.Tasks = nil
	req, err := load(cfg, nil, opts)
	if err != nil {
		return Request{}, err
	}
	if len(req.Refused) > 0 {
		var msgs []string
		for _, rt := range req.Refused {
			msgs = append(msgs, "load task: "+rt.Refusal.String())
		}
		return Request{}, &RefusedError{Msg: strings.Join(msgs, "\n")}
	}
	return req, nil
}

// PrepareShell is the request of `flightdeck task shell`: one trial of the
// task in dir, whose agent (Runner.Agent) is a person at a terminal;
// nothing is cached, retried or kept. The run's files go to opts.Results.
func PrepareShell(ctx context.Context, dir string, opts suite.Options) (Request, error) {
	abs := hostpath.Abs(opts.Cwd, dir)
	switch fi, err := os.Stat(abs); {
	case errors.Is(err, os.ErrNotExist):
		return Request{}, suite.UsageErrorf("%s: not a task directory: no such directory", dir)
	case err != nil:
		return Request{}, suite.UsageErrorf("%s: not a task directory: %v", dir, err)
	case !fi.IsDir():
		return Request{}, suite.UsageErrorf("%s: a file, not a task directory (the directory that holds task.toml)", dir)
	}
	if _, err := os.Stat(filepath.Join(abs, tasks.TaskFile)); err != nil {
		return Request{}, suite.UsageErrorf("%s: not a task directory: it holds no %s (a shell opens in one task)", dir, tasks.TaskFile)
	}
	s := &suite.Suite{
		Name: "shell", Dir: opts.Cwd, File: filepath.Join(opts.Cwd, suite.ShellFile), Attempts: 1, Retries: 0,
		TimeoutMultiplier: suite.Multipliers{Agent: 1, Verifier: 1, Build: 1}, Results: "results",
		Variants: []suite.Variant{{Name: suite.AgentShell, Agent: suite.AgentShell, Attempts: 1}},
	}
	opts.Tasks = []string{dir}
	opts.NoCache = true
	cfg, err := resolve(ctx, s, opts)
	if err != nil {
		return Request{}, err
	}
	return loadNamed(cfg, opts)
}

// RefusedError is a task verify of tasks that cannot run here: nothing
// ran, and each refusal is in the message.
type RefusedError struct{ Msg string }

func (e *RefusedError) Error() string { return e.Msg }
