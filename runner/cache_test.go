package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/distribution/reference"
	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/runner/images"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/tasks"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRelevantImageMap(t *testing.T) {
	m := map[string]string{"python:3.12-slim": "flightdeck/base:bookworm", "node:20": "x:1"}
	assert.Equal(t, []string{"python:3.12-slim=flightdeck/base:bookworm"}, images.Relevant([]string{"python:3.12-slim", "golang:1"}, m))
	short, err := reference.ParseNormalizedNamed("python:3.12-slim")
	require.NoError(t, err)
	full := short.String() // the default registry's long form
	assert.Equal(t, []string{full + "=flightdeck/base:bookworm"},
		images.Relevant([]string{full}, m), "references match in normalized form")
}

// A cached result reused for a trial of another task with the same files
// (the key is content, not place) is that task's now: its task id and dir
// are the trial's, so the run's report and task verify's audit count it.
func TestReuseIsTheTrialsTask(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	from := filepath.Join(src, "twin__nop__1")
	require.NoError(t, os.MkdirAll(from, 0o755))
	reward := 0.0
	cached := &results.Result{Schema: results.ResultSchema, TaskID: "twin", TaskDir: "/tasks/twin", Variant: "nop", Attempt: 1,
		Outcome: grader.OutcomeFailed, Reward: &reward, RunID: "run-1", Trial: "twin__nop__1"}
	require.NoError(t, results.WriteJSONFile(filepath.Join(from, results.ResultFile), cached))
	s := &runState{runID: "run-2", dir: dst}
	tr := &suite.Trial{ID: "task__nop__1", Task: &tasks.Task{ID: "task", Dir: "/tasks/task"}, Variant: suite.Variant{Name: "nop"}}
	got, err := s.reuse(tr, cached, from)
	require.NoError(t, err)
	assert.Equal(t, "task", got.TaskID)
	assert.Equal(t, "/tasks/task", got.TaskDir)
	assert.Equal(t, "run-1/twin__nop__1", got.CachedFrom)
	onDisk, err := results.ReadResult(filepath.Join(dst, "task__nop__1", results.ResultFile))
	require.NoError(t, err)
	assert.Equal(t, "task", onDisk.TaskID)
}
