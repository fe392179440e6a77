package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/flightdeck/flightdeck/internal/hostgit"
	"github.com/flightdeck/flightdeck/internal/text"
	"github.com/flightdeck/flightdeck/runner/imagecache"
	"github.com/flightdeck/flightdeck/runner/images"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/runner/trial"
	"github.com/flightdeck/flightdeck/runner/trialnet"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/tasks"
)

// BuildLine is one task's image as `flightdeck build` reports it.
type BuildLine struct {
	Task     string
	Ref      string        // the image, when it was found or built
	Bases    []string      // the images it was built from
	Cached   bool          // found on the engine: nothing built
	Duration time.Duration // the build's
	Err      error
	Log      string // the build log
}

// TaskDefect tells whether the line's error is the task's own (a failed
// RUN step, a FROM that cannot be had), not the machine's.
func (l BuildLine) TaskDefect() bool { return l.Err != nil && trial.IsTaskDefect(l.Err) }

// String is the task's line: cached, built in Ns, or failed with the
// failing step.
func (l BuildLine) String() string {
	switch {
	case l.Err != nil:
		msg := l.Err.Error()
		var be *sandbox.BuildError
		if errors.As(l.Err, &be) && be.Step != "" {
			msg = fmt.Sprintf("at %s: %s", be.Step, be.Message)
			if n := len(be.Tail); n > 0 {
				// The step's own last word says more than its exit code.
				msg += "; " + be.Tail[n-1]
			}
		}
		if _, err := os.Stat(l.Log); l.Log == "" || err != nil {
			// Nothing was built (the base is missing, say): no log to name.
			return fmt.Sprintf("failed  %s  %s", l.Task, msg)
		}
		return fmt.Sprintf("failed  %s  %s (log: %s)", l.Task, msg, l.Log)
	case l.Cached:
		return fmt.Sprintf("cached  %s  %s", l.Task, l.Ref)
	}
	return fmt.Sprintf("built   %s  %s in %.1fs", l.Task, l.Ref, l.Duration.Seconds())
}

// Build finds or builds the image of every task of req, jobs at a time
// (jobs < 1: the run's concurrency), as a run would (image map, the
// offline fallback), reporting each task's line as it is done. Build logs
// go to the results dir's builds/. The lines are in task order.
func (r *Runner) Build(ctx context.Context, req Request, jobs int, report func(BuildLine)) ([]BuildLine, error) {
	if len(req.Tasks) == 0 {
		// Every task was refused: nothing asks the engine for anything,
		// and the refusals decide the exit code.
		return nil, nil
	}
	if err := hostgit.Available(); err != nil {
		return nil, err
	}
	eng, err := r.Open(ctx)
	if err != nil {
		return nil, err
	}
	if jobs < 1 {
		jobs = max(1, req.Config.Concurrency)
	}
	run := "build-" + NewRunID(time.Now())
	var mu sync.Mutex
	imgs := images.New(eng, req.Config.Images, filepath.Join(req.Config.Results, "builds"), req.Config.TimeoutMultiplier.Build,
		func(line string) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintln(r.Progress, line)
		})
	imgs.NoSubstitute = req.Config.NoSubstitute
	imgs.SuiteFile = suite.FromFile(req.Config.SuiteFile)
	if r.ImageIndex != "" {
		imgs.Touch = func(img sandbox.Image) {
			// A failure to record a use is not the build's.
			_ = imagecache.Open(r.ImageIndex).Touch([]imagecache.Touched{touched(img)}, run, time.Now())
		}
	}
	perTask := make([][]BuildLine, len(req.Tasks))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(jobs, max(1, len(req.Tasks))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				perTask[i] = buildOne(ctx, imgs, req.Config, req.Tasks[i])
				mu.Lock()
				for _, l := range perTask[i] {
					report(l)
				}
				mu.Unlock()
			}
		}()
	}
	for i := range req.Tasks {
		if ctx.Err() != nil {
			break
		}
		work <- i
	}
	close(work)
	wg.Wait()
	var lines []BuildLine
	for _, ls := range perTask {
		lines = append(lines, ls...)
	}
	return lines, ctx.Err()
}

func buildOne(ctx context.Context, imgs *images.Set, cfg suite.Config, t *tasks.Task) []BuildLine {
	start := time.Now()
	img, log, err := imgs.Get(ctx, t)
	lines := []BuildLine{{Task: t.ID, Ref: img.Ref, Bases: img.Bases, Cached: err == nil && !img.Built, Duration: time.Since(start), Err: err, Log: log}}
	if err != nil || t.ComposePath() == "" {
		return lines
	}
	// A multi-container task's services, built or found as a trial would.
	c, err := trialnet.LoadCompose(t)
	if err != nil {
		return append(lines, BuildLine{Task: t.ID + "/services", Err: err})
	}
	for _, svc := range c.Services {
		log := filepath.Join(imgs.LogDir(), text.FileName(t.ID)+"."+svc.Name+".log")
		start := time.Now()
		img, err := imgs.Engine().EnsureImage(ctx, trialnet.ServiceBuildSpec(t, svc, imgs.Map(), cfg.TimeoutMultiplier, log))
		if err == nil && imgs.Touch != nil {
			imgs.Touch(img)
		}
		lines = append(lines, BuildLine{Task: t.ID + "/" + svc.Name, Ref: img.Ref, Bases: img.Bases,
			Cached: err == nil && !img.Built, Duration: time.Since(start), Err: err, Log: log})
	}
	return lines
}
