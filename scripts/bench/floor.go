package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/flightdeck/flightdeck/sandbox"
)

// floorSample is one measurement of the floor: two bare container runs of
// the task image through the engine API, the agent's and the grader's, each
// sandbox.Docker Start (create + start, keep-alive entrypoint) + Exec (one
// command) + Remove (force) — the calls a trial's container cannot do
// without, with the task's limits and no network, as flightdeck's own.
type floorSample struct {
	agent, grader containerTimes
}

func (f floorSample) total() time.Duration { return f.agent.total() + f.grader.total() }

// containerTimes are one bare container run's calls.
type containerTimes struct{ start, exec, remove time.Duration }

func (c containerTimes) total() time.Duration { return c.start + c.exec + c.remove }

func (b *bench) floorOnce(ctx context.Context) (floorSample, error) {
	mem, err := b.task.MemoryBytes()
	if err != nil {
		return floorSample{}, err
	}
	spec := sandbox.ContainerSpec{
		Image: b.img.Ref, RunID: b.runID, TrialID: "floor", Workdir: "/app",
		NanoCPUs: b.task.NanoCPUs(), MemoryBytes: mem,
	}
	agent, err := b.containerRun(ctx, spec, []string{"true"})
	if err != nil {
		return floorSample{}, fmt.Errorf("floor, agent's container: %w", err)
	}
	grader, err := b.containerRun(ctx, spec, []string{"bash", "-c", "mkdir -p /tmp/reward && echo 1 > /tmp/reward/reward.txt"})
	if err != nil {
		return floorSample{}, fmt.Errorf("floor, grader's container: %w", err)
	}
	return floorSample{agent: agent, grader: grader}, nil
}

// containerRun starts a container, runs cmd in it and removes it.
func (b *bench) containerRun(ctx context.Context, spec sandbox.ContainerSpec, cmd []string) (containerTimes, error) {
	var t containerTimes
	t0 := time.Now()
	c, err := b.docker.Start(ctx, spec)
	t.start = time.Since(t0)
	if err != nil {
		return t, err
	}
	t1 := time.Now()
	res, err := b.docker.Exec(ctx, c.ID, sandbox.ExecSpec{Cmd: cmd})
	t.exec = time.Since(t1)
	t2 := time.Now()
	if rerr := b.docker.Remove(ctx, c.ID); err == nil {
		err = rerr
	}
	t.remove = time.Since(t2)
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("%v exited %d", cmd, res.ExitCode)
	}
	return t, err
}

// harborWorkdir is fixtures/bench/harbor's WORKDIR, where Harbor runs
// solve.sh and test.sh.
const harborWorkdir = "/app"

// harborFloorCall is one engine call of the Harbor floor.
type harborFloorCall struct {
	name   string // what the call does, for the report
	method string // the sandbox.Engine method, to line it up with a trial's calls
	// oracle marks the oracle agent's own calls, which a nop trial does
	// not make: the report says what they add to the floor.
	oracle bool
}

// harborFloorCalls are the engine calls a Harbor-shape oracle trial cannot
// do without, in the order harborFloorOnce makes and times them.
var harborFloorCalls = []harborFloorCall{
	{"create + start (the image's entrypoint, keep-alive, no init, no network)", "Start", false},
	{"copy solution/ in", "CopyIn", true},
	{"exec solve.sh", "Exec", true},
	{"copy tests/ in", "CopyIn", false},
	{"exec test.sh (after `mkdir -p /logs/verifier`)", "Exec", false},
	{"copy the reward out", "CopyOut", false},
	{"remove (force)", "Remove", false},
}

