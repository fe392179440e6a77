// Command bench measures flightdeck's overhead side by side with the
// engine's floor and a CLI-based reference runner, on this machine, in one
// run, and writes BENCHMARKS.md. `make bench` runs it after building the
// binary and the base image; -quick takes fewer repetitions.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/flightdeck/flightdeck/runner"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/tasks"
)

// plan is how many repetitions each figure gets.
type plan struct {
	rounds, attempts         int // interleaved floor/CLI/flightdeck rounds; nop and command trials per round
	composeRounds            int
	startupReps              int
	profileTrials            int
	imageReps                int
	lsImages, lsReps         int // task images made for `images ls`, and its repetitions
	digestSize               int64
	digestReps               int
	jobsTrials, jobsReps     int
	jobsLevels               []int
	cachedReps               int
	memoryTrials, memoryJobs int
	verifyReps               int
	scaleTrials, scaleReps   int
	datasetSizes             []int
	// onlyScale measures the big engine's figures alone and prints their
	// section (-scale).
	onlyScale bool
}

// fullPlan keeps the whole bench near ten minutes on two cores.
var fullPlan = plan{
	rounds: 12, attempts: 2, composeRounds: 5, startupReps: 3, profileTrials: 10, imageReps: 5, lsImages: 100, lsReps: 7,
	digestSize: 200 << 20, digestReps: 5,
	jobsTrials: 20, jobsReps: 5, jobsLevels: []int{1, 2, 4}, cachedReps: 7,
	memoryTrials: 200, memoryJobs: 4, verifyReps: 3,
	scaleTrials: 8, scaleReps: 3, datasetSizes: []int{30, 300},
}

var quickPlan = plan{
	rounds: 4, attempts: 2, composeRounds: 2, startupReps: 1, profileTrials: 5, imageReps: 2, lsImages: 100, lsReps: 3,
	digestSize: 200 << 20, digestReps: 2,
	jobsTrials: 20, jobsReps: 1, jobsLevels: []int{1, 2, 4}, cachedReps: 3,
	memoryTrials: 200, memoryJobs: 4, verifyReps: 1,
	scaleTrials: 4, scaleReps: 1, datasetSizes: []int{30, 300},
}

// bench is one run of the benchmarks.
type bench struct {
	ws           *workspace
	docker       *sandbox.Docker
	eng          *timedEngine
	task         *tasks.Task
	img          sandbox.Image // the trivial task's image, built before anything is measured
	harbor       *tasks.Task   // the trivial Harbor-format task
	harborImg    sandbox.Image // its image, built before anything is measured
	composeImage string        // the multi-container task's image, as its first run built it
	runID        string        // labels what the bench itself creates
	bin          string
	keepProfiles string
	started      time.Time
	log          io.Writer

	images []string // image references to remove at the end
	runs   []string // flightdeck run ids to reap at the end
}

func main() {
	quick := flag.Bool("quick", false, "fewer repetitions (a few minutes); the figures are noisier")
	out := flag.String("out", "", "where to write the report (default: BENCHMARKS.md at the project root)")
	bin := flag.String("bin", "", "the flightdeck binary to measure (default: one built from this tree)")
	profiles := flag.String("profiles", "", "keep the CPU profiles (*.pprof) in this directory")
	onlyScale := flag.Bool("scale", false, "measure only the big engine's figures (throughput by --jobs with the engine's floor, the dataset runs) and print their section")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	p := fullPlan
	if *quick {
		p = quickPlan
	}
	p.onlyScale = *onlyScale
	if err := run(ctx, p, *quick, *out, *bin, *profiles); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, p plan, quick bool, out, bin, profiles string) (err error) {
	repo, err := projectRoot()
	if err != nil {
		return err
	}
	if out == "" {
		out = filepath.Join(repo, "BENCHMARKS.md")
	}
	ws, err := newWorkspace(repo)
	if err != nil {
		return err
	}
	b := &bench{ws: ws, runID: "bench-" + runner.NewRunID(time.Now()), keepProfiles: profiles,
		started: time.Now(), log: os.Stderr}
	defer func() {
		if cerr := b.cleanup(ctx); err == nil {
			err = cerr
		}
	}()
	if b.bin, err = findBinary(ctx, repo, bin, ws.root); err != nil {
		return err
	}
	if b.docker, err = sandbox.NewWithOptions(ctx, sandbox.Options{ProbeDir: ws.root}); err != nil {
		return err
	}
	b.eng = newTimedEngine(b.docker)
	info, err := b.docker.Preflight(ctx)
	if err != nil {
		return err
	}
	if b.task, err = tasks.Load(ws.task, tasks.LoadOptions{Local: true}); err != nil {
		return err
	}
	if b.harbor, err = tasks.Load(ws.harbor, tasks.LoadOptions{Local: true}); err != nil {
		return err
	}
	if _, err := b.docker.InspectImage(ctx, "flightdeck/base:bookworm"); err != nil {
		return fmt.Errorf("the base image is missing (run `make base-image`): %w", err)
	}
	if b.img, err = b.taskImage(ctx, b.task); err != nil {
		return err
	}
	if b.harborImg, err = b.taskImage(ctx, b.harbor); err != nil {
		return err
	}

	rep := &report{plan: p, quick: quick, machine: describeMachine(ctx, info, repo), runID: b.runID}
	if p.onlyScale {
		if err := b.scaleAll(ctx, p, rep); err != nil {
			return err
		}
		var sb strings.Builder
		rep.writeScale(func(format string, args ...any) { fmt.Fprintf(&sb, format, args...) })
		fmt.Print(sb.String())
		return nil
	}
	sampler := startLoadSampler(ctx, 10*time.Second)
	if rep.trials, err = b.trialRounds(ctx, p.rounds, p.attempts); err != nil {
		return err
	}
	if rep.timeline, err = b.oracleTimelineRuns(ctx, timelineRuns); err != nil {
		return err
	}
	if rep.compose, err = b.composeRounds(ctx, p.composeRounds); err != nil {
		return err
	}
	if rep.profile, err = b.profileTrials(ctx, p.profileTrials); err != nil {
		return err
	}
	if rep.startup, err = b.startup(ctx, p.startupReps); err != nil {
		return err
	}
	if rep.image, err = b.imageCache(ctx, p.imageReps); err != nil {
		return err
	}
	if rep.imagesLs, err = b.imagesList(ctx, p.lsImages, p.lsReps); err != nil {
		return err
	}
	if rep.digest, err = b.digestThroughput(ctx, p.digestSize, p.digestReps); err != nil {
		return err
	}
	if rep.jobs, err = b.jobs(ctx, p.jobsTrials, p.jobsReps, p.cachedReps, p.jobsLevels); err != nil {
		return err
	}
	if rep.memory, err = b.memory(ctx, p.memoryTrials, p.memoryJobs); err != nil {
		return err
	}
	if rep.verify, err = b.verifyRuns(ctx, p.verifyReps); err != nil {
		return err
	}
	if err := b.scaleAll(ctx, p, rep); err != nil {
		return err
	}
	if rep.jobs.cached.median() > cachedTarget {
		b.logf("cached rerun missed its target: profiling it in process")
		suite := filepath.Join(ws.root, "twenty.yaml")
		resultsDir := filepath.Join(ws.root, "results-twenty")
		if rep.cachedProfile, err = b.profileCPU("cached", func() error {
			_, err := b.runInProcess(ctx, suite, resultsDir, false)
			return err
		}); err != nil {
			return err
		}
	}
	rep.load, rep.containers, rep.foreign = sampler.finish()
	rep.machine.loadAfter = loadAvg()
	rep.took = time.Since(b.started)
	if err := os.WriteFile(out, []byte(rep.markdown()), 0o644); err != nil {
		return err
	}
	b.logf("wrote %s", out)
	return nil
}

