package registry

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/tasks"
)

// dataset init pins every task dir by its Harbor digest, metric.py too; the
// manifest it writes reads back and resolves to those dirs, and --update
// pins a changed task anew keeping what [dataset] holds.
func TestInitWritesAManifestThatResolves(t *testing.T) {
	dir := t.TempDir()
	for dirName, name := range map[string]string{"b-dir": "org/b", "a-dir": "org/a"} {
		writeFile(t, filepath.Join(dir, dirName, "task.toml"), "[task]\nname = \""+name+"\"\n")
		writeFile(t, filepath.Join(dir, dirName, "instruction.md"), "do "+name+"\n")
	}
	writeFile(t, filepath.Join(dir, MetricFile), "print(1)\n")
	m, err := Init(dir, InitOptions{Name: "me/set", Description: "two tasks"})
	require.NoError(t, err)
	require.Len(t, m.Tasks, 2)
	assert.Equal(t, "org/a", m.Tasks[0].Name, "in name order")
	want, err := tasks.HarborDigest(filepath.Join(dir, "a-dir"))
	require.NoError(t, err)
	assert.Equal(t, want, m.Tasks[0].Digest)

	back, err := ReadManifest(dir)
	require.NoError(t, err)
	assert.Equal(t, "me/set", back.Dataset.Name)
	assert.Equal(t, "1.0.0", back.Dataset.Version)
	assert.Equal(t, m.Tasks, back.Tasks)
	require.Len(t, back.Files, 1)
	assert.Equal(t, MetricFile, back.Files[0].Path)
	assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, back.Files[0].Digest)
	dirs, left, err := back.Resolve(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(dir, "a-dir"), filepath.Join(dir, "b-dir")}, dirs)
	assert.Empty(t, left)

	_, err = Init(dir, InitOptions{})
	require.Error(t, err, "an existing manifest is not overwritten")
	assert.Contains(t, err.Error(), "--update")

	data, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	require.NoError(t, err)
	// What flightdeck does not read of [dataset] is kept by --update.
	require.NoError(t, os.WriteFile(filepath.Join(dir, ManifestFile), []byte(strings.Replace(string(data), "[dataset]\n", "[dataset]\nkeywords = ['kept']\n", 1)), 0o644))
	writeFile(t, filepath.Join(dir, "a-dir", "instruction.md"), "do it otherwise\n")
	up, err := Init(dir, InitOptions{Update: true})
	require.NoError(t, err)
	assert.NotEqual(t, m.Tasks[0].Digest, up.Tasks[0].Digest, "the changed task is pinned anew")
	assert.Equal(t, m.Tasks[1].Digest, up.Tasks[1].Digest)
	after, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	require.NoError(t, err)
	assert.Contains(t, string(after), "keywords = ['kept']")
	assert.Contains(t, string(after), "description = 'two tasks'")
}

func TestInitRefuses(t *testing.T) {
	for _, tt := range []struct {
		name  string
		tasks map[string]string // dir → task.toml
		opt   InitOptions
		want  string
	}{
		{"no name", map[string]string{"a": "[task]\n"}, InitOptions{}, "a/task.toml: [task].name is missing"},
		{"not org/name", map[string]string{"a": "[task]\nname = \"plain\"\n"}, InitOptions{}, `[task].name "plain" is not org/name`},
		{"twice", map[string]string{"a": "[task]\nname = \"o/x\"\n", "b": "[task]\nname = \"o/x\"\n"}, InitOptions{}, `is the task in a/ too`},
		{"one task id", map[string]string{"a": "[task]\nname = \"o/x\"\n", "b": "[task]\nname = \"p/x\"\n"}, InitOptions{}, `gives task id x (the part after the /), as a's does`},
		{"no task", map[string]string{}, InitOptions{}, "holds no task dir"},
		{"bad dataset name", map[string]string{"a": "[task]\nname = \"o/a\"\n"}, InitOptions{Name: "nope"}, `dataset name nope is not org/name`},
		{"no such dir", nil, InitOptions{}, "no such directory (a dataset dir holds task dirs)"},
		{"update without a manifest", map[string]string{"a": "[task]\nname = \"o/a\"\n"}, InitOptions{Update: true}, "does not exist"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.tasks == nil {
				dir = filepath.Join(dir, "missing")
			}
			for d, body := range tt.tasks {
				writeFile(t, filepath.Join(dir, d, "task.toml"), body)
			}
			_, err := Init(dir, tt.opt)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.NoFileExists(t, filepath.Join(dir, ManifestFile), "nothing written")
		})
	}
}
