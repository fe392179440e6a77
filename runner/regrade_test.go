package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/tasks"
)

// A task that grades the work dir itself is regraded from the recorded
// diff.patch, which must be whole and come from a trial of the same model.
func TestWorkdirRefusal(t *testing.T) {
	task, err := tasks.Load(filepath.Join("..", "fixtures", "runner", "answer"), tasks.LoadOptions{Local: true})
	require.NoError(t, err)
	require.True(t, task.Native())
	tests := []struct {
		name   string
		native bool
		patch  *string
		want   string
	}{
		{"a whole patch", true, ptr("diff --git a/answer.txt b/answer.txt\n"), ""},
		{"an empty patch: nothing changed", true, ptr(""), ""},
		{"no patch", true, nil, "the work dir is rebuilt from the recorded diff.patch, which cannot be read"},
		{"a cut patch", true, ptr("diff --git a/x b/x\n\n[flightdeck: patch cut at 32 MiB]\n"),
			"the recorded diff.patch is incomplete ([flightdeck: patch cut at 32 MiB]): the work dir cannot be rebuilt whole"},
		{"another model", false, ptr(""), "the recorded trial ran in Harbor's model and the task now runs in flightdeck's native model"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := t.TempDir()
			if tc.patch != nil {
				require.NoError(t, os.WriteFile(filepath.Join(src, results.DiffPatch), []byte(*tc.patch), 0o644))
			}
			got := workdirRefusal(task, src, &results.Result{Native: tc.native})
			if tc.want == "" {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.Contains(t, got.String(), tc.want)
		})
	}
}

func ptr(s string) *string { return &s }
