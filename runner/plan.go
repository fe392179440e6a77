package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/files"
	"github.com/flightdeck/flightdeck/internal/hostpath"
	"github.com/flightdeck/flightdeck/runner/agent"
	"github.com/flightdeck/flightdeck/runner/audit"
	"github.com/flightdeck/flightdeck/runner/harbor"
	"github.com/flightdeck/flightdeck/runner/imagecache"
	"github.com/flightdeck/flightdeck/runner/images"
	"github.com/flightdeck/flightdeck/runner/registry"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/secrets"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/runner/trial"
	"github.com/flightdeck/flightdeck/tasks"
)

// resolve applies opts to the suite: task dirs expanded and filtered,
// variants chosen, numbers and maps settled, paths made absolute. A
// registry dataset's git tasks are fetched into the task cache.
func resolve(ctx context.Context, s *suite.Suite, opts suite.Options) (suite.Config, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	cfg := suite.Config{
		Suite: s.Name, SuiteFile: s.File, Attempts: s.Attempts, Concurrency: s.Concurrency,
		Retries: s.Retries, TimeoutMultiplier: s.TimeoutMultiplier, NoCache: opts.NoCache, Keep: opts.Keep,
		RewardKey: s.RewardKey, ImageBudget: s.ImageBudget, NoSubstitute: s.NoSubstitute || opts.NoSubstitute,
	}
	if v := getenv(imagecache.BudgetEnv); cfg.ImageBudget == 0 && v != "" {
		n, err := imagecache.ParseSize(v)
		if err != nil {
			return suite.Config{}, suite.UsageErrorf("%s: %v", imagecache.BudgetEnv, err)
		}
		cfg.ImageBudget = n
	}
	if cfg.Suite == "" {
		cfg.Suite = strings.TrimSuffix(filepath.Base(s.File), filepath.Ext(s.File))
	}
	if opts.Attempts > 0 {
		cfg.Attempts = opts.Attempts
	}
	if opts.Jobs > 0 {
		cfg.Concurrency = opts.Jobs
	}
	if opts.EnvFile != "" {
		cfg.EnvFile = hostpath.Abs(opts.Cwd, opts.EnvFile)
	}
	if cfg.Concurrency <= 0 || opts.AutoJobs {
		// Decided when the engine answers (checkCapacity).
		cfg.Concurrency, cfg.AutoJobs = runtime.NumCPU(), true
	}
	if opts.Retries >= 0 {
		cfg.Retries = opts.Retries
	}
	var err error
	if cfg.Images, err = images.ResolveMap(s.Images, getenv(images.MapEnv), opts.ImageMap); err != nil {
		return suite.Config{}, err
	}
	if cfg.NoSubstitute && len(cfg.Images) > 0 {
		return suite.Config{}, suite.UsageErrorf("substitution is off (--no-substitute, or substitute: false in %s), "+
			"yet an image map is given (images: in the suite, %s, --image-map): %s; drop one or the other",
			s.File, images.MapEnv, strings.Join(images.Pairs(cfg.Images), ", "))
	}
	cfg.Results = s.Results
	if opts.Results != "" {
		cfg.Results = hostpath.Abs(opts.Cwd, opts.Results)
	} else {
		cfg.Results = hostpath.Abs(s.Dir, cfg.Results)
	}
	for _, sp := range s.Specs {
		cfg.Specs = append(cfg.Specs, hostpath.Abs(s.Dir, sp))
	}
	if cfg.Variants, err = s.ChooseVariants(opts.Variants); err != nil {
		return suite.Config{}, err
	}
	if opts.NTasks < 0 {
		return suite.Config{}, suite.UsageErrorf("--n-tasks must not be negative (found %d)", opts.NTasks)
	}
	cfg.NTasks = opts.NTasks
	for _, g := range append(append([]string(nil), opts.Include...), opts.Exclude...) {
		if _, err := path.Match(g, ""); err != nil {
			return suite.Config{}, suite.UsageErrorf("--include/--exclude %q: not a valid glob", g)
		}
	}
	if cfg.TaskDirs, err = chooseTaskDirs(ctx, s, opts); err != nil {
		return suite.Config{}, err
	}
	switch {
	case opts.Dataset != "":
		cfg.Datasets = []string{hostpath.Abs(opts.Cwd, opts.Registry) + ": " + opts.Dataset}
	case s.Dataset != "" && !flagsNameTasks(opts):
		cfg.Datasets = []string{hostpath.Abs(s.Dir, s.Registry) + ": " + s.Dataset}
	}
	return cfg, nil
}

