package agent

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/internal/testenv"
	"github.com/flightdeck/flightdeck/runner/secrets"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/sandbox/sandboxtest"
)

const testSecret = "sk-test-secret-0123"

// pieceEngine writes each exec's output through the spec's filter in the
// pieces given, as the engine's stream arrives.
func pieceEngine(t *testing.T, pieces ...string) (*sandboxtest.Engine, string) {
	return execEngine(t, func(spec sandbox.ExecSpec) (sandbox.ExecResult, error) {
		f, err := os.Create(spec.StdoutPath)
		if err != nil {
			return sandbox.ExecResult{}, err
		}
		defer f.Close()
		var w io.WriteCloser = nopCloser{f}
		if spec.Filter != nil {
			w = spec.Filter(f)
		}
		for _, p := range pieces {
			if _, err := io.WriteString(w, p); err != nil {
				return sandbox.ExecResult{}, err
			}
		}
		return sandbox.ExecResult{}, w.Close()
	})
}

// A session with a Mask masks each command's output file and agent.log:
// a secret split across the stream's pieces, one in the command line, and
// one an escape sequence cuts in two (which the log's stripping joins).
func TestSessionMasksSecrets(t *testing.T) {
	dir := t.TempDir()
	eng, id := pieceEngine(t, "using sk-test-se", "cret-0123 now\n", "coloured sk-test-\x1b[1msecret-0123\n")
	a := &Session{
		Engine:    eng,
		Container: id, LogPath: filepath.Join(dir, "agent.log"), Scratch: dir,
		Mask: secrets.NewRedactor(testSecret).Writer,
	}
	_, _, err := a.exec(context.Background(), "command: run --key "+testSecret, []string{"run"}, nil, "")
	require.NoError(t, err)
	require.NoError(t, a.note("noted "+testSecret+"\n"))

	out, err := os.ReadFile(filepath.Join(dir, "exec-1.log"))
	require.NoError(t, err)
	assert.Equal(t, "using [REDACTED] now\ncoloured sk-test-\x1b[1msecret-0123\n", string(out), "the raw output, masked as it came")
	log, err := os.ReadFile(a.LogPath)
	require.NoError(t, err)
	assert.Equal(t, "=== command: run --key [REDACTED]\nusing [REDACTED] now\ncoloured [REDACTED]\n=== exit 0, 0.0s\nnoted [REDACTED]\n", string(log))
}

// On the real engine, a command that prints a secret again and again, cut
// across writes, never has it in its output file: the file is read all
// the while the command runs.
func TestExecOutputMaskedAsItIsWritten(t *testing.T) {
	eng := testenv.Engine(t)
	ctx := context.Background()
	c, err := eng.Start(ctx, sandbox.ContainerSpec{Image: testenv.BaseImage, RunID: "mask-test", TrialID: "mask"})
	t.Cleanup(func() {
		if c.ID != "" {
			eng.Remove(context.Background(), c.ID)
		}
	})
	require.NoError(t, err)

	dir := t.TempDir()
	out := filepath.Join(dir, "out.log")
	var seen atomic.Bool
	done := make(chan struct{})
	polled := make(chan int)
	go func() {
		n := 0
		defer func() { polled <- n }()
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if data, err := os.ReadFile(out); err == nil && len(data) > 0 {
				n++
				if strings.Contains(string(data), testSecret) {
					seen.Store(true)
				}
			}
		}
	}()
	script := `for i in $(seq 1 40); do printf 'line %s sk-test-' $i; sleep 0.02; printf 'secret-0123\n'; done`
	res, err := eng.Exec(ctx, c.ID, sandbox.ExecSpec{Cmd: []string{"bash", "-c", script}, StdoutPath: out,
		Filter: secrets.NewRedactor(testSecret).Writer, Timeout: time.Minute})
	close(done)
	reads := <-polled
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)
	assert.False(t, seen.Load(), "the secret was in the output file while the command ran")
	assert.Greater(t, reads, 5, "the file was read while the command ran")
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.NotContains(t, string(data), testSecret)
	assert.Equal(t, 40, strings.Count(string(data), "[REDACTED]\n"))
}
