package sandbox

import (
	"context"
	"sort"
	"testing"

	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseUpper(t *testing.T) {
	entries := []string{"/.pivot_root123", "/etc", "/etc/new.conf", "/etc/.wh.issue", "/opt", "/opt/.wh..wh..opq",
		"/opt/a/.wh..opq", "/tmp/two\nlines"}
	out := ""
	for _, e := range entries {
		out += upperMount + e + "\x00"
	}
	assert.Equal(t, []Change{{"/etc", "C"}, {"/etc/new.conf", "C"}, {"/etc/issue", "D"}, {"/opt", "C"}, {"/tmp/two\nlines", "C"}},
		parseUpper(out))
}

// ChangedPaths, read from the writable layer, names the paths the engine's
// own diff names, for a stopped container.
func TestChangesAgreeWithTheEngine(t *testing.T) {
	d := newTestEngine(t)
	requireBaseImage(t, d)
	ctx := context.Background()
	c, err := d.Start(ctx, ContainerSpec{Image: baseImage, Name: "changes", RunID: "test-changes", TrialID: "t1", NoInit: true, KeepEntrypoint: true})
	require.NoError(t, err)
	t.Cleanup(func() { d.Remove(context.Background(), c.ID) })
	res, err := d.Exec(ctx, c.ID, ExecSpec{Cmd: []string{"bash", "-c", "touch /etc/new.conf && rm /etc/issue && mkdir -p /opt/a/b && echo x > /opt/a/b/f && rm -rf /usr/share/doc/bash && touch $'/tmp/two\\nlines'"}, User: "0"})
	require.NoError(t, err)
	require.Zero(t, res.ExitCode)
	// Stopped, started again and stopped, as an agent's timeout and the
	// verifier have it: the runtime leaves its own entries in the layer.
	require.NoError(t, d.Stop(ctx, c.ID))
	require.NoError(t, d.Restart(ctx, c.ID))
	require.NoError(t, d.Stop(ctx, c.ID))

	have, err := d.ChangedPaths(ctx, c.ID)
	require.NoError(t, err)
	engine, err := d.api.ContainerDiff(ctx, c.ID, client.ContainerDiffOptions{})
	require.NoError(t, err)
	var want []string
	for _, e := range engine.Changes {
		want = append(want, e.Path)
	}
	sort.Strings(want)
	sort.Strings(have)
	assert.Equal(t, want, have)
	assert.Contains(t, have, "/opt/a/b/f")
	assert.Contains(t, have, "/tmp/two\nlines", "a name with a newline is one path")
}