// flagsNameTasks reports whether the command line names the tasks (they
// then replace the suite's).
func flagsNameTasks(opts suite.Options) bool {
	if len(opts.Path) > 0 || opts.Registry != "" || opts.Dataset != "" {
		return true
	}
	for _, t := range opts.Tasks {
		if fi, err := os.Stat(hostpath.Abs(opts.Cwd, t)); err == nil && fi.IsDir() {
			return true
		}
	}
	return false
}

// chooseTaskDirs expands the suite's (or the flags') task entries into task
// directories; id filters are applied after loading (see LoadTasks).
func chooseTaskDirs(ctx context.Context, s *suite.Suite, opts suite.Options) ([]string, error) {
	var dirs []string
	for _, t := range opts.Tasks {
		p := hostpath.Abs(opts.Cwd, t)
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			found, err := registry.DatasetTaskDirs(p)
			if err != nil {
				return nil, suite.UsageErrorf("%s: %v", p, err)
			}
			dirs = append(dirs, found...)
		}
	}
	fromFlags, named, err := registry.FlagTaskDirs(ctx, opts)
	if err != nil {
		return nil, err
	}
	dirs = append(dirs, fromFlags...)
	if len(dirs) == 0 && !named {
		cache := opts.CacheDir
		if cache != "" {
			cache = hostpath.Abs(opts.Cwd, cache)
		} else if s.Dataset != "" {
			if cache, err = registry.DefaultCacheDir(opts.Getenv); err != nil {
				return nil, &suite.UsageError{Err: err}
			}
		}
		if dirs, err = registry.SuiteTaskDirs(ctx, s, cache); err != nil {
			return nil, err
		}
	}
	out := registry.UniqueDirs(dirs)
	if len(out) == 0 {
		return nil, suite.UsageErrorf("%s: no tasks to run (tasks: lists task dirs, dataset dirs or globs)", s.File)
	}
	return out, nil
}

// loadTasks loads cfg's task dirs and keeps those whose id passes the
// suite's include/exclude globs and the --task id filters. Ids must be
// unique: they name the trials. A task the loader refuses (see tasks.Load)
// is not an error: it is returned among the refused tasks, with the id it
// would have had, and its trials are recorded refused. A task dir that is
// no longer a directory is an error.
func loadTasks(cfg *suite.Config, s *suite.Suite, opts suite.Options) ([]*tasks.Task, []suite.RefusedTask, error) {
	var filters []string
	for _, t := range opts.Tasks {
		if fi, err := os.Stat(hostpath.Abs(opts.Cwd, t)); err != nil || !fi.IsDir() {
			if _, err := path.Match(t, ""); err != nil {
				return nil, nil, suite.UsageErrorf("--task %q: neither a directory nor a valid id glob", t)
			}
			filters = append(filters, t)
		}
	}
	var include, exclude []string
	if s != nil {
		include, exclude = s.Include, s.Exclude
	}
	var out []*tasks.Task
	var refused []suite.RefusedTask
	var dirs []string
	var ms registry.Manifests
	defer func() { cfg.Notes = ms.Notes() }()
	byID := map[string]string{}
	var leftOut []string // the ids the filters left out
	for _, dir := range cfg.TaskDirs {
		if cfg.NTasks > 0 && len(dirs) == cfg.NTasks {
			break
		}
		if name, ok := registry.MissingTask(dir); ok {
			rt, err := ms.Missing(dir, name)
			if err != nil {
				return nil, nil, err
			}
			if suite.Selected(rt.ID, include, exclude, filters) && suite.Selected(rt.ID, opts.Include, opts.Exclude, nil) {
				dirs, refused = append(dirs, dir), append(refused, rt)
			}
			continue
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return nil, nil, suite.UsageErrorf("load task: %s: no such task directory", dir)
		}
		t, err := tasks.Load(dir, tasks.LoadOptions{Local: true})
		var le *tasks.LoadError
		if err != nil && !errors.As(err, &le) {
			return nil, nil, suite.UsageErrorf("load task: %v", err)
		}
		id := refusedID(t, le, dir)
		if !suite.Selected(id, include, exclude, filters) || !suite.Selected(id, opts.Include, opts.Exclude, nil) {
			leftOut = append(leftOut, id)
			continue
		}
		if other, dup := byID[id]; dup {
			return nil, nil, suite.UsageErrorf("task id %s is used by both %s and %s: ids name the trials and must be unique", id, other, dir)
		}
		byID[id] = dir
		dirs = append(dirs, dir)
		if le != nil {
			r := suite.RefusalOf(le)
			repin, err := ms.Repin(dir)
			if err != nil {
				return nil, nil, err
			}
			r.Rule += repin
			refused = append(refused, suite.RefusedTask{ID: id, Dir: dir, Refusal: r})
			continue
		}
		if r, err := ms.Check(t); err != nil || r != nil {
			if err != nil {
				return nil, nil, err
			}
			refused = append(refused, suite.RefusedTask{ID: id, Dir: dir, Refusal: *r})
			continue
		}
		out = append(out, t)
	}
	if len(dirs) == 0 {
		ids := ""
		if len(leftOut) > 0 {
			slices.Sort(leftOut)
			if len(leftOut) > 10 {
				leftOut = append(leftOut[:10], fmt.Sprintf("and %d more", len(leftOut)-10))
			}
			ids = "; the task ids there are: " + strings.Join(leftOut, ", ")
		}
		return nil, nil, suite.UsageErrorf("no task is left after include/exclude, --include/--exclude and --task filters%s", ids)
	}
	cfg.TaskDirs = dirs
	return out, refused, nil
}

