package registry

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const goodDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func writeFile(t *testing.T, p, body string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
}

func TestReadManifestRefusesBadEntries(t *testing.T) {
	for _, tt := range []struct{ body, want string }{
		{"[dataset]\nname = \"o/d\"\n", "lists no task"},
		{"[[tasks]]\ndigest = \"" + goodDigest + "\"\n", "tasks[0]: name is missing"},
		{"[[tasks]]\nname = \"o/a\"\ndigest = \"abc\"\n", `tasks[0] o/a: digest "abc" is not sha256:<64 hex digits>`},
		{"[[tasks]]\nname = \"o/a\"\ndigest = \"" + goodDigest + "\"\n[[tasks]]\nname = \"o/a\"\ndigest = \"" + goodDigest + "\"\n", "tasks[1]: o/a is listed twice"},
		{"[[tasks]\n", "dataset.toml"},
	} {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, ManifestFile), tt.body)
		_, err := ReadManifest(dir)
		require.Error(t, err, tt.body)
		assert.Contains(t, err.Error(), tt.want)
		assert.Contains(t, err.Error(), filepath.Join(dir, ManifestFile), "names the file")
	}
	m, err := ReadManifest(t.TempDir())
	assert.NoError(t, err)
	assert.Nil(t, m, "no dataset.toml: no manifest")
}

// The listed tasks are found by [task].name, in the manifest's order; a
// missing one is a path that says so; unlisted task dirs are left out.
func TestManifestResolve(t *testing.T) {
	dir := t.TempDir()
	for dirName, name := range map[string]string{"a-dir": "org/a", "b-dir": "org/b", "c-dir": "org/c"} {
		writeFile(t, filepath.Join(dir, dirName, "task.toml"), "[task]\nname = \""+name+"\"\n")
	}
	writeFile(t, filepath.Join(dir, ManifestFile),
		"[[tasks]]\nname = \"org/b\"\ndigest = \""+goodDigest+"\"\n[[tasks]]\nname = \"org/x\"\ndigest = \""+goodDigest+"\"\n[[tasks]]\nname = \"org/a\"\ndigest = \""+goodDigest+"\"\n")
	m, err := ReadManifest(dir)
	require.NoError(t, err)
	dirs, left, err := m.Resolve(dir)
	require.NoError(t, err)
	require.Len(t, dirs, 3)
	assert.Equal(t, filepath.Join(dir, "b-dir"), dirs[0])
	name, ok := MissingTask(dirs[1])
	assert.True(t, ok)
	assert.Equal(t, "org/x", name)
	assert.Equal(t, filepath.Join(dir, "a-dir"), dirs[2])
	assert.Equal(t, []string{filepath.Join(dir, "c-dir")}, left)
	_, ok = MissingTask(dirs[0])
	assert.False(t, ok)

	got, err := DatasetTaskDirs(dir)
	require.NoError(t, err)
	assert.Equal(t, dirs, got, "a dataset dir with a manifest expands to what it lists")
}
