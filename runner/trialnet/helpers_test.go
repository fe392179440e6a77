package trialnet

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/runner/images"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/sandbox/sandboxtest"
	"github.com/flightdeck/flightdeck/tasks"
)

// recorder is the fake engine with the arguments of the network and
// volume calls kept (the fake records only that they were made); every
// other call goes to the fake.
type recorder struct {
	sandbox.Engine

	mu              sync.Mutex
	networks        []sandbox.NetworkSpec
	volumes         []string // "RUN TRIAL HINT"
	removedNetworks []string
	removedVolumes  []string
}

func (r *recorder) CreateNetwork(ctx context.Context, spec sandbox.NetworkSpec) (string, error) {
	r.mu.Lock()
	r.networks = append(r.networks, spec)
	r.mu.Unlock()
	return r.Engine.CreateNetwork(ctx, spec)
}

func (r *recorder) CreateVolume(ctx context.Context, runID, trialID, hint string) (string, error) {
	r.mu.Lock()
	r.volumes = append(r.volumes, runID+" "+trialID+" "+hint)
	r.mu.Unlock()
	return r.Engine.CreateVolume(ctx, runID, trialID, hint)
}

func (r *recorder) RemoveNetwork(ctx context.Context, name string) error {
	r.mu.Lock()
	r.removedNetworks = append(r.removedNetworks, name)
	r.mu.Unlock()
	return r.Engine.RemoveNetwork(ctx, name)
}

func (r *recorder) RemoveVolume(ctx context.Context, name string) error {
	r.mu.Lock()
	r.removedVolumes = append(r.removedVolumes, name)
	r.mu.Unlock()
	return r.Engine.RemoveVolume(ctx, name)
}

// harness is a trial as trialnet sees it, on the fake engine: its
// cleanups, phases, image uses and reports are kept for the test.
type harness struct {
	fake     *sandboxtest.Engine
	eng      *recorder
	trial    Trial
	cleanups []func(context.Context) error
	phases   []string
	touched  []string // the refs Images.Touch was given
	reports  []string // the image set's report lines
}

const (
	testRun   = "run-1"
	testTrial = "trial-1"
	testNet   = "flightdeck-net-" + testTrial // the fake's name for the trial's network
)

func newHarness(t *testing.T, task *tasks.Task) *harness {
	t.Helper()
	fake := sandboxtest.New(t.TempDir())
	h := &harness{fake: fake, eng: &recorder{Engine: fake}}
	set := images.New(h.eng, nil, t.TempDir(), 1, func(line string) { h.reports = append(h.reports, line) })
	set.Touch = func(img sandbox.Image) { h.touched = append(h.touched, img.Ref) }
	h.trial = Trial{
		Engine: h.eng, RunID: testRun, TrialID: testTrial, Task: task,
		Dir: t.TempDir(), Scratch: t.TempDir(), Images: set,
		Phase: func(name string) { h.phases = append(h.phases, name) },
		Defer: func(f func(context.Context) error) { h.cleanups = append(h.cleanups, f) },
		Remove: func(id string) func(context.Context) error {
			return func(ctx context.Context) error { return h.eng.Remove(ctx, id) }
		},
	}
	return h
}

// net is New's Net for the harness's trial, which must load.
func (h *harness) net(t *testing.T) *Net {
	t.Helper()
	n, err := New(h.trial)
	require.NoError(t, err)
	return n
}

// cleanup runs the registered cleanups as a trial's end does: last first,
// on a context its cancellation does not reach.
func (h *harness) cleanup(t *testing.T) {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	for i := len(h.cleanups) - 1; i >= 0; i-- {
		require.NoError(t, h.cleanups[i](ctx))
	}
	h.cleanups = nil
}

// callsSince are the fake's calls after the first n.
func (h *harness) callsSince(n int) []string { return h.fake.Calls()[n:] }

// network is a task.toml's network settings, each table's lines.
type network struct {
	env, agent, verifier string
}

// writeTask writes a Harbor task (its task.toml with net's lines, and
// compose as environment/docker-compose.yaml when it is not "", and
// files) and loads it as a local run does.
func writeTask(t *testing.T, net network, compose string, files map[string]string) *tasks.Task {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "svc")
	toml := "schema_version = \"1.4\"\n\n[task]\nname = \"flightdeck-tests/svc\"\n\n" +
		"[environment]\n" + net.env + "\n\n[agent]\ntimeout_sec = 60.0\n" + net.agent + "\n\n[verifier]\ntimeout_sec = 60.0\n" + net.verifier + "\n"
	all := map[string]string{
		"task.toml":              toml,
		"instruction.md":         "Write 42 into /app/answer.txt.\n",
		"environment/Dockerfile": "FROM " + images.Fallback + "\nWORKDIR /app\n",
		"tests/test.sh":          "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n",
		"solution/solve.sh":      "#!/bin/bash\necho 42 > /app/answer.txt\n",
	}
	if compose != "" {
		all["environment/docker-compose.yaml"] = compose
	}
	for rel, content := range files {
		all[rel] = content
	}
	for rel, content := range all {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o755))
	}
	task, err := tasks.Load(dir, tasks.LoadOptions{Local: true})
	require.NoError(t, err)
	return task
}

// serviceContainers are the fake's containers of compose services, by
// service, in the order they started.
func serviceContainers(fake *sandboxtest.Engine) ([]string, map[string]*sandboxtest.Container) {
	var order []string
	by := map[string]*sandboxtest.Container{}
	for _, c := range fake.Containers() {
		if name := c.Spec.Labels[labelService]; name != "" {
			order = append(order, name)
			by[name] = c
		}
	}
	return order, by
}

// egressContainer is the fake's egress gateway; nil without one.
func egressContainer(fake *sandboxtest.Engine) *sandboxtest.Container {
	for _, c := range fake.Containers() {
		if c.Phase() == "egress" {
			return c
		}
	}
	return nil
}

// egressModes are the modes and hosts egress.sh was run with in the
// gateway, in order: "MODE HOST...".
func egressModes(c *sandboxtest.Container) []string {
	var out []string
	for _, e := range c.Execs {
		if len(e.Cmd) >= 5 && e.Cmd[3] == "egress.sh" {
			out = append(out, strings.Join(e.Cmd[4:], " "))
		}
	}
	return out
}