// refusedID is a task's id: the loaded task's, else the one the refusal
// gives (the directory's name when task.toml does not parse).
func refusedID(t *tasks.Task, le *tasks.LoadError, dir string) string {
	switch {
	case t != nil:
		return t.ID
	case le != nil && le.TaskID != "":
		return le.TaskID
	}
	return filepath.Base(dir)
}

// planTrials lists the trials of a run in task, variant, attempt order and
// computes each one's cache key.
// envs are the variants' envs resolved for the run (by variant name; a
// variant without one keeps its env as written).
// build is the digest of flightdeck's executable, in every key.
func planTrials(cfg suite.Config, ts []*tasks.Task, specs []grader.Spec, envs map[string]secrets.Env, build string) ([]*suite.Trial, error) {
	var out []*suite.Trial
	d := &digests{solutions: map[string]string{}, scripts: map[string]string{}}
	for _, t := range ts {
		// A Dockerfile that cannot be read fails the task's build, which
		// says why; its content is in the key through the task's digest.
		bases, _ := images.Bases(t)
		for _, v := range cfg.Variants {
			if !variantApplies(t, v) {
				continue
			}
			if v.Agent == suite.AgentOracle && v.Regrade == "" && !hasOracle(t) {
				// Nothing to replay: run, the oracle would be an empty
				// attempt that fails as if its solution were wrong.
				out = append(out, noOracleTrials(cfg, t, v)...)
				continue
			}
			env, keyed := v.Env, v.Env
			if e, ok := envs[v.Name]; ok {
				// The agent gets the secrets; the key, their keyed hashes.
				env, keyed = e.Values, e.Keyed
			}
			in := keyInput{TaskDigest: t.Digest, Agent: v.Agent, Command: v.Command, Env: keyed,
				Images: images.Relevant(bases, cfg.Images), Grading: v.Grading, RewardKey: cfg.RewardKey,
				VerifierOffline: v.VerifierOffline, NoSettle: v.NoSettle, HideAnswers: v.HideAnswers, Patch: v.Patch, Memory: v.Memory, NoSubstitute: cfg.NoSubstitute}
			in.Trace, in.Build = v.Trace, build
			if v.Agent == suite.AgentAttack {
				in.Attack = v.Attack + "@" + agent.AttackDigest(v.Attack)
			}
			if v.Tamper == suite.TamperFail || v.Tamper == suite.TamperOff {
				in.Tamper = v.Tamper
			}
			if !t.Native() || v.Grading != "" {
				in.Model = harborModel
			}
			in.AgentTimeout, in.VerifierTimeout = effectiveTimeouts(t, cfg.TimeoutMultiplier)
			if err := d.fill(&in, t, v); err != nil {
				return nil, err
			}
			var applies []grader.Spec
			for _, sp := range specs {
				if sp.Applies(t.ID, v.Name) {
					applies = append(applies, sp)
				}
			}
			attempts := cfg.Attempts
			if v.Attempts > 0 {
				attempts = v.Attempts
			}
			for a := 1; a <= attempts; a++ {
				in.Attempt = a
				if v.Regrade != "" {
					// A regrade's result is the recorded trial's, graded anew.
					in.Regrade, _ = files.SHA256(filepath.Join(v.Regrade, suite.TrialID(t.ID, v.Name, a), results.ResultFile))
				}
				tv := v
				tv.Env = env
				out = append(out, &suite.Trial{
					ID:   suite.TrialID(t.ID, v.Name, a),
					Task: t, Variant: tv, Attempt: a, Key: in.key(), Images: in.Images, Specs: applies,
				})
			}
		}
	}
	return out, nil
}

