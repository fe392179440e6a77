package sandbox

import (
	"context"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Killed tells a container stopped through the engine from one stopped by
// its own processes, which the engine's state alone does not.
func TestKilled(t *testing.T) {
	d := newTestEngine(t)
	ctx := context.Background()
	stopped := func(t *testing.T, id string) {
		t.Helper()
		require.Eventually(t, func() bool {
			st, err := d.State(ctx, id)
			return err == nil && !st.Running
		}, time.Minute, 50*time.Millisecond, "the container did not stop")
	}
	tests := []struct {
		name   string
		stop   func(t *testing.T, id string)
		killed bool
	}{
		{"still running", func(*testing.T, string) {}, false},
		{"its keep-alive killed from within", func(t *testing.T, id string) {
			_, err := d.Exec(ctx, id, ExecSpec{Cmd: []string{"sh", "-c", "kill -9 $(pgrep -x sleep); sleep 5"}})
			assert.ErrorIs(t, err, ErrContainerGone)
			stopped(t, id)
		}, false},
		{"killed through the engine", func(t *testing.T, id string) {
			_, err := d.api.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "KILL"})
			require.NoError(t, err)
			stopped(t, id)
		}, true},
		{"stopped through the engine", func(t *testing.T, id string) {
			timeout := 1
			_, err := d.api.ContainerStop(ctx, id, client.ContainerStopOptions{Timeout: &timeout})
			require.NoError(t, err)
			stopped(t, id)
		}, true},
		{"removed", func(t *testing.T, id string) {
			require.NoError(t, d.Remove(ctx, id))
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := startBase(t, d, ContainerSpec{})
			tt.stop(t, c.ID)
			killed, err := d.Killed(ctx, c.ID)
			require.NoError(t, err)
			assert.Equal(t, tt.killed, killed)
		})
	}
}
