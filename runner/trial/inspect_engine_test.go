package trial

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/internal/testenv"
	"github.com/flightdeck/flightdeck/runner/images"
	"github.com/flightdeck/flightdeck/runner/tamper"
	"github.com/flightdeck/flightdeck/sandbox"
)

// The inspector's list from the container's writable layer is the list
// its walk of the whole filesystem makes: the same changes after the
// agent began (a new file, a tool, a symlink, a changed mode, a change to
// a file mounted into the container), and none of what neither lists (a
// deleted file, a change before, in the work dir, in a tree left
// unwalked, inside a mounted directory). A layer it cannot read is
// walked around: the whole filesystem is, and the list is the same.
func TestInspectListFromLayer(t *testing.T) {
	testenv.Short(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	eng, err := sandbox.NewWithOptions(ctx, sandbox.Options{Test: "trial-inspect"})
	if err != nil {
		testenv.Missing(t, "no Docker engine: %v", err)
	}
	defer eng.Close()
	host := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(host, "startup.sh"), []byte("# mounted\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(host, "dir"), 0o755))
	start := func(spec sandbox.ContainerSpec) string {
		c, err := eng.Start(ctx, spec)
		if c.ID != "" {
			t.Cleanup(func() { eng.Remove(context.Background(), c.ID) })
		}
		require.NoError(t, err)
		return c.ID
	}
	target := start(sandbox.ContainerSpec{Image: images.Fallback, Name: "inspect-target", Workdir: "/app", NoInit: true,
		Mounts: []sandbox.Mount{
			{HostPath: filepath.Join(host, "startup.sh"), ContainerPath: "/etc/profile.d/mounted.sh"},
			{HostPath: filepath.Join(host, "dir"), ContainerPath: "/mnt/dir"},
		}})
	inspector := start(sandbox.ContainerSpec{Image: images.Fallback, Name: "inspect-inspector", HostPID: true,
		ReadLayers: true, NoInit: true})
	sh := func(script string) string {
		out := filepath.Join(t.TempDir(), "out")
		res, err := eng.Exec(ctx, target, sandbox.ExecSpec{Cmd: []string{"sh", "-c", script}, StdoutPath: out})
		require.NoError(t, err)
		got, _ := os.ReadFile(out)
		require.Equal(t, 0, res.ExitCode, "%s: %s", script, got)
		return strings.TrimSpace(string(got))
	}
	sh("echo before > /etc/changed-before && echo before > /usr/local/bin/before-tool")
	time.Sleep(1100 * time.Millisecond) // change times have the file system's grain
	since := sh("date +%s.%N")
	time.Sleep(100 * time.Millisecond)
	sh(`set -e
printf '#!/bin/sh\n' > /usr/local/bin/fake-tool && chmod 755 /usr/local/bin/fake-tool
ln -s /bin/true /usr/local/bin/linked
chmod 600 /etc/profile
rm /etc/issue
mkdir -p /opt/new/deep && touch /opt/new/deep/file
mkdir -p /tests && echo x > /tests/conftest.py
echo '# added' >> /etc/profile.d/mounted.sh
echo inside > /mnt/dir/file
echo work > /app/answer.txt
echo unwalked > /usr/share/unwalked
touch /tmp/gone && rm /tmp/gone`)

	st, err := eng.State(ctx, target)
	require.NoError(t, err)
	require.NotEmpty(t, st.Layer, "an overlay storage driver keeps the container's writable layer in a store of its own")
	list := func(layer string) []string {
		out := filepath.Join(t.TempDir(), "out")
		var env []string
		if layer != "" {
			env = []string{"INSPECT_LAYER=" + layer}
		}
		cmd := append([]string{"bash", "-c", inspectScript, "inspect.sh", strconv.Itoa(st.Pid), "list", since, "/app"}, tamper.Unwalked(nil)...)
		res, err := eng.Exec(ctx, inspector, sandbox.ExecSpec{Cmd: cmd, Env: env, User: "0", StdoutPath: out})
		require.NoError(t, err)
		require.Equal(t, 0, res.ExitCode)
		got, err := os.ReadFile(out)
		require.NoError(t, err)
		var paths []string
		for _, c := range parseChanges(got) {
			paths = append(paths, string(c.Type)+" "+c.Path)
		}
		slices.Sort(paths)
		return paths
	}
	want := []string{"f /etc/profile", "f /etc/profile.d/mounted.sh", "f /opt/new/deep/file", "f /tests/conftest.py",
		"f /usr/local/bin/fake-tool", "l /usr/local/bin/linked"}
	assert.Equal(t, want, list(""), "the walk of the whole filesystem")
	assert.Equal(t, want, list(st.Layer), "the writable layer")
	assert.Equal(t, want, list(sandbox.LayersDir+"/no-such-layer"), "a layer that is not there: the walk")
}
