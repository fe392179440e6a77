package results

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/grader"
)

func TestCacheIndex(t *testing.T) {
	resultsDir := t.TempDir()
	c := CacheIndex{ResultsDir: resultsDir}
	_, _, ok := c.Lookup("sha256:abc")
	assert.False(t, ok)

	trial := filepath.Join(resultsDir, "run1", "a__v__1")
	require.NoError(t, os.MkdirAll(trial, 0o755))
	r := &Result{Schema: ResultSchema, TaskID: "a", Variant: "v", Attempt: 1, Outcome: grader.OutcomePassed, CacheKey: "sha256:abc", RunID: "run1", Trial: "a__v__1"}
	require.NoError(t, WriteJSONFile(filepath.Join(trial, ResultFile), r))
	require.NoError(t, c.Store("sha256:abc", "run1", "a__v__1"))
	got, dir, ok := c.Lookup("sha256:abc")
	require.True(t, ok)
	assert.Equal(t, trial, dir)
	assert.Equal(t, grader.OutcomePassed, got.Outcome)

	r.CacheKey = "sha256:other"
	require.NoError(t, WriteJSONFile(filepath.Join(trial, ResultFile), r))
	_, _, ok = c.Lookup("sha256:abc")
	assert.False(t, ok, "a result for another key is not reused")

	r.CacheKey, r.Outcome = "sha256:abc", grader.OutcomeInfraError
	require.NoError(t, WriteJSONFile(filepath.Join(trial, ResultFile), r))
	_, _, ok = c.Lookup("sha256:abc")
	assert.False(t, ok, "an infra error is never reused")

	r.Outcome = grader.OutcomeRefused
	require.NoError(t, WriteJSONFile(filepath.Join(trial, ResultFile), r))
	_, _, ok = c.Lookup("sha256:abc")
	assert.False(t, ok, "nor is a refused task's result")

	require.NoError(t, os.WriteFile(filepath.Join(trial, ResultFile), []byte("{torn"), 0o644))
	_, _, ok = c.Lookup("sha256:abc")
	assert.False(t, ok, "a corrupt result is not reused")

	require.NoError(t, os.WriteFile(c.file("sha256:abc"), []byte(`{"key": "sha256:abc", "result": "../../etc/passwd"}`), 0o644))
	_, _, ok = c.Lookup("sha256:abc")
	assert.False(t, ok, "a pointer out of the results dir is refused")
}
