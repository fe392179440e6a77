package files

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

func TestCopyTree(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	write(t, filepath.Join(src, "a/b/run.sh"), "#!/bin/sh\n")
	require.NoError(t, os.Chmod(filepath.Join(src, "a/b/run.sh"), 0o755))
	write(t, filepath.Join(src, "ro/file"), "x")
	require.NoError(t, os.Chmod(filepath.Join(src, "ro"), 0o555))
	t.Cleanup(func() { os.Chmod(filepath.Join(src, "ro"), 0o755); os.Chmod(filepath.Join(dst, "ro"), 0o755) })
	require.NoError(t, os.Symlink("/usr/bin/python3", filepath.Join(src, "a/python")))
	// What dst has of the same names is replaced.
	write(t, filepath.Join(dst, "a/b/run.sh"), "old")
	require.NoError(t, os.Symlink("/elsewhere", filepath.Join(dst, "a/python")))

	require.NoError(t, CopyTree(src, dst))
	link, err := os.Readlink(filepath.Join(dst, "a/python"))
	require.NoError(t, err)
	assert.Equal(t, "/usr/bin/python3", link, "links are copied as links")
	fi, err := os.Stat(filepath.Join(dst, "a/b/run.sh"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), fi.Mode().Perm())
	data, err := os.ReadFile(filepath.Join(dst, "a/b/run.sh"))
	require.NoError(t, err)
	assert.Equal(t, "#!/bin/sh\n", string(data))
	data, err = os.ReadFile(filepath.Join(dst, "ro/file"))
	require.NoError(t, err)
	assert.Equal(t, "x", string(data), "a read-only dir is filled")
	fi, err = os.Stat(filepath.Join(dst, "ro"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), fi.Mode().Perm(), "a dir keeps its bits, with the owner's rwx")
}

func TestResetDirAndLinkOrCopy(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	write(t, filepath.Join(dir, "old"), "x")
	require.NoError(t, ResetDir(dir))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries)
	write(t, filepath.Join(dir, "src"), "y")
	write(t, filepath.Join(dir, "dst"), "stale")
	require.NoError(t, LinkOrCopy(filepath.Join(dir, "src"), filepath.Join(dir, "dst")))
	data, err := os.ReadFile(filepath.Join(dir, "dst"))
	require.NoError(t, err)
	assert.Equal(t, "y", string(data))
}