// harborFloorOnce is the Harbor floor: one oracle trial of the Harbor
// task in Harbor's shape made directly through the engine API, with no
// flightdeck trial code around it — the container Harbor's compose service
// would be (the image's entrypoint with the keep-alive, no init, no
// network, the task's limits), solution/ copied in and solve.sh run,
// tests/ copied in and test.sh run, the reward copied out, the container
// removed. It returns each call's time, in harborFloorCalls order.
func (b *bench) harborFloorOnce(ctx context.Context) ([]time.Duration, error) {
	mem, err := b.harbor.MemoryBytes()
	if err != nil {
		return nil, err
	}
	out, err := os.MkdirTemp(b.ws.root, "harbor-floor-")
	if err != nil {
		return nil, fmt.Errorf("harbor floor: the reward's dir: %w", err)
	}
	defer os.RemoveAll(out)
	var id string
	defer func() {
		// A failed step leaves the container: remove it untimed.
		if id != "" {
			b.docker.Remove(context.WithoutCancel(ctx), id)
		}
	}()
	spec := sandbox.ContainerSpec{
		Image: b.harborImg.Ref, RunID: b.runID, TrialID: "harbor-floor", Workdir: harborWorkdir,
		NanoCPUs: b.harbor.NanoCPUs(), MemoryBytes: mem, KeepEntrypoint: true, NoInit: true,
	}
	steps := []func() error{
		func() error {
			c, err := b.docker.Start(ctx, spec)
			id = c.ID
			return err
		},
		func() error {
			return b.docker.CopyIn(ctx, id, b.harbor.Path("solution"), "/solution", sandbox.Owner{})
		},
		func() error { return b.execOK(ctx, id, "bash", "/solution/solve.sh") },
		func() error { return b.docker.CopyIn(ctx, id, b.harbor.Path("tests"), "/tests", sandbox.Owner{}) },
		func() error { return b.execOK(ctx, id, "bash", "-c", "mkdir -p /logs/verifier && bash /tests/test.sh") },
		func() error {
			return b.docker.CopyOut(ctx, id, "/logs/verifier/reward.txt", out, sandbox.CopyLimits{MaxBytes: 1 << 20})
		},
		func() error {
			err := b.docker.Remove(ctx, id)
			if err == nil {
				id = ""
			}
			return err
		},
	}
	took := make([]time.Duration, len(steps))
	for i, step := range steps {
		start := time.Now()
		err := step()
		took[i] = time.Since(start)
		if err != nil {
			return nil, fmt.Errorf("harbor floor, %s: %w", harborFloorCalls[i].name, err)
		}
	}
	return took, checkReward(filepath.Join(out, "reward.txt"))
}

// execOK runs cmd in the Harbor floor's container, in the work dir, with
// its output discarded, and fails unless it exits 0.
func (b *bench) execOK(ctx context.Context, id string, cmd ...string) error {
	res, err := b.docker.Exec(ctx, id, sandbox.ExecSpec{Cmd: cmd, Workdir: harborWorkdir})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("%v exited %d", cmd, res.ExitCode)
	}
	return nil
}

// checkReward fails unless the reward file says 1: a floor that graded
// nothing would time less than a trial must do.
func checkReward(path string) error {
	got, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("harbor floor: read the reward: %w", err)
	}
	if r := strings.TrimSpace(string(got)); r != "1" {
		return fmt.Errorf("harbor floor: reward %q, want 1", r)
	}
	return nil
}

// addHarborFloor records one Harbor floor: its calls' times in
// harborFloorCalls order.
func (f *trialFigures) addHarborFloor(took []time.Duration) {
	if f.harborFloorByCall == nil {
		f.harborFloorByCall = make([]samples, len(harborFloorCalls))
	}
	var total time.Duration
	for i, d := range took {
		f.harborFloorByCall[i] = append(f.harborFloorByCall[i], d.Seconds())
		total += d
	}
	f.harborFloor = append(f.harborFloor, total.Seconds())
}

// harborFloorMethods sums each Harbor floor's calls by engine method (its
// two CopyIns, its two Execs), so that they line up with a trial's calls,
// which the timed engine records by method.
func (f *trialFigures) harborFloorMethods() []callRow {
	var rows []callRow
	for i, c := range harborFloorCalls {
		j := slices.IndexFunc(rows, func(r callRow) bool { return r.method == c.method })
		if j < 0 {
			rows = append(rows, callRow{method: c.method, took: make(samples, len(f.harborFloor))})
			j = len(rows) - 1
		}
		rows[j].count++
		if i < len(f.harborFloorByCall) {
			for k, v := range f.harborFloorByCall[i] {
				if k < len(rows[j].took) {
					rows[j].took[k] += v
				}
			}
		}
	}
	return rows
}
