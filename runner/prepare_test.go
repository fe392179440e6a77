package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/tasks"
)

// A misspelt key of task.toml is said by a run, whose default applies.
func TestUnknownKeyNotes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "answer")
	require.NoError(t, os.CopyFS(dir, os.DirFS(filepath.Join("..", "fixtures", "runner", "answer"))))
	toml := filepath.Join(dir, tasks.TaskFile)
	b, err := os.ReadFile(toml)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(toml, []byte(strings.Replace(string(b), "[verifier]\n", "[verifier]\ntimout_sec = 5.0\n", 1)), 0o644))
	task, err := tasks.Load(dir, tasks.LoadOptions{Local: true})
	require.NoError(t, err)
	notes := unknownKeyNotes([]*tasks.Task{task})
	require.Len(t, notes, 1)
	assert.Contains(t, notes[0], "[verifier].timout_sec: unknown key: Harbor and flightdeck ignore it; did you mean timeout_sec? (its default applies)")
	assert.Contains(t, notes[0], toml)

	many := make([]*tasks.Task, maxKeyNotes+2)
	for i := range many {
		many[i] = task
	}
	notes = unknownKeyNotes(many)
	require.Len(t, notes, maxKeyNotes+1)
	assert.Equal(t, "and 2 more unknown keys (flightdeck task check DIR lists them)", notes[maxKeyNotes])
}
