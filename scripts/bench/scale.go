package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// One big engine: trials per minute by --jobs for a single-container and
// a multi-container task, each beside the engine's own floor for as many
// containers at once; and a dataset of many tiny tasks at --jobs auto,
// whose peak memory, open files, threads and goroutines must not grow with
// the number of tasks, only with the trials running at once.

// scaleLevel is one --jobs level of one task.
type scaleLevel struct {
	jobs   int
	perMin samples // flightdeck's trials per minute
	floor  samples // the engine's: the same containers, `docker run --rm` each, jobs at once
}

// scaleFigures are the throughput rows of one task.
type scaleFigures struct {
	name       string // "single-container", "multi-container"
	containers int    // containers a trial starts, for the floor
	trials     int
	levels     []scaleLevel
}

// scaleThroughput runs trials nop trials of task at each level, reps
// times, levels interleaved, each beside its floor.
func (b *bench) scaleThroughput(ctx context.Context, name, task string, containers, trials, reps int, levels []int) (*scaleFigures, error) {
	suite, resultsDir, err := b.ws.suiteOf("scale-"+name, task, trials, 1, nopVariant)
	if err != nil {
		return nil, err
	}
	f := &scaleFigures{name: name, containers: containers, trials: trials}
	for _, l := range levels {
		f.levels = append(f.levels, scaleLevel{jobs: l})
	}
	// One unmeasured run: the task's images built, the engine warm.
	if _, err := b.runBinary(ctx, "run", suite, "--no-cache", "--json", "--results", resultsDir, "-j", "1"); err != nil {
		return nil, err
	}
	for i := range reps {
		for j := range f.levels {
			l := &f.levels[(i+j)%len(f.levels)]
			b.logf("%s: %d trials at --jobs %d, %d/%d", name, trials, l.jobs, i+1, reps)
			r, err := b.runBinary(ctx, "run", suite, "--no-cache", "--json", "--results", resultsDir, "-j", strconv.Itoa(l.jobs))
			if err != nil {
				return nil, err
			}
			l.perMin = append(l.perMin, float64(trials)/r.wall.Minutes())
			took, err := b.containerFloor(ctx, trials*containers, l.jobs*containers)
			if err != nil {
				return nil, err
			}
			l.floor = append(l.floor, float64(trials)/took.Minutes())
		}
	}
	return f, nil
}

