package registry

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultCacheDir(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	d, err := DefaultCacheDir(env(map[string]string{"HOME": "/home/u"}))
	require.NoError(t, err)
	assert.Equal(t, "/home/u/.cache/flightdeck/tasks", d)
	d, err = DefaultCacheDir(env(map[string]string{"HOME": "/home/u", "XDG_CACHE_HOME": "/xdg"}))
	require.NoError(t, err)
	assert.Equal(t, "/xdg/flightdeck/tasks", d)
	d, err = DefaultCacheDir(env(map[string]string{"HOME": "/home/u", "XDG_CACHE_HOME": "relative"}))
	require.NoError(t, err)
	assert.Equal(t, "/home/u/.cache/flightdeck/tasks", d, "a relative XDG_CACHE_HOME is ignored, as the spec says")
	d, err = DefaultCacheDir(env(map[string]string{"XDG_CACHE_HOME": "/xdg", cacheDirEnv: "/mine"}))
	require.NoError(t, err)
	assert.Equal(t, "/mine", d)
}

// A dataset path that is missing says so; one that is there but cannot be
// read says why, not "no such directory". (A permission error needs a
// user other than root; a path through a file is the same branch.)
func TestDatasetTaskDirsUnreadable(t *testing.T) {
	dir := t.TempDir()
	_, err := DatasetTaskDirs(filepath.Join(dir, "nowhere"))
	require.EqualError(t, err, "no such directory")
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	_, err = DatasetTaskDirs(filepath.Join(file, "ds"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot be read: ")
	assert.Contains(t, err.Error(), "not a directory")
	if os.Getuid() != 0 {
		locked := filepath.Join(dir, "locked")
		require.NoError(t, os.MkdirAll(filepath.Join(locked, "ds"), 0o755))
		require.NoError(t, os.Chmod(locked, 0))
		t.Cleanup(func() { os.Chmod(locked, 0o755) })
		_, err = DatasetTaskDirs(filepath.Join(locked, "ds"))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "permission denied")
	}
}
