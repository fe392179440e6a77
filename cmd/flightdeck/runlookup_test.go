package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeRun writes a finished run's run.json, enough for a report, as
// results/<id>/run.json under dir.
func writeRun(t *testing.T, dir, results, id string) {
	t.Helper()
	runDir := filepath.Join(dir, results, id)
	require.NoError(t, os.MkdirAll(runDir, 0o755))
	writeJSONFile(t, filepath.Join(runDir, "run.json"), map[string]any{
		"schema": 1, "run_id": id, "suite": "s", "status": "finished",
		"config": map[string]any{"attempts": 1, "variants": []map[string]any{{"name": "oracle", "agent": "oracle"}}},
	})
}

// writeSuiteFile writes a suite file whose results go to results.
func writeSuiteFile(t *testing.T, dir, name, results string) {
	t.Helper()
	body := "name: s\ntasks: [" + mustAbs(t, filepath.Join(runFixtures, "answer")) + "]\nvariants:\n  oracle: {agent: oracle}\nresults: " + results + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
}

// A run is found where the suite in the current dir put it; the error
// names the dirs looked in and the --results to add.
func TestFindRun(t *testing.T) {
	t.Run("in the results dir of a suite here", func(t *testing.T) {
		dir := t.TempDir()
		writeSuiteFile(t, dir, "suite.yaml", "out")
		require.NoError(t, os.WriteFile(filepath.Join(dir, "compose.yaml"), []byte("services: {a: {image: x}}\n"), 0o644))
		writeRun(t, dir, "out", "run-1")
		writeRun(t, dir, "out", "run-2")
		code, out, stderr := runCLI(t, dir, "report", "run-1")
		require.Equal(t, exitOK, code, stderr)
		assert.Contains(t, out, "run-1")
		assert.Contains(t, stderr, "flightdeck report: found run run-1 in out (suite.yaml's results dir); name it with --results out")

		code, out, stderr = runCLI(t, dir, "report", "--html", "run-1", "run-2")
		require.Equal(t, exitOK, code, stderr)
		assert.Equal(t, filepath.Join(dir, "out", "run-1", "report-vs-run-2.html")+"\n", out)

		code, _, stderr = runCLI(t, dir, "report", "--results", "out", "run-1")
		require.Equal(t, exitOK, code, stderr)
		assert.Empty(t, stderr, "found where --results says: nothing to say")
	})
	t.Run("nowhere", func(t *testing.T) {
		dir := t.TempDir()
		writeSuiteFile(t, dir, "suite.yml", "out")
		code, _, stderr := runCLI(t, dir, "report", "run-1")
		assert.Equal(t, exitUsage, code)
		assert.Equal(t, "flightdeck report: no run run-1 in results (run.json not found), nor in out (suite.yml's results dir); "+
			"if it was written elsewhere, add --results DIR: the results dir of the suite that ran it\n", stderr)

		// --results given: what that dir holds, not the flag again.
		writeRun(t, dir, "out", "run-2")
		code, _, stderr = runCLI(t, dir, "report", "--results", "out", "run-1")
		assert.Equal(t, exitUsage, code)
		assert.Contains(t, stderr, "no run run-1 in out (run.json not found)")
		assert.Contains(t, stderr, "; out holds: run-2\n")
		assert.NotContains(t, stderr, "add --results")

		code, _, stderr = runCLI(t, dir, "run", "--resume", "run-1")
		assert.Equal(t, exitUsage, code)
		assert.Contains(t, stderr, "flightdeck run: --resume run-1: no run run-1 in results (run.json not found), nor in out (suite.yml's results dir)")
	})
	t.Run("in more than one", func(t *testing.T) {
		dir := t.TempDir()
		writeSuiteFile(t, dir, "a.yaml", "out")
		writeSuiteFile(t, dir, "b.yaml", "other results")
		writeRun(t, dir, "out", "run-1")
		writeRun(t, dir, "other results", "run-1")
		code, _, stderr := runCLI(t, dir, "report", "run-1")
		assert.Equal(t, exitUsage, code)
		assert.Equal(t, "flightdeck report: no run run-1 in results, and more than one other results dir has one: "+
			"add --results out (a.yaml's results dir) or --results 'other results' (b.yaml's results dir)\n", stderr)
	})
	t.Run("under ./results beside a default suite that puts runs elsewhere", func(t *testing.T) {
		dir := t.TempDir()
		writeSuiteFile(t, dir, "local.yaml", "elsewhere")
		writeRun(t, dir, "results", "run-1")
		code, _, stderr := runCLI(t, dir, "report", "run-1")
		require.Equal(t, exitOK, code, stderr)
		assert.Contains(t, stderr, "found run run-1 in results; name it with --results results")
	})
}

// run --resume finds the run where the suite here put it, and resumes it
// there: a run whose trials all have a result keeps them, with no engine.
func TestResumeFindsRun(t *testing.T) {
	dir := t.TempDir()
	writeSuiteFile(t, dir, "suite.yaml", "out")
	task := mustAbs(t, filepath.Join(runFixtures, "answer"))
	runDir := filepath.Join(dir, "out", "run-1")
	trial := "answer__oracle__1"
	require.NoError(t, os.MkdirAll(filepath.Join(runDir, trial), 0o755))
	writeJSONFile(t, filepath.Join(runDir, "run.json"), map[string]any{
		"schema": 1, "run_id": "run-1", "suite": "s", "status": "interrupted",
		"config": map[string]any{"suite": "s", "task_dirs": []string{task}, "attempts": 1, "concurrency": 1,
			"variants": []map[string]any{{"name": "oracle", "agent": "oracle"}}, "results": filepath.Join(dir, "out")},
	})
	writeJSONFile(t, filepath.Join(runDir, trial, "result.json"), map[string]any{
		"schema": 1, "run_id": "run-1", "trial": trial, "task_id": "answer", "variant": "oracle", "attempt": 1,
		"outcome": "passed", "outcome_class": "passed", "reward": 1,
	})
	code, out, stderr := runCLI(t, dir, "run", "--resume", "run-1")
	require.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", out, stderr)
	assert.Contains(t, stderr, "flightdeck run: found run run-1 in out (suite.yaml's results dir); name it with --results out")
	assert.Contains(t, stderr, "kept     "+trial)
	assert.NoDirExists(t, filepath.Join(dir, "results"), "nothing is written where the run is not")
}
