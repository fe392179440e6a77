package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/testenv"
	"github.com/flightdeck/flightdeck/runner"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/tasks/aidlc"
)

var (
	aidlcSmoke  = filepath.Join("..", "..", "fixtures", "aidlc", "smoke", "suite.json")
	aidlcBroken = filepath.Join("..", "..", "fixtures", "aidlc", "broken")
)

// importCLI runs `flightdeck task import-aidlc args...` from dir.
func importCLI(t *testing.T, dir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &cliEnv{stdout: &out, stderr: &errb, cwd: dir}
	code = dispatch(context.Background(), env, append([]string{"task", "import-aidlc"}, args...))
	return code, out.String(), errb.String()
}

func aidlcAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	require.NoError(t, err)
	return abs
}

// TestImportAidlcSmoke imports the smoke suite from the command line: the
// tasks pass task check, the specs load as the runner loads them, and the
// suite file parses (its variants are left for the user).
func TestImportAidlcSmoke(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := importCLI(t, dir, aidlcAbs(t, aidlcSmoke), "--out", "imported/smoke")
	require.Equal(t, exitOK, code, stderr)
	assert.Empty(t, stderr)
	assert.Contains(t, stdout, "SCENARIO            ASSERTION")
	assert.Contains(t, stdout, "csv-duplicate-rows  hidden-tests")
	assert.Contains(t, stdout, "Dropped checkpoints (ai-dlc never observed them): 3")
	assert.Contains(t, stdout, "wrote 2 tasks, 7 specs and suite.yaml to imported/smoke")
	out := filepath.Join(dir, "imported", "smoke")

	var check bytes.Buffer
	env := &cliEnv{stdout: &check, stderr: &check, cwd: out}
	assert.Equal(t, exitOK, dispatch(context.Background(), env, []string{"task", "check", "csv-duplicate-rows", "greeter-farewell"}), check.String())
	assert.Contains(t, check.String(), "0 errors, 0 warnings")

	specs, err := grader.LoadSpecs([]string{filepath.Join(out, "specs")})
	require.NoError(t, err)
	require.Len(t, specs, 7)
	for _, s := range specs {
		if s.ID == "greeter-farewell.quality" {
			assert.Nil(t, s.Assert)
			assert.NotEmpty(t, s.Pending)
			continue
		}
		assert.NotNil(t, s.Assert, s.ID)
	}
	suite, err := suite.LoadSuite(filepath.Join(out, "suite.yaml"))
	require.NoError(t, err)
	assert.Equal(t, []string{"csv-duplicate-rows", "greeter-farewell"}, suite.Tasks)
	var names []string
	for _, v := range suite.Variants {
		names = append(names, v.Name)
		assert.Empty(t, v.Agent, "variant %s is left for the user to fill", v.Name)
	}
	assert.Equal(t, []string{"treatment", "baseline"}, names)
	assert.Equal(t, []string{"specs/"}, suite.Specs)
}

// TestImportAidlcBroken: each broken suite exits 1 naming its field, prints
// nothing on stdout, and writes nothing, whether --out exists or not.
func TestImportAidlcBroken(t *testing.T) {
	entries, err := os.ReadDir(aidlcBroken)
	require.NoError(t, err)
	require.NotEmpty(t, entries)
	for _, e := range entries {
		t.Run(e.Name(), func(t *testing.T) {
			suite := aidlcAbs(t, filepath.Join(aidlcBroken, e.Name(), "suite.json"))
			_, want := aidlc.Import(context.Background(), suite, filepath.Join(t.TempDir(), "probe"))
			var se *aidlc.SuiteError
			require.ErrorAs(t, want, &se)
			dir := t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "out", "mine"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "out", "mine", "keep.txt"), []byte("keep\n"), 0o644))
			before := aidlcTree(t, dir)
			for _, out := range []string{"out", "new/out"} {
				code, stdout, stderr := importCLI(t, dir, suite, "--out", out)
				assert.Equal(t, exitFindings, code, stderr)
				assert.Empty(t, stdout)
				assert.Contains(t, stderr, se.Problems[0].Path+": ")
				assert.Contains(t, stderr, "nothing was written")
				assert.Equal(t, before, aidlcTree(t, dir), "the import changed nothing under %s", dir)
			}
		})
	}
}

// TestImportAidlcCredentialNeverPrinted proves a credential in a suite
// reaches neither stream nor any file.
func TestImportAidlcCredentialNeverPrinted(t *testing.T) {
	for name, secret := range map[string]string{
		"credential-key":   "hunter2hunter2",
		"credential-value": "ghp_R2d2C3poBb8Luke1Leia9Han0Solo7Chewie",
	} {
		t.Run(name, func(t *testing.T) {
			suite := aidlcAbs(t, filepath.Join(aidlcBroken, name, "suite.json"))
			data, err := os.ReadFile(suite)
			require.NoError(t, err)
			require.Contains(t, string(data), secret)
			dir := t.TempDir()
			code, stdout, stderr := importCLI(t, dir, suite, "--out", "out")
			assert.Equal(t, exitFindings, code)
			assert.Contains(t, stderr, "not shown")
			for _, part := range []string{secret, secret[:8], secret[len(secret)-8:]} {
				assert.NotContains(t, stdout, part)
				assert.NotContains(t, stderr, part)
			}
			assert.Empty(t, aidlcTree(t, dir), "no file written")
		})
	}
}