// containerFloor runs n `docker run --rm` of the base image, at most at
// once, and returns how long they took.
func (b *bench) containerFloor(ctx context.Context, n, at int) (time.Duration, error) {
	start := time.Now()
	sem := make(chan struct{}, at)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			out, err := exec.CommandContext(ctx, "docker", "run", "--rm", "--network", "none",
				"--label", "flightdeck.run="+b.runID, "flightdeck/base:bookworm", "true").CombinedOutput()
			if err != nil {
				mu.Lock()
				if first == nil {
					first = fmt.Errorf("the engine's floor: docker run: %v: %s", err, out)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return time.Since(start), first
}

// datasetFigures are one run of a dataset of tiny tasks at --jobs auto.
type datasetFigures struct {
	tasks      int
	jobs       int
	wall       float64
	vmHWM      int64 // kB
	fds        int   // open files, at most
	threads    int   // OS threads, at most
	goroutines int   // the runner in this process: goroutines above the bench's own, at most
	heapMB     float64
}

// makeDataset writes n tiny tasks, each the bench task on the image the
// bench built (docker_image: no build in the run).
func (b *bench) makeDataset(n int) (string, error) {
	dir := filepath.Join(b.ws.root, fmt.Sprintf("dataset-%d", n))
	tests, err := os.ReadFile(filepath.Join(b.ws.task, "tests", "test.sh"))
	if err != nil {
		return "", err
	}
	// The same tests/: the same recorded digest.
	benchToml, err := os.ReadFile(filepath.Join(b.ws.task, "task.toml"))
	if err != nil {
		return "", err
	}
	digest := regexp.MustCompile(`files_digest = "[^"]+"`).Find(benchToml)
	if digest == nil {
		return "", fmt.Errorf("%s has no files_digest", filepath.Join(b.ws.task, "task.toml"))
	}
	for i := range n {
		t := filepath.Join(dir, fmt.Sprintf("tiny-%03d", i))
		if err := os.MkdirAll(filepath.Join(t, "tests"), 0o755); err != nil {
			return "", err
		}
		toml := fmt.Sprintf("schema_version = \"1.4\"\n\n[task]\nname = \"bench/tiny-%03d\"\n\n[agent]\ntimeout_sec = 60.0\n\n"+
			"[environment]\ndocker_image = %q\nallow_internet = false\n\n[verifier]\ntimeout_sec = 60.0\n\n"+
			"[flightdeck.grader]\ncommand = \"bash tests/test.sh\"\n%s\n", i, b.img.Ref, digest)
		for name, data := range map[string][]byte{"task.toml": []byte(toml), "instruction.md": []byte("Nothing to do.\n"), "tests/test.sh": tests} {
			if err := os.WriteFile(filepath.Join(t, name), data, 0o644); err != nil {
				return "", err
			}
		}
	}
	return dir, nil
}

// datasetRun runs a dataset of n tiny tasks, nop, --jobs auto: once with
// the binary (memory, files, threads), once more in this process, not
// cached (goroutines, heap).
func (b *bench) datasetRun(ctx context.Context, n int) (*datasetFigures, error) {
	dir, err := b.makeDataset(n)
	if err != nil {
		return nil, err
	}
	resultsDir, err := b.ws.freshResults(fmt.Sprintf("dataset-%d", n))
	if err != nil {
		return nil, err
	}
	b.logf("a dataset of %d tiny tasks at --jobs auto", n)
	f := &datasetFigures{tasks: n}
	// A suite's nop is held to nothing (the bench task's grader passes
	// it); the built-in one would expect it to fail.
	suite := filepath.Join(b.ws.root, fmt.Sprintf("dataset-%d.yaml", n))
	if err := os.WriteFile(suite, fmt.Appendf(nil, "name: dataset-%d\ntasks: [%q]\nvariants:\n  nop: {agent: nop}\nretries: 0\nresults: %q\n", n, dir, resultsDir), 0o644); err != nil {
		return nil, err
	}
	args := []string{"run", suite, "--jobs", "auto", "--no-cache", "--json", "--results", resultsDir}
	cmd := exec.CommandContext(ctx, b.bin, args...)
	cmd.Dir = b.ws.root
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop := make(chan struct{})
	peaks := make(chan procPeaks, 1)
	go func() { peaks <- watchProc(cmd.Process.Pid, stop) }()
	err = cmd.Wait()
	f.wall = time.Since(start).Seconds()
	close(stop)
	p := <-peaks
	if err != nil {
		e := errOut.String()
		return nil, fmt.Errorf("the %d-task dataset: %v: %s", n, err, e[max(0, len(e)-600):])
	}
	f.vmHWM, f.fds, f.threads = p.hwm, p.fds, p.threads
	if i := strings.Index(out.String(), `"concurrency": `); i >= 0 {
		fmt.Sscanf(out.String()[i+len(`"concurrency": `):], "%d", &f.jobs)
	}

	// In this process: goroutines and heap, sampled while it runs.
	base := runtime.NumGoroutine()
	done := make(chan struct{})
	sampled := make(chan [2]float64, 1)
	go func() {
		var g, heap float64
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			g = max(g, float64(runtime.NumGoroutine()-base))
			runtime.ReadMemStats(&ms)
			heap = max(heap, float64(ms.HeapInuse)/1e6)
			select {
			case <-done:
				sampled <- [2]float64{g, heap}
				return
			case <-tick.C:
			}
		}
	}()
	_, err = b.runInProcess(ctx, suite, resultsDir, true)
	close(done)
	s := <-sampled
	if err != nil {
		return nil, err
	}
	f.goroutines, f.heapMB = int(s[0]), s[1]
	return f, nil
}

// procPeaks are a process's peaks, read from /proc.
type procPeaks struct {
	hwm     int64 // kB
	fds     int
	threads int
}

// watchProc polls /proc/PID until stop is closed.
func watchProc(pid int, stop <-chan struct{}) procPeaks {
	var p procPeaks
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if v, ok := readHWM(pid); ok {
			p.hwm = v
		}
		if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
			p.fds = max(p.fds, len(ents))
		}
		if t := readThreads(pid); t > 0 {
			p.threads = max(p.threads, t)
		}
		select {
		case <-stop:
			return p
		case <-tick.C:
		}
	}
}

