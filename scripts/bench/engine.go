package main

import (
	"context"
	"io/fs"
	"sync"
	"time"

	"github.com/flightdeck/flightdeck/sandbox"
)

// phaseLabel is the label the runner and the grader put on their containers
// ("seed", "agent", "grade").
const phaseLabel = "flightdeck.phase"

// call is one timed engine call.
type call struct {
	Trial  string // the trial of the container it concerns; "" when none
	Phase  string // that container's phase label
	Method string
	At     time.Time // when it started
	Took   time.Duration
}

// timedEngine is an Engine that records how long each call takes and which
// trial and container phase it was for, so a trial's wall-clock time can
// be split by engine call.
type timedEngine struct {
	sandbox.Engine

	mu         sync.Mutex
	containers map[string][2]string // container ID → trial, phase
	calls      []call
}

func newTimedEngine(e sandbox.Engine) *timedEngine {
	return &timedEngine{Engine: e, containers: map[string][2]string{}}
}

func (e *timedEngine) record(id, method string, start time.Time) {
	took := time.Since(start)
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.containers[id]
	e.calls = append(e.calls, call{Trial: c[0], Phase: c[1], Method: method, At: start, Took: took})
}

// take returns the calls recorded so far and forgets them.
func (e *timedEngine) take() []call {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.calls
	e.calls = nil
	return out
}

func (e *timedEngine) Start(ctx context.Context, spec sandbox.ContainerSpec) (sandbox.Container, error) {
	t0 := time.Now()
	c, err := e.Engine.Start(ctx, spec)
	took := time.Since(t0)
	e.mu.Lock()
	if c.ID != "" {
		e.containers[c.ID] = [2]string{spec.TrialID, spec.Labels[phaseLabel]}
	}
	e.calls = append(e.calls, call{Trial: spec.TrialID, Phase: spec.Labels[phaseLabel], Method: "Start", At: t0, Took: took})
	e.mu.Unlock()
	return c, err
}

func (e *timedEngine) Exec(ctx context.Context, id string, spec sandbox.ExecSpec) (sandbox.ExecResult, error) {
	defer e.record(id, "Exec", time.Now())
	return e.Engine.Exec(ctx, id, spec)
}

func (e *timedEngine) CopyIn(ctx context.Context, id, hostDir, dir string, owner sandbox.Owner) error {
	defer e.record(id, "CopyIn", time.Now())
	return e.Engine.CopyIn(ctx, id, hostDir, dir, owner)
}

func (e *timedEngine) WriteFiles(ctx context.Context, id, dir string, files []sandbox.File, owner sandbox.Owner) error {
	defer e.record(id, "WriteFiles", time.Now())
	return e.Engine.WriteFiles(ctx, id, dir, files, owner)
}

func (e *timedEngine) CopyOut(ctx context.Context, id, path, hostDir string, limits sandbox.CopyLimits) error {
	defer e.record(id, "CopyOut", time.Now())
	return e.Engine.CopyOut(ctx, id, path, hostDir, limits)
}

func (e *timedEngine) State(ctx context.Context, id string) (sandbox.State, error) {
	defer e.record(id, "State", time.Now())
	return e.Engine.State(ctx, id)
}

func (e *timedEngine) Stop(ctx context.Context, id string) error {
	defer e.record(id, "Stop", time.Now())
	return e.Engine.Stop(ctx, id)
}

func (e *timedEngine) HandBack(ctx context.Context, id, path string, owner sandbox.Owner) error {
	defer e.record(id, "HandBack", time.Now())
	return e.Engine.HandBack(ctx, id, path, owner)
}

func (e *timedEngine) Remove(ctx context.Context, id string) error {
	defer e.record(id, "Remove", time.Now())
	return e.Engine.Remove(ctx, id)
}

func (e *timedEngine) InspectImage(ctx context.Context, ref string) (sandbox.ImageInfo, error) {
	defer e.record("", "InspectImage", time.Now())
	return e.Engine.InspectImage(ctx, ref)
}

func (e *timedEngine) EnsureImage(ctx context.Context, spec sandbox.BuildSpec) (sandbox.Image, error) {
	defer e.record("", "EnsureImage", time.Now())
	return e.Engine.EnsureImage(ctx, spec)
}

func (e *timedEngine) Preflight(ctx context.Context) (sandbox.Info, error) {
	defer e.record("", "Preflight", time.Now())
	return e.Engine.Preflight(ctx)
}

func (e *timedEngine) Reap(ctx context.Context, opts sandbox.ReapOptions) (sandbox.Reaped, error) {
	defer e.record("", "Reap", time.Now())
	return e.Engine.Reap(ctx, opts)
}

func (e *timedEngine) Killed(ctx context.Context, id string) (bool, error) {
	defer e.record(id, "Killed", time.Now())
	return e.Engine.Killed(ctx, id)
}

// The calls of Harbor's container model (runner/trial/shared.go): the live
// container's processes, its events, a restart, its logs, its network,
// and the snapshot grade's diff and commit.

func (e *timedEngine) KilledSince(ctx context.Context, id string, since time.Time) (bool, error) {
	defer e.record(id, "KilledSince", time.Now())
	return e.Engine.KilledSince(ctx, id, since)
}

func (e *timedEngine) Restart(ctx context.Context, id string) error {
	defer e.record(id, "Restart", time.Now())
	return e.Engine.Restart(ctx, id)
}

func (e *timedEngine) Logs(ctx context.Context, id, path string, max int64) error {
	defer e.record(id, "Logs", time.Now())
	return e.Engine.Logs(ctx, id, path, max)
}

func (e *timedEngine) Changes(ctx context.Context, id string) ([]sandbox.Change, error) {
	defer e.record(id, "Changes", time.Now())
	return e.Engine.Changes(ctx, id)
}

func (e *timedEngine) Processes(ctx context.Context, id string) ([]sandbox.Process, error) {
	defer e.record(id, "Processes", time.Now())
	return e.Engine.Processes(ctx, id)
}

// ChangedPaths and StatPath are tamper inspection's and artifact
// collection's: a Harbor trial's calls by method would miss them otherwise.

func (e *timedEngine) ChangedPaths(ctx context.Context, id string) ([]string, error) {
	defer e.record(id, "ChangedPaths", time.Now())
	return e.Engine.ChangedPaths(ctx, id)
}

func (e *timedEngine) StatPath(ctx context.Context, id, path string) (fs.FileMode, error) {
	defer e.record(id, "StatPath", time.Now())
	return e.Engine.StatPath(ctx, id, path)
}

func (e *timedEngine) PeakMemory(ctx context.Context, id string) (int64, error) {
	defer e.record(id, "PeakMemory", time.Now())
	return e.Engine.PeakMemory(ctx, id)
}

func (e *timedEngine) SetNetwork(ctx context.Context, id string, on bool) error {
	defer e.record(id, "SetNetwork", time.Now())
	return e.Engine.SetNetwork(ctx, id, on)
}

func (e *timedEngine) Commit(ctx context.Context, id string, labels map[string]string) (string, error) {
	defer e.record(id, "Commit", time.Now())
	return e.Engine.Commit(ctx, id, labels)
}
