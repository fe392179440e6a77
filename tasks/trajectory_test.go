package tasks

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A seed trajectory beside instruction.md is part of the task's digest
// and read back as it is; a task without one keeps its digest.
func TestTrajectoryIsPartOfTheTask(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "answer")
	require.NoError(t, os.CopyFS(dir, os.DirFS(filepath.Join("..", "fixtures", "runner", "answer"))))
	before, err := TaskDigest(dir)
	require.NoError(t, err)
	task, err := Load(dir, LoadOptions{Local: true})
	require.NoError(t, err)
	got, err := task.Trajectory()
	require.NoError(t, err)
	assert.Nil(t, got, "no trajectory.json: none")

	require.NoError(t, os.WriteFile(filepath.Join(dir, TrajectoryFile), []byte(`{"steps": []}`+"\n"), 0o644))
	with, err := TaskDigest(dir)
	require.NoError(t, err)
	assert.NotEqual(t, before, with, "trajectory.json is part of the digest")
	task, err = Load(dir, LoadOptions{Local: true})
	require.NoError(t, err)
	got, err = task.Trajectory()
	require.NoError(t, err)
	assert.Equal(t, `{"steps": []}`+"\n", string(got))

	require.NoError(t, os.WriteFile(filepath.Join(dir, TrajectoryFile), []byte("steps:\n"), 0o644))
	_, err = Load(dir, LoadOptions{Local: true})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "trajectory.json")
	assert.Contains(t, err.Error(), "is not JSON")
}