func readThreads(pid int) int {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(rest))
			return n
		}
	}
	return 0
}

// writeScale writes the throughput rows and the dataset runs.
func (r *report) writeScale(w writer) {
	if len(r.scale) == 0 && len(r.datasets) == 0 {
		return
	}
	w("## One big engine\n\n")
	w("`flightdeck run` (the binary) of nop trials, --no-cache, at each --jobs level, levels interleaved, each run\n")
	w("followed by the engine's floor for it: as many `docker run --rm flightdeck/base:bookworm true` (no\n")
	w("network) as the trials start containers, as many at once as the trials' containers at that level.\n")
	w("trials/min = trials / wall-clock time; the floor's, the same trials / the floor's time.\n\n")
	w("| task | --jobs | trials/min | vs --jobs 1 | the engine's floor, trials/min | vs its --jobs 1 | flightdeck / floor |\n|---|---|---|---|---|---|---|\n")
	for _, f := range r.scale {
		one, floorOne := f.levels[0].perMin.median(), f.levels[0].floor.median()
		for _, l := range f.levels {
			one1 := func(v float64) string { return fmt.Sprintf("%.1f", v) }
			w("| %s (%d trials, %d containers each) | %d | %s | %.2f × | %s | %.2f × | %.2f |\n",
				f.name, f.trials, f.containers, l.jobs, l.perMin.spreadWith(one1), l.perMin.median()/one,
				l.floor.spreadWith(one1), l.floor.median()/floorOne, l.perMin.median()/l.floor.median())
		}
	}
	w("\nThe floor's own --jobs ratio is what the engine gives on this machine for that many containers at once:\n")
	w("flightdeck's ratio below it is flightdeck's; at or near it, the engine's.\n\n")
	if len(r.datasets) > 0 {
		w("A dataset of tiny tasks (the bench task on its prebuilt image: no build), nop, --jobs auto, made by the\n")
		w("bench. Peaks of the binary's process (polled every 50 ms) and, in a second run of the same trials in the\n")
		w("bench's process (--no-cache), its goroutines above the bench's own and its heap in use (sampled every 20 ms).\n\n")
		w("| tasks | jobs | wall | VmHWM | open files | threads | goroutines (in process) | heap in use (in process) |\n|---|---|---|---|---|---|---|---|\n")
		for _, d := range r.datasets {
			w("| %d | %d | %.1f s | %.1f MB | %d | %d | %d | %.1f MB |\n", d.tasks, d.jobs, d.wall, float64(d.vmHWM)*1024/1e6, d.fds, d.threads, d.goroutines, d.heapMB)
		}
		if len(r.datasets) == 2 {
			a, z := r.datasets[0], r.datasets[1]
			w("\n%d tasks against %d, at the same jobs: VmHWM %.2f ×, open files %.2f ×, threads %.2f ×, goroutines %.2f × (%.0f × the tasks).\n",
				z.tasks, a.tasks, float64(z.vmHWM)/float64(a.vmHWM), ratio(z.fds, a.fds), ratio(z.threads, a.threads), ratio(z.goroutines, a.goroutines), float64(z.tasks)/float64(a.tasks))
		}
		w("\n")
	}
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
