package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/distribution/reference"
	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/runner/images"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCacheIndex(t *testing.T) {
	resultsDir := t.TempDir()
	c := cacheIndex{resultsDir: resultsDir}
	_, _, ok := c.lookup("sha256:abc")
	assert.False(t, ok)

	trial := filepath.Join(resultsDir, "run1", "a__v__1")
	require.NoError(t, os.MkdirAll(trial, 0o755))
	r := &results.Result{Schema: results.ResultSchema, TaskID: "a", Variant: "v", Attempt: 1, Outcome: grader.OutcomePassed, CacheKey: "sha256:abc", RunID: "run1", Trial: "a__v__1"}
	require.NoError(t, results.WriteJSONFile(filepath.Join(trial, results.ResultFile), r))
	require.NoError(t, c.store("sha256:abc", "run1", "a__v__1"))
	got, dir, ok := c.lookup("sha256:abc")
	require.True(t, ok)
	assert.Equal(t, trial, dir)
	assert.Equal(t, grader.OutcomePassed, got.Outcome)

	r.CacheKey = "sha256:other"
	require.NoError(t, results.WriteJSONFile(filepath.Join(trial, results.ResultFile), r))
	_, _, ok = c.lookup("sha256:abc")
	assert.False(t, ok, "a result for another key is not reused")

	r.CacheKey, r.Outcome = "sha256:abc", grader.OutcomeInfraError
	require.NoError(t, results.WriteJSONFile(filepath.Join(trial, results.ResultFile), r))
	_, _, ok = c.lookup("sha256:abc")
	assert.False(t, ok, "an infra error is never reused")

	r.Outcome = grader.OutcomeRefused
	require.NoError(t, results.WriteJSONFile(filepath.Join(trial, results.ResultFile), r))
	_, _, ok = c.lookup("sha256:abc")
	assert.False(t, ok, "nor is a refused task's result")

	writeTestFile(t, filepath.Join(trial, results.ResultFile), "{torn")
	_, _, ok = c.lookup("sha256:abc")
	assert.False(t, ok, "a corrupt result is not reused")

	writeTestFile(t, c.file("sha256:abc"), `{"key": "sha256:abc", "result": "../../etc/passwd"}`)
	_, _, ok = c.lookup("sha256:abc")
	assert.False(t, ok, "a pointer out of the results dir is refused")
}

func TestRelevantImageMap(t *testing.T) {
	m := map[string]string{"python:3.12-slim": "flightdeck/base:bookworm", "node:20": "x:1"}
	assert.Equal(t, []string{"python:3.12-slim=flightdeck/base:bookworm"}, images.Relevant([]string{"python:3.12-slim", "golang:1"}, m))
	short, err := reference.ParseNormalizedNamed("python:3.12-slim")
	require.NoError(t, err)
	full := short.String() // the default registry's long form
	assert.Equal(t, []string{full + "=flightdeck/base:bookworm"},
		images.Relevant([]string{full}, m), "references match in normalized form")
}
