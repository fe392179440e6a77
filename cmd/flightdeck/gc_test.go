package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/internal/testenv"
	"github.com/flightdeck/flightdeck/sandbox"
)

func gc(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = runGC(context.Background(), &cliEnv{stdout: &out, stderr: &errOut, cwd: t.TempDir()}, args)
	return code, out.String(), errOut.String()
}

func TestGCFlags(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"help", []string{"--help"}, exitOK, "Usage: flightdeck gc [--all] [--images] [--run ID]", ""},
		{"unknown flag", []string{"--nope"}, exitUsage, "", "unknown flag: --nope"},
		{"arguments", []string{"extra"}, exitUsage, "", "gc takes no arguments"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := gc(t, tc.args...)
			assert.Equal(t, tc.code, code)
			assert.Contains(t, stdout, tc.stdout)
			assert.Contains(t, stderr, tc.stderr)
		})
	}
}

func TestGCWithoutEngine(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	code, _, stderr := gc(t)
	assert.Equal(t, exitInfra, code, "an engine that does not answer is the infrastructure's failure")
	assert.Contains(t, stderr, "DOCKER_HOST")
	assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
}

func TestGCSummary(t *testing.T) {
	assert.Equal(t, "gc: removed 2 containers, 1 image", gcSummary(sandbox.Reaped{Containers: 2, Images: 1}, false))
	assert.Contains(t, gcSummary(sandbox.Reaped{}, false), "--all removes them too")
	assert.Equal(t, "gc: nothing to remove", gcSummary(sandbox.Reaped{}, true))
}

// gcEngine connects to the engine for a gc test, skipping without one
// unless FLIGHTDECK_REQUIRE_DOCKER=1, and needs the base image.
func gcEngine(t *testing.T) *sandbox.Docker {
	t.Helper()
	return testenv.Engine(t)
}

func gcRunID(t *testing.T, eng *sandbox.Docker) string {
	run := fmt.Sprintf("gc-test-%d", time.Now().UnixNano())
	t.Cleanup(func() { _, _ = eng.Reap(context.Background(), sandbox.ReapOptions{RunID: run, TaskImages: true}) })
	return run
}

// TestGCChildProcess is not a test on its own: the gc test runs the test
// binary with FLIGHTDECK_GC_CHILD_RUN set, to play a trial killed midway.
func TestGCChildProcess(t *testing.T) {
	run := os.Getenv("FLIGHTDECK_GC_CHILD_RUN")
	if run == "" {
		t.Skip("runs only as the child of TestGCRemovesWhatAKilledRunLeft")
	}
	eng, err := sandbox.New(context.Background())
	require.NoError(t, err)
	c, err := eng.Start(context.Background(), sandbox.ContainerSpec{Image: "flightdeck/base:bookworm", RunID: run, TrialID: "killed"})
	require.NoError(t, err)
	fmt.Println("ready", c.ID)
	time.Sleep(10 * time.Minute)
}

func TestGCRemovesWhatAKilledRunLeft(t *testing.T) {
	eng := gcEngine(t)
	run := gcRunID(t, eng)
	child := exec.Command(os.Args[0], "-test.run=^TestGCChildProcess$", "-test.v")
	child.Env = append(os.Environ(), "FLIGHTDECK_GC_CHILD_RUN="+run)
	out, err := child.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	var id string
	scanner := bufio.NewScanner(out)
	for scanner.Scan() {
		if rest, ok := strings.CutPrefix(scanner.Text(), "ready "); ok {
			id = rest
			break
		}
	}
	require.NotEmpty(t, id, "the child did not start its container")

	code, stdout, stderr := gc(t, "--run", run)
	assert.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "nothing to remove", "the owner is alive")

	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	_ = child.Wait()
	code, stdout, stderr = gc(t, "--run", run)
	assert.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "removed container flightdeck-killed-")
	assert.Contains(t, stdout, "gc: removed 1 container")
	st, err := eng.State(context.Background(), id)
	require.NoError(t, err)
	assert.True(t, st.Missing)
}

func TestGCAllAndImages(t *testing.T) {
	eng := gcEngine(t)
	ctx := context.Background()
	run := gcRunID(t, eng)
	c, err := eng.Start(ctx, sandbox.ContainerSpec{Image: "flightdeck/base:bookworm", RunID: run, TrialID: "live"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = eng.Remove(ctx, c.ID) })
	env := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(env, "Dockerfile"), []byte("FROM flightdeck/base:bookworm\nLABEL x="+run+"\n"), 0o644))
	img, err := eng.EnsureImage(ctx, sandbox.BuildSpec{Name: "gc-test", ContextDir: env, Labels: map[string]string{sandbox.LabelRun: run}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = eng.RemoveImage(ctx, img.Ref) })

	code, stdout, _ := gc(t, "--run", run)
	assert.Equal(t, exitOK, code)
	assert.Contains(t, stdout, "nothing to remove", "a live process's container is kept")

	code, stdout, _ = gc(t, "--all", "--run", run)
	assert.Equal(t, exitOK, code)
	assert.Contains(t, stdout, "removed container flightdeck-live-")
	assert.NotContains(t, stdout, "removed image", "task images stay without --images")

	code, stdout, _ = gc(t, "--all", "--images", "--run", run)
	assert.Equal(t, exitOK, code)
	assert.Contains(t, stdout, "removed image "+img.Ref)
	_, err = eng.InspectImage(ctx, img.Ref)
	assert.ErrorIs(t, err, sandbox.ErrNoSuchImage)
}
