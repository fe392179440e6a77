package runner

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
)

// A dataset of three tasks, one of them refused (it asks for GPUs): the
// two others run to the end under the oracle and nop, the refused one is
// recorded with its reason, and the run exits 1.
func TestEngineDatasetWithARefusedTask(t *testing.T) {
	t.Parallel()
	eng := requireEngine(t)
	root := t.TempDir()
	writeHarborTask(t, root, "alpha", "")
	gpus := writeHarborTask(t, root, "beta-gpus", "\n[environment]\ngpus = 1\n")
	writeHarborTask(t, root, "gamma", "")
	suiteFile := writeSuite(t, `
name: refused-dataset
variants:
  oracle: {agent: oracle}
  nop: {agent: nop}
concurrency: 2
results: RESULTS
`)
	rec, res := runSuite(t, eng, suiteFile, suite.Options{Path: []string{root}})

	assert.Equal(t, results.ExitTask, rec.ExitCode, "a refused task fails the run")
	assert.Equal(t, results.StatusFinished, rec.Status)
	assert.Empty(t, rec.NotRun)
	require.Len(t, res, 6, "every task's trials have a result: %v", rec.Trials)
	for _, task := range []string{"alpha", "gamma"} {
		oracle, nop := res[task+"__oracle__1"], res[task+"__nop__1"]
		require.NotNil(t, oracle, task)
		require.NotNil(t, nop, task)
		assert.Equal(t, grader.OutcomePassed, oracle.Outcome, "%s: %s", task, oracle.Error)
		assert.Equal(t, grader.OutcomeFailed, nop.Outcome, "%s: %s", task, nop.Error)
	}
	wantRefusal := suite.Refusal{File: filepath.Join(gpus, "task.toml"), Field: "[environment].gpus", Rule: "GPUs are not supported: flightdeck runs tasks on local engines without GPUs (found 1)"}
	for _, v := range []string{"oracle", "nop"} {
		r := res["beta-gpus__"+v+"__1"]
		require.NotNil(t, r, v)
		assert.Equal(t, grader.OutcomeRefused, r.Outcome, v)
		assert.Equal(t, grader.SpecRefused, r.OutcomeClass, v)
		if assert.NotNil(t, r.Refusal, v) {
			assert.Equal(t, wantRefusal, *r.Refusal, v)
		}
		assert.Contains(t, r.Error, wantRefusal.String())
		assert.Empty(t, r.Image, "nothing was built for it")
	}
	require.Len(t, rec.Refused, 1)
	assert.Equal(t, suite.RefusedTask{ID: "beta-gpus", Dir: gpus, Refusal: wantRefusal}, rec.Refused[0])
	for _, v := range rec.Variants {
		assert.Equal(t, 3, v.Trials, v.Variant)
		assert.Equal(t, 1, v.Refused, v.Variant)
		assert.Equal(t, 2, v.Graded, v.Variant)
	}
	assert.Equal(t, 1.0, *rec.Variants[0].PassRate, "the refused task stays out of the oracle's rate")
	assertNoLeftovers(t, eng, rec.RunID)
}