// variantApplies tells whether a built-in variant has anything to say of
// task t: a Harbor-only one on a native task, the patch variant without
// a second solution, the no-settle variant where nothing can race, the
// offline verifier where the verifier has no network, say nothing.
func variantApplies(t *tasks.Task, v suite.Variant) bool {
	if v.HarborOnly && t.Native() {
		return false
	}
	if v.OracleOnly && !hasOracle(t) {
		return false
	}
	if v.Patch && !(fileExists(t.Path("solution", agent.ReferencePatch)) &&
		(fileExists(t.Path("solution", "solve.sh")) || fileExists(t.Path("solution", "deterministic.json")))) {
		// The oracle of a task whose only solution is the patch
		// applies it already.
		return false
	}
	if v.NoSettle && !trial.MayRace(t) {
		return false
	}
	if v.VerifierOffline {
		// Only a verifier with a network can need it.
		if p, err := harbor.PolicyFor(t.Config, harbor.NetVerifier); err != nil || p.Mode == harbor.NetworkNone {
			return false
		}
	}
	return true
}

// noOracleTrials are an oracle variant's trials of a task without a
// solution: refused, with the reason.
func noOracleTrials(cfg suite.Config, t *tasks.Task, v suite.Variant) []*suite.Trial {
	r := suite.Refusal{File: t.Path("solution"), Rule: audit.NoOracleText}
	attempts := cfg.Attempts
	if v.Attempts > 0 {
		attempts = v.Attempts
	}
	var out []*suite.Trial
	for a := 1; a <= attempts; a++ {
		out = append(out, &suite.Trial{ID: suite.TrialID(t.ID, v.Name, a), Task: t, Variant: v, Attempt: a, Refusal: &r})
	}
	return out
}

// hasOracle reports whether the task has a solution the oracle can replay:
// solve.sh, deterministic.json or reference.patch.
func hasOracle(t *tasks.Task) bool {
	return t.HasSolution() || fileExists(t.Path("solution", agent.ReferencePatch))
}

// digests are the solutions' and scripts' digests a plan puts in its
// cache keys, each computed once.
type digests struct {
	solutions map[string]string // task dir → digest of solution/
	scripts   map[string]string // script path → digest
}

// fill puts the digest of what the variant's agent replays in the key.
func (d *digests) fill(in *keyInput, t *tasks.Task, v suite.Variant) error {
	// The rewrite attack's plan is read from the traced oracle's grade.
	if v.Agent == suite.AgentOracle || v.Agent == suite.AgentDeterministic || (v.Agent == suite.AgentAttack && agent.ReadsOracle(v.Attack)) {
		sum, ok := d.solutions[t.Dir]
		if !ok {
			var err error
			if sum, err = solutionDigest(t); err != nil {
				return suite.UsageErrorf("task %s: %v", t.ID, err)
			}
			d.solutions[t.Dir] = sum
		}
		in.Solution = sum
	}
	if v.Agent == suite.AgentDeterministic {
		sum, ok := d.scripts[v.Script]
		if !ok {
			if _, err := agent.LoadScript(v.Script); err != nil {
				return suite.UsageErrorf("variant %s: %v", v.Name, err)
			}
			var err error
			if sum, err = fileDigest(v.Script); err != nil {
				return suite.UsageErrorf("variant %s: %v", v.Name, err)
			}
			d.scripts[v.Script] = sum
		}
		in.Script = sum
	}
	return nil
}

// effectiveTimeouts are the agent (0: no limit) and verifier timeouts in
// seconds, as the trial runs them (harbor.Timeouts).
func effectiveTimeouts(t *tasks.Task, m suite.Multipliers) (agent, verifier float64) {
	a, v, _ := harbor.Timeouts(t.Config, m)
	return a.Seconds(), v.Seconds()
}
