package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/files"
	"github.com/flightdeck/flightdeck/internal/hostgit"
	"github.com/flightdeck/flightdeck/internal/text"
	"github.com/flightdeck/flightdeck/runner/agent"
	"github.com/flightdeck/flightdeck/runner/htmlreport"
	"github.com/flightdeck/flightdeck/runner/images"
	"github.com/flightdeck/flightdeck/runner/progress"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/secrets"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/runner/trial"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/tasks"
)

// workDirName is the run dir's subdirectory of runner-only files (work dirs,
// shadow repositories), removed when the run ends unless --keep.
const workDirName = ".work"

// reapTimeout bounds the cleanup of an interrupted run.
const reapTimeout = 8 * time.Second

// orphanMinAge is how old an earlier run's leftover must be before a run's
// start removes it: younger ones are left to whoever killed their owner
// (`flightdeck gc` removes them at any age).
const orphanMinAge = time.Minute

// EngineOpener connects to the container engine; a run calls it only when
// some trial has to run.
type EngineOpener func(ctx context.Context) (sandbox.Engine, error)

// Runner runs suites of trials.
type Runner struct {
	Open     EngineOpener
	Progress io.Writer // progress lines and notices (stderr)
	TTY      bool      // Progress is a terminal: a live status block under the lines
	// Width is the terminal's columns, read at each redraw (nil: 100).
	Width   func() int
	Version string // flightdeck's version, recorded in run.json
	Owner   sandbox.Owner
	// ImageIndex is the directory of the image index, where each run
	// records its uses of task images for the cache's eviction ("": none).
	ImageIndex string
	// Hurry closes when the user asks again to stop (a second signal): the
	// trials' own cleanups stop waiting, and the run's removal by label,
	// masking and run.json still happen.
	Hurry <-chan struct{}
	// Agent, when set, is every trial's agent; with AgentOnly a trial ends
	// after its agent phase, not graded (task shell).
	Agent     agent.Agent
	AgentOnly bool
	// Log is the diagnostic log: retry decisions here, engine calls and
	// cleanups in sandbox (nil: none).
	Log *slog.Logger
	// Tracer is flightdeck's executable, which task verify's traced
	// oracle runs in its grading container ("": none; the attack that
	// needs the trace says so).
	Tracer string
	// BuildDigest is the digest of flightdeck's executable, in every
	// trial's cache key: a result another build got is run again ("":
	// none).
	BuildDigest string
}

// logger is r.Log, or one that discards.
func (r *Runner) logger() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

// Request is one run to make.
type Request struct {
	Config suite.Config
	Tasks  []*tasks.Task
	// Refused are the tasks found that cannot run here: their trials are
	// recorded refused, with the reason, and the run exits 1.
	Refused []suite.RefusedTask
	Specs   []grader.Spec
	// ResumeID continues that run in its own directory: trials with a valid
	// result are kept, the others run.
	ResumeID string
}

// FallbackImage is the offline base image that stands in for a missing
// official image (images.Fallback).
const FallbackImage = images.Fallback

// runState is one run in progress.
type runState struct {
	r        *Runner
	cfg      suite.Config
	runID    string
	dir      string
	eng      sandbox.Engine
	images   *images.Set
	progress *progress.Progress
	cache    results.CacheIndex
	// done closes when a trial of this run's todo has ended (the rewrite
	// attack waits for its traced oracle).
	done    map[string]chan struct{}
	mu      sync.Mutex
	results map[string]*results.Result

	// redact masks the run's secrets in what it writes.
	redact *secrets.Redactor
	// trials is what each trial is given of the run, once the engine is open.
	trials *trial.Env
	// removals are the trials' engine removals still going on beside the
	// run (trial.Env.Later); the run waits for them before it ends.
	removals sync.WaitGroup
}

// later runs a trial's removals beside the run.
func (s *runState) later(removals func()) {
	s.removals.Add(1)
	go func() {
		defer s.removals.Done()
		removals()
	}()
}

// NewRunID makes a run id: the UTC time and a random suffix.
func NewRunID(now time.Time) string {
	b := make([]byte, 3)
	rand.Read(b)
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b)
}