// taskImage builds a bench task's image as the runner does, so that no
// measured trial builds it, and notes it for removal at the end.
func (b *bench) taskImage(ctx context.Context, t *tasks.Task) (sandbox.Image, error) {
	img, err := b.docker.EnsureImage(ctx, sandbox.BuildSpec{Name: t.ID, ContextDir: t.Path(tasks.EnvironmentDir)})
	if err != nil {
		return img, fmt.Errorf("the image of the bench task %s: %w", t.ID, err)
	}
	b.images = append(b.images, img.Ref)
	return img, nil
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.log, "bench [%5.0fs] %s\n", time.Since(b.started).Seconds(), fmt.Sprintf(format, args...))
}

func (b *bench) noteRun(id string) {
	if id != "" && !slices.Contains(b.runs, id) {
		b.runs = append(b.runs, id)
	}
}

// cleanup removes every container and image the bench and its runs
// created, and the workspace, even after an interrupt.
func (b *bench) cleanup(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	var errs []error
	if b.docker != nil {
		for _, id := range b.runs {
			if _, err := b.docker.Reap(ctx, sandbox.ReapOptions{RunID: id}); err != nil {
				errs = append(errs, err)
			}
		}
		if _, err := b.docker.Reap(ctx, sandbox.ReapOptions{RunID: b.runID, TaskImages: true}); err != nil {
			errs = append(errs, err)
		}
		for _, ref := range append(b.images, b.cliReferenceTags()...) {
			if err := b.docker.RemoveImage(ctx, ref); err != nil {
				errs = append(errs, err)
			}
		}
		b.docker.Close()
	}
	if err := b.ws.remove(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// projectRoot is the nearest directory up from here holding go.mod.
func projectRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run the bench inside the project (no go.mod found up from here)")
		}
		dir = parent
	}
}

// findBinary returns the flightdeck binary to measure: the one named, else
// one built from the tree into dir, so the figures are the tree's.
func findBinary(ctx context.Context, repo, named, dir string) (string, error) {
	if named != "" {
		return filepath.Abs(named)
	}
	p := filepath.Join(dir, "flightdeck")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", p, "./cmd/flightdeck")
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build flightdeck: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return p, nil
}

// scaleAll measures the big engine's figures into rep.
func (b *bench) scaleAll(ctx context.Context, p plan, rep *report) error {
	for _, t := range []struct {
		name, dir  string
		containers int
	}{{"single-container", b.ws.task, 2}, {"multi-container", b.ws.compose, 2}} {
		f, err := b.scaleThroughput(ctx, t.name, t.dir, t.containers, p.scaleTrials, p.scaleReps, p.jobsLevels)
		if err != nil {
			return err
		}
		rep.scale = append(rep.scale, f)
	}
	for _, n := range p.datasetSizes {
		d, err := b.datasetRun(ctx, n)
		if err != nil {
			return err
		}
		rep.datasets = append(rep.datasets, d)
	}
	return nil
}
