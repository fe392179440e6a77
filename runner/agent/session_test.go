package agent

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/sandbox/sandboxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// execEngine is a fake engine with one container, "c1", whose every exec
// runs run.
func execEngine(t *testing.T, run func(spec sandbox.ExecSpec) (sandbox.ExecResult, error)) (*sandboxtest.Engine, string) {
	t.Helper()
	e := sandboxtest.New(t.TempDir())
	e.Run = func(_ context.Context, _ *sandboxtest.Container, spec sandbox.ExecSpec) (sandbox.ExecResult, error) {
		return run(spec)
	}
	c, err := e.Start(context.Background(), sandbox.ContainerSpec{})
	require.NoError(t, err)
	return e, c.ID
}

// colourEngine runs every exec as a command that colours its output.
func colourEngine(t *testing.T, output string) (*sandboxtest.Engine, string) {
	return execEngine(t, func(spec sandbox.ExecSpec) (sandbox.ExecResult, error) {
		if err := os.WriteFile(spec.StdoutPath, []byte(output), 0o644); err != nil {
			return sandbox.ExecResult{}, err
		}
		return sandbox.ExecResult{ExitCode: 1}, nil
	})
}

func TestAgentLogIsText(t *testing.T) {
	dir := t.TempDir()
	eng, id := colourEngine(t, "\x1b[32m✓ passed\x1b[0m\n\x1b[31m✗ fail\x1b]0;unterminated title")
	a := &Session{
		Engine:    eng,
		Container: id,
		LogPath:   filepath.Join(dir, "agent.log"),
		Scratch:   dir,
	}
	// A sequence left open by one command ends with it: the next header
	// stays whole.
	for range 2 {
		res, failed, err := a.exec(context.Background(), "command: make \x1b[1mtest\x1b[0m", []string{"make"}, nil, "")
		require.NoError(t, err)
		require.Empty(t, failed)
		assert.Equal(t, 1, res.ExitCode)
	}
	require.NoError(t, a.note("\x1b[33mnote\x1b[0m\n"))

	log, err := os.ReadFile(a.LogPath)
	require.NoError(t, err)
	one := "=== command: make test\n✓ passed\n✗ fail=== exit 1, 0.0s\n"
	assert.Equal(t, one+one+"note\n", string(log))
}

// The seed trajectory is written beside the instruction, readable by any
// user; the Harbor logs dir stays writable by the agent.
func TestSeedTrajectoryBesideTheInstruction(t *testing.T) {
	scratch := t.TempDir()
	m, err := InstructionMount(scratch, "do it", []byte(`{"a":1}`))
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(m.HostPath, SeedTrajectory))
	require.NoError(t, err)
	assert.Equal(t, `{"a":1}`, string(b))

	logs := filepath.Join(t.TempDir(), "agent")
	_, err = InstructionFile(logs, "do it", []byte(`{"a":2}`))
	require.NoError(t, err)
	ref := filepath.Join(t.TempDir(), "ref")
	require.NoError(t, os.MkdirAll(ref, 0o777))
	fi, err := os.Stat(logs)
	require.NoError(t, err)
	refInfo, err := os.Stat(ref)
	require.NoError(t, err)
	assert.Equal(t, refInfo.Mode().Perm(), fi.Mode().Perm(), "the logs dir keeps the mode it was made with")
	fi, err = os.Stat(filepath.Join(logs, SeedTrajectory))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm())

	none := t.TempDir()
	m, err = InstructionMount(none, "do it", nil)
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(m.HostPath, SeedTrajectory))
	assert.ErrorIs(t, err, os.ErrNotExist, "no trajectory, no file")
}