// Run runs (or resumes) a run and returns its record. An error means the
// run could not start (the engine, the results dir); trial failures are in
// the record.
func (r *Runner) Run(ctx context.Context, req Request) (*results.RunRecord, error) {
	cfg := req.Config
	envs, redact, err := r.resolveSecrets(cfg)
	if err != nil {
		return nil, &suite.UsageError{Err: err}
	}
	trials, err := planTrials(cfg, req.Tasks, req.Specs, envs, r.BuildDigest)
	if err != nil {
		return nil, err
	}
	for _, t := range trials {
		if t.Variant.Regrade != "" && t.Refusal == nil {
			t.Refusal = regradeRefusal(t)
		}
	}
	for _, rt := range req.Refused {
		trials = append(trials, planRefused(cfg, rt)...)
	}
	trials = inTaskOrder(cfg.TaskDirs, trials)
	runnable, refused := splitRefused(trials)
	s := &runState{r: r, cfg: cfg, cache: results.CacheIndex{ResultsDir: cfg.Results}, results: map[string]*results.Result{}, redact: redact}
	// Whatever ends the run, what it started beside its trials (the bind
	// mount's probe, removals) is over before it returns.
	defer s.removals.Wait()
	progressOut := r.Progress
	if !redact.Empty() && progressOut != nil {
		progressOut = &redactingWriter{w: progressOut, red: redact}
	}
	s.progress = progress.New(progressOut, r.TTY, len(trials))
	s.progress.Width = r.Width
	s.progress.Quiet = r.AgentOnly
	rec := s.newRecord(req.ResumeID)
	rec.Config.Variants = redactVariants(rec.Config.Variants, redact)
	resume := req.ResumeID != ""

	// Nothing is written before the engine, when one is needed, answers.
	fates, todo := s.classify(runnable, resume)
	if len(todo) > 0 {
		if err := s.open(ctx, rec, todo); err != nil {
			return nil, err
		}
	}
	if err := s.makeRunDir(resume, rec); err != nil {
		return nil, err
	}
	if resume && !redact.Empty() {
		// A trial the interruption cut short left its logs unmasked.
		if err := redact.Tree(s.dir); err != nil {
			s.progress.Line("redact secrets: " + err.Error())
		}
	}
	switch {
	case r.AgentOnly:
		// A shell's run (a temp dir) is not the person's business.
	case len(refused) > 0:
		s.progress.Line(fmt.Sprintf("run %s: %s, %d of them refused (not run: the summary says why for each) → %s", s.runID, text.Count(len(trials), "trial"), len(refused), s.dir))
	default:
		s.progress.Line(fmt.Sprintf("run %s: %s → %s", s.runID, text.Count(len(trials), "trial"), s.dir))
	}
	for _, n := range cfg.Notes {
		s.progress.Line(n)
	}
	s.refuse(refused)
	todo = append(todo, s.settle(fates)...)
	if len(todo) > 0 {
		if s.eng == nil {
			if err := s.open(ctx, rec, todo); err != nil {
				return nil, err
			}
		}
		s.trials.Inspector.StartEarly(ctx, todo)
		s.execute(ctx, todo)
	}
	return s.finishRun(ctx, rec, trials)
}

// newRecord starts the run's record: a new run, or the run being resumed
// (its start, versions and fallback images kept).
func (s *runState) newRecord(resumeID string) *results.RunRecord {
	cfg, r := s.cfg, s.r
	rec := &results.RunRecord{Schema: results.RunSchema, Suite: cfg.Suite, SuiteFile: cfg.SuiteFile, Config: cfg,
		Versions: results.Versions{Flightdeck: r.Version}, Status: results.StatusRunning}
	if resumeID != "" {
		s.runID = resumeID
		s.dir = filepath.Join(cfg.Results, resumeID)
		if old, err := results.ReadRunRecord(s.dir); err == nil {
			rec.Started, rec.Resumed = old.Started, append(old.Resumed, time.Now().UTC())
			rec.Versions, rec.FallbackImages = old.Versions, old.FallbackImages
			rec.Versions.Flightdeck = r.Version
		}
	} else {
		s.runID = NewRunID(time.Now())
		s.dir = filepath.Join(cfg.Results, s.runID)
		rec.Started = time.Now().UTC()
	}
	rec.RunID, rec.Dir = s.runID, s.dir
	return rec
}

// makeRunDir makes the run's dir (a resumed run has one), its private
// work dir, and writes the record as it starts.
func (s *runState) makeRunDir(resume bool, rec *results.RunRecord) error {
	if !resume {
		if err := os.MkdirAll(s.cfg.Results, 0o755); err != nil {
			return fmt.Errorf("results dir: %w", err)
		}
		if err := os.Mkdir(s.dir, 0o755); err != nil {
			return fmt.Errorf("run dir: %w", err)
		}
	}
	// Work dirs hold what agents wrote as root, set-id programs included,
	// until their trial ends: no other local user may reach them.
	work := filepath.Join(s.dir, workDirName)
	if err := os.MkdirAll(work, 0o700); err != nil {
		return fmt.Errorf("make the run's work dir: %w", err)
	}
	if err := os.Chmod(work, 0o700); err != nil {
		return fmt.Errorf("make the run's work dir private: %w", err)
	}
	return results.WriteJSONFile(filepath.Join(s.dir, results.RunFile), rec)
}

