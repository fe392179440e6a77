package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/stretchr/testify/require"
)

// baseImage is the offline image test images build from.
const baseImage = "flightdeck/base:bookworm"

// testLabel is LabelTest on what these tests create.
const testLabel = "go-test"

// newTestEngine connects to the engine, skipping the test when there is
// none unless FLIGHTDECK_REQUIRE_DOCKER=1.
func newTestEngine(t testing.TB) *Docker {
	t.Helper()
	if testing.Short() {
		t.Skip("-short touches no engine")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := New(ctx)
	if err != nil {
		if os.Getenv("FLIGHTDECK_REQUIRE_DOCKER") == "1" {
			t.Fatalf("FLIGHTDECK_REQUIRE_DOCKER=1 but: %v", err)
		}
		t.Skipf("no Docker engine: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// requireBaseImage fails the test with what to do when the base image is
// missing.
func requireBaseImage(t testing.TB, d *Docker) {
	t.Helper()
	if _, err := d.InspectImage(context.Background(), baseImage); err != nil {
		t.Fatalf("%s is missing (%v): run `make base-image`", baseImage, err)
	}
}

// testRunID is a run id unique to the test; everything labelled with it
// is reaped when the test ends.
func testRunID(t testing.TB, d *Docker) string {
	t.Helper()
	run := "test-" + randomHex(6)
	t.Cleanup(func() {
		if _, err := d.Reap(context.Background(), ReapOptions{RunID: run}); err != nil {
			t.Errorf("reap %s: %v", run, err)
		}
	})
	return run
}

// startBase starts a container of the base image for the test.
func startBase(t testing.TB, d *Docker, spec ContainerSpec) Container {
	t.Helper()
	requireBaseImage(t, d)
	if spec.Image == "" {
		spec.Image = baseImage
	}
	if spec.RunID == "" {
		spec.RunID = testRunID(t, d)
	}
	if spec.TrialID == "" {
		spec.TrialID = strings.ReplaceAll(t.Name(), "/", "-")
	}
	c, err := d.Start(context.Background(), spec)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Remove(context.Background(), c.ID) })
	return c
}

// run execs a shell command and returns its exit code and combined output.
func run(t testing.TB, d *Docker, id, script string, opts ...func(*ExecSpec)) (ExecResult, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	spec := ExecSpec{Cmd: []string{"bash", "-c", script}, StdoutPath: out}
	for _, o := range opts {
		o(&spec)
	}
	res, err := d.Exec(context.Background(), id, spec)
	require.NoError(t, err)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	return res, string(data)
}

// testImageName is a task name unique to the test, so its images are its own.
func testImageName(t testing.TB) string {
	return "test-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")) + "-" + randomHex(3)
}

// removeImageAfter removes an image when the test ends.
func removeImageAfter(t testing.TB, d *Docker, ref string) {
	t.Cleanup(func() {
		if err := d.RemoveImage(context.Background(), ref); err != nil {
			t.Errorf("remove image %s: %v", ref, err)
		}
	})
}

func listAll() client.ContainerListOptions { return client.ContainerListOptions{All: true} }