func TestImportAidlcUsage(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := importCLI(t, dir)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "want one SUITE.json and --out DIR")

	code, _, _ = importCLI(t, dir, aidlcAbs(t, aidlcSmoke))
	assert.Equal(t, exitUsage, code, "--out is required")

	code, stdout, _ := importCLI(t, dir, "--help")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, stdout, "task import-aidlc SUITE.json --out DIR")

	require.NoError(t, os.MkdirAll(filepath.Join(dir, "full"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "full", "x"), nil, 0o644))
	code, _, stderr = importCLI(t, dir, aidlcAbs(t, aidlcSmoke), "--out", "full")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "is not empty")

	code, _, stderr = importCLI(t, dir, "missing.json", "--out", "o")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "missing.json")
	assert.NoDirExists(t, filepath.Join(dir, "o"))
}

// TestImportedSuiteRuns runs the imported csv-duplicate-rows task on the
// real engine: nop fails the grader; a replay that writes the reference and
// commits, as variant treatment, passes it and the workflow specs.
func TestImportedSuiteRuns(t *testing.T) {
	testenv.Engine(t)

	dir := t.TempDir()
	code, _, stderr := importCLI(t, dir, aidlcAbs(t, aidlcSmoke), "--out", "imported")
	require.Equal(t, exitOK, code, stderr)
	reference, err := os.ReadFile(filepath.Join("..", "..", "tasks", "fixtures", "csv-validator", "solution", "validate.py"))
	require.NoError(t, err)
	script, err := json.Marshal(map[string]any{"version": 1, "steps": []any{
		map[string]any{"write": map[string]any{"path": "csvcheck/validate.py", "content": string(reference)}},
		map[string]any{"commit": map[string]any{"message": "Detect duplicate rows"}},
	}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "replay.json"), script, 0o644))
	suite := `name: aidlc-e2e
tasks: [imported/csv-duplicate-rows]
variants:
  nop: {agent: nop, expect: failed}
  treatment: {agent: deterministic, script: replay.json, expect: passed}
images: {"` + aidlc.Image + `": ` + runner.FallbackImage + `}
specs: [imported/specs/]
results: results
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "e2e.yaml"), []byte(suite), 0o644))

	var out, errb bytes.Buffer
	env := &cliEnv{stdout: &out, stderr: &errb, cwd: dir}
	runCode := dispatch(context.Background(), env, []string{"run", "e2e.yaml", "-j", "1"})
	resultsDir := aidlcResults(t, filepath.Join(dir, "results"))
	require.Equal(t, exitOK, runCode, "stdout:\n%s\nstderr:\n%s", out.String(), errb.String())

	nop := resultsDir["nop"]
	require.NotNil(t, nop)
	assert.Equal(t, grader.OutcomeFailed, nop.Outcome, "nop fails the grader")
	require.NotNil(t, nop.Reward)
	assert.Equal(t, 0.0, *nop.Reward)
	require.NotNil(t, nop.Summary)
	assert.Equal(t, 10, nop.Summary.Total)
	for _, v := range nop.Specs {
		assert.NotEqual(t, "pass", v.Status, "workflow specs apply to treatment only: %s", v.SpecID)
	}

	tr := resultsDir["treatment"]
	require.NotNil(t, tr)
	assert.Equal(t, grader.OutcomePassed, tr.Outcome, "the reference passes the imported grader")
	verdicts := map[string]string{}
	for _, v := range tr.Specs {
		verdicts[v.SpecID] = v.Status
	}
	assert.Equal(t, "pass", verdicts["csv-duplicate-rows.commit-present"])
	assert.Equal(t, "pass", verdicts["csv-duplicate-rows.validator-delivered"])
}

// aidlcResults reads every trial's result.json under a results dir, by variant.
func aidlcResults(t *testing.T, dir string) map[string]*results.Result {
	t.Helper()
	out := map[string]*results.Result{}
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*", "result.json"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var r results.Result
		require.NoError(t, json.Unmarshal(data, &r), f)
		out[r.Variant] = &r
	}
	return out
}

// aidlcTree maps every path under dir to its contents ("dir" for directories).
func aidlcTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			out[rel] = "dir"
			return nil
		}
		data, err := os.ReadFile(p)
		out[rel] = string(data)
		return err
	}))
	return out
}