// finishRun cleans up after the trials (everything of an interrupted run
// on the engine, the work dirs) and writes the record and the JUnit file.
func (s *runState) finishRun(ctx context.Context, rec *results.RunRecord, trials []*suite.Trial) (*results.RunRecord, error) {
	cfg := s.cfg
	interrupted := ctx.Err() != nil
	if s.trials != nil {
		// The inspector goes beside the trials' last removals.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reapTimeout)
		s.later(func() {
			defer cancel()
			if err := s.trials.Inspector.Remove(rctx); err != nil {
				s.progress.Line("cleanup: " + err.Error())
			}
		})
	}
	// Nothing of the run's is left on the engine once it ends.
	s.removals.Wait()
	if interrupted && s.eng != nil && !cfg.Keep {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reapTimeout)
		if _, err := s.eng.Reap(rctx, sandbox.ReapOptions{RunID: s.runID}); err != nil {
			s.progress.Line("cleanup: " + err.Error())
		}
		cancel()
	}
	if !cfg.Keep {
		if err := os.RemoveAll(filepath.Join(s.dir, workDirName)); err != nil {
			s.progress.Line("cleanup: remove the run's work dirs: " + err.Error())
		}
	}
	// Mask before anything reads the trials' files (the page, below) and
	// whatever fails after.
	s.redactRunFiles()
	if s.images != nil {
		rec.FallbackImages = mergeStrings(rec.FallbackImages, s.images.FallbackPairs())
	}
	if !interrupted {
		s.enforceBudget(ctx, rec)
	}
	s.finishRecord(rec, trials, interrupted)
	if !interrupted && len(rec.NotRun) == 0 {
		rec.Metrics = s.metrics(ctx, trials)
	}
	if cfg.Keep {
		rec.Kept = s.kept(ctx, rec)
	}
	if err := results.WriteJSONFile(filepath.Join(s.dir, results.RunFile), rec); err != nil {
		return rec, err
	}
	if err := results.WriteJUnit(filepath.Join(s.dir, results.JUnitFile), rec, s.ordered(trials)); err != nil {
		return rec, err
	}
	if err := htmlreport.WriteFile(filepath.Join(s.dir, htmlreport.File), s.dir, ""); err != nil {
		s.progress.Line("report.html: " + err.Error())
	}
	s.redactRunFiles()
	s.progress.Done()
	return rec, nil
}

// kept is what the run left in place with --keep: its objects on the
// engine (listed by its label, nothing removed) and its work dirs.
func (s *runState) kept(ctx context.Context, rec *results.RunRecord) *results.Kept {
	k := &results.Kept{}
	for _, v := range rec.Variants {
		k.Cached += v.Cached
	}
	if ents, err := os.ReadDir(filepath.Join(s.dir, workDirName)); err == nil && len(ents) > 0 {
		k.WorkDir = filepath.Join(s.dir, workDirName)
	}
	if s.eng == nil {
		return k
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reapTimeout)
	defer cancel()
	on, err := s.eng.Reap(rctx, sandbox.ReapOptions{RunID: s.runID, DryRun: true})
	if err != nil {
		s.progress.Line("--keep: list what the run kept: " + err.Error())
	}
	k.Containers, k.Networks, k.Volumes, k.Images = on.Containers, on.Networks, on.Volumes, on.Images
	return k
}

// fate is what becomes of a trial that does not run: its result is kept
// from the run being resumed, or taken from the cache (from src).
type fate struct {
	t      *suite.Trial
	kept   *results.Result
	cached *results.Result
	src    string
}

// classify decides, reading only, which trials run and which results are
// kept or reused. Results of infrastructure errors and refused tasks are
// neither: a refused task that loads now runs.
func (s *runState) classify(trials []*suite.Trial, resume bool) ([]fate, []*suite.Trial) {
	var fates []fate
	var todo []*suite.Trial
	for _, t := range trials {
		if resume {
			path := filepath.Join(s.dir, t.ID, results.ResultFile)
			r, err := results.ReadResult(path)
			if err == nil && !r.Outcome.Ungraded() {
				fates = append(fates, fate{t: t, kept: r})
				continue
			}
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				s.progress.Line(fmt.Sprintf("%s: %v; running it again", t.ID, err))
			}
		}
		if !s.cfg.NoCache {
			if r, src, ok := s.cache.Lookup(t.Key); ok {
				fates = append(fates, fate{t: t, cached: r, src: src})
				continue
			}
		}
		todo = append(todo, t)
	}
	return fates, todo
}

// settle puts kept and cached results in place; a cached result that
// cannot be copied is run instead.
func (s *runState) settle(fates []fate) []*suite.Trial {
	var todo []*suite.Trial
	for _, f := range fates {
		if f.kept != nil {
			results.SetExpectation(f.kept, f.t.Variant)
			s.record(f.t, f.kept)
			s.progress.Kept(f.t, f.kept)
			continue
		}
		res, err := s.reuse(f.t, f.cached, f.src)
		if err != nil {
			s.progress.Line(fmt.Sprintf("%s: cached result not reusable: %v", f.t.ID, err))
			todo = append(todo, f.t)
			continue
		}
		s.record(f.t, res)
		s.progress.Cached(f.t, res)
	}
	return todo
}

// reuse copies a cached trial's files into this run, marking the result
// cached (its own times and outcome are kept).
func (s *runState) reuse(t *suite.Trial, r *results.Result, srcDir string) (*results.Result, error) {
	dst := filepath.Join(s.dir, t.ID)
	if filepath.Clean(srcDir) == filepath.Clean(dst) {
		return r, nil
	}
	if err := files.ResetDir(dst); err != nil {
		return nil, err
	}
	if err := results.LinkTrialFiles(srcDir, dst); err != nil {
		return nil, err
	}
	if !r.Cached || r.CachedFrom == "" {
		r.CachedFrom = r.RunID + "/" + r.Trial
	}
	r.Cached, r.RunID, r.Trial = true, s.runID, t.ID
	// The key is the task's content, not its place: a task in another
	// directory with the same files (a copy, or a twin without solution/
	// for an empty attempt) gives its result, which is this task's now.
	r.TaskID, r.TaskDir = t.Task.ID, t.Task.Dir
	r.Variant = t.Variant.Name
	results.SetExpectation(r, t.Variant)
	if err := results.WriteJSONFile(filepath.Join(dst, results.ResultFile), r); err != nil {
		return nil, err
	}
	return r, nil
}

// open connects to the engine, checks it and that the trials todo fit it,
// and removes what earlier runs of flightdeck left behind when their
// process is gone.
//
// The machine's failures (no engine, a preflight that fails, no git) are
// infrastructure errors (exit 3), not usage errors.
func (s *runState) open(ctx context.Context, rec *results.RunRecord, todo []*suite.Trial) error {
	if err := hostgit.Available(); err != nil {
		return err
	}
	eng, err := s.r.Open(ctx)
	if err != nil {
		return err
	}
	info, err := eng.Preflight(ctx)
	if err != nil {
		return fmt.Errorf("engine preflight: %w", err)
	}
	for _, w := range info.Warnings {
		s.progress.Line("engine: " + w)
	}
	// The bind mount's probe (a container created and read, and removed)
	// only ever warns: it goes beside the run's start.
	s.later(func() {
		if ok, warning := eng.ProbeBindMount(ctx); !ok && ctx.Err() == nil {
			s.progress.Line("engine: " + warning)
		}
	})
	rec.Versions.Engine, rec.Versions.EngineAPI = info.ServerVersion, info.APIVersion
	if k, ok := eng.(interface{ MarkKept() }); ok && s.cfg.Keep {
		// What this run keeps stays until a gc, whatever later runs reap.
		k.MarkKept()
	}
	if reaped, err := eng.Reap(ctx, sandbox.ReapOptions{OrphansOnly: true, MinAge: orphanMinAge, LeaveKept: true}); err != nil {
		s.progress.Line("reap orphans: " + err.Error())
	} else if n := reaped.Containers + reaped.Images; n > 0 {
		s.progress.Line(fmt.Sprintf("removed %s and %s left by earlier runs whose process is gone (kept ones stay; flightdeck gc lists what it removes)",
			text.Count(reaped.Containers, "container"), text.Count(reaped.Images, "image")))
	}
	s.eng = eng
	if err := s.checkCapacity(ctx, info, rec, todo); err != nil {
		return err
	}
	s.images = images.New(eng, s.cfg.Images, filepath.Join(s.dir, "builds"), s.cfg.TimeoutMultiplier.Build, s.progress.Line)
	s.images.SuiteFile = suite.FromFile(s.cfg.SuiteFile)
	s.images.NoSubstitute = s.cfg.NoSubstitute
	s.images.Touch = s.touchImage
	s.trials = &trial.Env{
		Engine: eng, RunID: s.runID, Dir: s.dir, Scratch: filepath.Join(s.dir, workDirName),
		Keep: s.cfg.Keep, Multiplier: s.cfg.TimeoutMultiplier, Owner: s.r.Owner, Hurry: s.r.Hurry,
		ClockOffset: info.ClockOffset, Images: s.images,
		Seeds:     trial.NewSeeds(filepath.Join(s.dir, workDirName, "seeds")),
		Inspector: trial.NewInspector(eng, s.runID),
		Report:    s.progress, Mask: s.redact.Writer,
		Agent: s.r.Agent, AgentOnly: s.r.AgentOnly, Later: s.later, Tracer: s.r.Tracer,
	}
	return nil
}

// execute runs trials, at most cfg.Concurrency at once, until done or
// interrupted.
func (s *runState) execute(ctx context.Context, todo []*suite.Trial) {
	s.progress.SetJobs(s.cfg.Concurrency)
	s.progress.Tick()
	todo = tracedLast(todo)
	s.done = map[string]chan struct{}{}
	for _, t := range todo {
		s.done[t.ID] = make(chan struct{})
	}
	jobs := make(chan *suite.Trial)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.buildAhead(ctx, todo)
	}()
	for i := 0; i < max(1, s.cfg.Concurrency); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range jobs {
				s.runTrial(ctx, t)
				close(s.done[t.ID])
			}
		}()
	}
feed:
	for _, t := range todo {
		select {
		case <-ctx.Done():
			break feed
		case jobs <- t:
		}
	}
	close(jobs)
	wg.Wait()
}

// buildAhead gets the task images of the trials todo in their order, one
// at a time, beside the trials: a trial whose task's image is being built
// waits for that build (images.Set.get shares it), and the builds of later
// tasks overlap the trials of earlier ones. A failure is the trials' to
// report.
func (s *runState) buildAhead(ctx context.Context, todo []*suite.Trial) {
	seen := map[*tasks.Task]bool{}
	for _, t := range todo {
		if ctx.Err() != nil {
			return
		}
		if seen[t.Task] {
			continue
		}
		seen[t.Task] = true
		s.images.Get(ctx, t.Task)
	}
}

// runTrial runs a trial, retrying infrastructure errors, and writes its
// result. An interrupted trial gets no result.
func (s *runState) runTrial(ctx context.Context, t *suite.Trial) {
	if ctx.Err() != nil {
		return
	}
	if readsTrace(t) {
		if s.waitForTrace(ctx, t) != nil {
			return
		}
	}
	s.progress.Start(t)
	var res *results.Result
	for try := 1; try <= s.cfg.Retries+1; try++ {
		var err error
		res, err = s.trials.Attempt(ctx, t, try)
		if err != nil {
			s.progress.Interrupted(t)
			return
		}
		if res.Outcome != grader.OutcomeInfraError {
			break
		}
		if try > s.cfg.Retries {
			s.r.logger().Info("retry: no more tries", "trial", t.ID, "try", try, "retries", s.cfg.Retries, "err", res.Error)
			break
		}
		s.r.logger().Info("retry: an infrastructure error is tried again", "trial", t.ID, "try", try, "err", res.Error)
		s.progress.Retry(t, res.Error)
	}
	results.ApplyRewardKey(res, s.cfg.RewardKey, filepath.Join(s.dir, t.ID, grader.RewardDir))
	results.SetExpectation(res, t.Variant)
	s.redactTrial(filepath.Join(s.dir, t.ID), res)
	if err := results.WriteJSONFile(filepath.Join(s.dir, t.ID, results.ResultFile), res); err != nil {
		s.progress.Line(fmt.Sprintf("%s: %v", t.ID, err))
		return
	}
	if res.Outcome != grader.OutcomeInfraError {
		if err := s.cache.Store(t.Key, s.runID, t.ID); err != nil {
			s.progress.Line(fmt.Sprintf("%s: %v", t.ID, err))
		}
	}
	s.record(t, res)
	s.progress.Finished(t, res)
}

func (s *runState) record(t *suite.Trial, r *results.Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.results[t.ID] = r
}

// ordered returns the results in plan order (trials without one left out).
func (s *runState) ordered(trials []*suite.Trial) []*results.Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*results.Result
	for _, t := range trials {
		if r, ok := s.results[t.ID]; ok {
			out = append(out, r)
		}
	}
	return out
}

func mergeStrings(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range append(append([]string(nil), a...), b...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
