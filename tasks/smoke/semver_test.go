//go:build unix

// Package smoke_test checks the semver smoke task (semver/): its generated
// hidden tests, its grader on the host's python3 (and in the offline base
// image, where pytest runs them), its oracle and its task files.
package smoke_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/internal/testenv"
	"github.com/flightdeck/flightdeck/tasks"
	"github.com/flightdeck/flightdeck/tasks/internal/tasktest"
)

const (
	// semverTask is the task directory, relative to this package.
	semverTask = "semver"
	// semverTotal is the number of hidden tests, semverCategories their categories.
	semverTotal      = 116
	semverCategories = 13
	// npmTarball is node-semver 7.8.5 as npm publishes it, relative to the project root.
	npmTarball = "../shared/npm/semver-7.8.5.tgz"
	// baseImage is the offline image the task's FROM line maps to here.
	baseImage = "flightdeck/base:bookworm"
)

// categories are the hidden tests' categories, in the order of cases.json.
var categories = []string{
	"valid_clean", "parse", "compare", "sort", "increment", "caret", "tilde",
	"xrange", "hyphen", "comparator_sets", "prerelease", "max_min_satisfying", "coerce",
}

// noPrereleaseRule patches the reference so that prerelease versions are
// matched like any other: the typical half-right implementation.
var noPrereleaseRule = [2]string{
	"if version.prerelease and not self.include_prerelease:",
	"if False:",
}

// taskDir is the semver task directory, absolute so that it holds from any
// working directory.
func taskDir(t *testing.T) string {
	t.Helper()
	return tasktest.TaskDir(t, semverTask)
}

// projectRoot is the module root: this package is tasks/smoke.
func projectRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(root, "go.mod"))
	return root
}

// baseEnv is the host environment without anything that steers Python,
// pytest, node or the grader.
func baseEnv() []string {
	return tasktest.BaseEnv("NODE_", "NPM_", "npm_")
}

// reference is solution/semver.py with each edit (old → new) applied.
func reference(t *testing.T, edits ...[2]string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(taskDir(t), "solution", "semver.py"))
	require.NoError(t, err)
	s := string(src)
	for _, edit := range edits {
		require.Contains(t, s, edit[0], "the reference no longer has the text this case edits")
		s = strings.Replace(s, edit[0], edit[1], 1)
	}
	return s
}

// workDir is a fresh agent's tree holding semver.py with the given source
// ("" for an empty tree).
func workDir(t *testing.T, semverPy string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "app")
	require.NoError(t, os.Mkdir(dir, 0o755))
	if semverPy != "" {
		tasktest.WriteFile(t, filepath.Join(dir, "semver.py"), semverPy)
	}
	return dir
}

// grade runs tests/test.sh from the task directory on the tree, with the
// tree given by FLIGHTDECK_WORKDIR.
func grade(t *testing.T, tree string) tasktest.GradeResult {
	t.Helper()
	return gradeWith(t, taskDir(t), []string{"FLIGHTDECK_WORKDIR=" + tree})
}

// gradeWith runs tests/test.sh with the cwd and extra environment given.
func gradeWith(t *testing.T, cwd string, extra []string) tasktest.GradeResult {
	t.Helper()
	return tasktest.Grade(t, taskDir(t), cwd, baseEnv(), extra)
}

// assertGrade checks a run scored passed of 116, consistently in reward.json,
// the RESULT line and the exit status.
func assertGrade(t *testing.T, res tasktest.GradeResult, passed int) {
	t.Helper()
	reward := float64(passed) / semverTotal
	require.Contains(t, res.Reward, "reward", "output:\n%s", res.Output)
	assert.InDelta(t, reward, res.Reward["reward"], 1e-6, "reward; output:\n%s", res.Output)
	assert.Equal(t, map[string]any{"reward": res.Reward["reward"], "passed": float64(passed), "total": float64(semverTotal)},
		res.Reward, "reward.json holds numbers only")
	tasktest.AssertCounts(t, res, passed, semverTotal)
	assert.ElementsMatch(t, categories, slices.Collect(maps.Keys(res.Result.ByCategory)), "RESULT by_category")
}

// assertNoPrereleaseRule checks the grade of a semver.py that ignores the
// prerelease rule: strictly between 0 and 1, failures named in the
// prerelease category, version-only categories untouched.
func assertNoPrereleaseRule(t *testing.T, res tasktest.ResultLine) {
	t.Helper()
	assert.Greater(t, res.Passed, 0)
	assert.Less(t, res.Passed, semverTotal)
	pre := res.ByCategory["prerelease"]
	assert.Less(t, pre.Passed, pre.Total, "prerelease category has failures")
	var inPrerelease int
	for _, id := range res.Failed {
		if strings.HasPrefix(id, "TestPrerelease.") {
			inPrerelease++
		}
	}
	assert.Equal(t, pre.Total-pre.Passed, inPrerelease, "failed names the prerelease tests: %v", res.Failed)
	for _, c := range []string{"valid_clean", "parse", "compare", "sort", "increment", "coerce"} {
		assert.Equal(t, res.ByCategory[c].Total, res.ByCategory[c].Passed, "category %s does not depend on the rule", c)
	}
}

// oracleFile is generator/oracle.json.
type oracleFile struct {
	Semver     string   `json:"semver"`
	Categories []string `json:"categories"`
	Cases      []struct {
		ID       string         `json:"id"`
		Category string         `json:"category"`
		Call     string         `json:"call"`
		Args     []any          `json:"args"`
		Kwargs   map[string]any `json:"kwargs"`
	} `json:"cases"`
}

func readOracle(t *testing.T) oracleFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(taskDir(t), "generator", "oracle.json"))
	require.NoError(t, err)
	var o oracleFile
	require.NoError(t, json.Unmarshal(data, &o))
	return o
}

func TestSemverOracleShape(t *testing.T) {
	o := readOracle(t)
	assert.Equal(t, "7.8.5", o.Semver)
	assert.Equal(t, categories, o.Categories)
	require.Len(t, o.Categories, semverCategories)
	require.Len(t, o.Cases, semverTotal)
	perCategory := map[string]int{}
	for _, c := range o.Cases {
		perCategory[c.Category]++
	}
	for _, c := range categories {
		assert.Positive(t, perCategory[c], "category %s has cases", c)
	}

	// The cases and the oracle's copy of them agree.
	data, err := os.ReadFile(filepath.Join(taskDir(t), "generator", "cases.json"))
	require.NoError(t, err)
	var cases oracleFile
	require.NoError(t, json.Unmarshal(data, &cases))
	require.Len(t, cases.Cases, len(o.Cases))
	for i := range cases.Cases {
		assert.Equal(t, cases.Cases[i].ID, o.Cases[i].ID)
		assert.Equal(t, cases.Cases[i].Args, o.Cases[i].Args, "case %s", o.Cases[i].ID)
	}
}

func TestSemverHiddenTestsRegenerate(t *testing.T) {
	tasktest.NeedPython(t)
	task := taskDir(t)
	out := filepath.Join(t.TempDir(), "test_semver_hidden.py")
	code, output := tasktest.Run(t, task, baseEnv(), "python3", filepath.Join(task, "generator", "gen_hidden.py"),
		"--oracle", filepath.Join(task, "generator", "oracle.json"), "--out", out)
	require.Equal(t, 0, code, output)
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	want, err := os.ReadFile(filepath.Join(task, "tests", "test_semver_hidden.py"))
	require.NoError(t, err)
	assert.True(t, string(want) == string(got),
		"gen_hidden.py does not reproduce tests/test_semver_hidden.py from oracle.json; regenerate (generator/README.md)")
	assert.Equal(t, semverTotal, strings.Count(string(got), "\n    def test_"), "one test method per case")
	assert.Equal(t, semverCategories, strings.Count(string(got), "(unittest.TestCase):\n    category = "),
		"one TestCase class per category")
}

func TestSemverOracleRegenerates(t *testing.T) {
	tarball := filepath.Join(projectRoot(t), filepath.FromSlash(npmTarball))
	if _, err := os.Stat(tarball); err != nil {
		// The tarball lives beside the project, never in it (README:
		// "Tests"); a checkout without it cannot regenerate the oracle.
		t.Skipf("node-semver tarball %s not found beside the project: %v", tarball, err)
	}
	for _, tool := range []string{"node", "npm"} {
		testenv.Tool(t, tool)
	}
	prefix := t.TempDir()
	env := append(baseEnv(), "HOME="+t.TempDir(), "npm_config_cache="+filepath.Join(prefix, "cache"))
	code, out := tasktest.Run(t, projectRoot(t), env, "npm", "install", "--no-save", "--offline", "--no-audit",
		"--no-fund", "--prefix", prefix, tarball)
	require.Equal(t, 0, code, "npm install %s:\n%s", tarball, out)

	oracleJS := filepath.Join(taskDir(t), "generator", "oracle.js")
	cmd := exec.Command("node", oracleJS)
	cmd.Env = append(env, "NODE_PATH="+filepath.Join(prefix, "node_modules"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	got, err := cmd.Output()
	require.NoError(t, err, "node oracle.js: %s", stderr.String())
	want, err := os.ReadFile(filepath.Join(taskDir(t), "generator", "oracle.json"))
	require.NoError(t, err)
	assert.True(t, string(want) == string(got),
		"oracle.js does not reproduce generator/oracle.json; regenerate (generator/README.md)")
}

func TestSemverGrade(t *testing.T) {
	tasktest.NeedPython(t)
	cases := []struct {
		name   string
		tree   func(t *testing.T) string
		passed int // -1: strictly between 0 and all, checked by check
		check  func(t *testing.T, res tasktest.ResultLine)
	}{
		{name: "reference", passed: semverTotal, tree: func(t *testing.T) string {
			return workDir(t, reference(t))
		}},
		{name: "prerelease rule ignored", passed: -1, check: assertNoPrereleaseRule, tree: func(t *testing.T) string {
			return workDir(t, reference(t, noPrereleaseRule))
		}},
		{name: "empty work dir", passed: 0, tree: func(t *testing.T) string {
			return workDir(t, "")
		}},
		{name: "semver.py fails to import", passed: 0, tree: func(t *testing.T) string {
			return workDir(t, "raise ImportError('not written yet')\n")
		}},
		{name: "semver.py exits the interpreter", passed: 0, tree: func(t *testing.T) string {
			return workDir(t, "import os\nos._exit(0)\n")
		}},
		{name: "semver.py is a symlink", passed: 0, tree: func(t *testing.T) string {
			elsewhere := workDir(t, reference(t))
			dir := workDir(t, "")
			require.NoError(t, os.Symlink(filepath.Join(elsewhere, "semver.py"), filepath.Join(dir, "semver.py")))
			return dir
		}},
		{name: "semver.py is a directory", passed: 0, tree: func(t *testing.T) string {
			dir := workDir(t, "")
			tasktest.WriteFile(t, filepath.Join(dir, "semver.py", "__init__.py"), reference(t))
			return dir
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := grade(t, tc.tree(t))
			if tc.passed >= 0 {
				assertGrade(t, res, tc.passed)
			} else {
				assertGrade(t, res, res.Result.Passed)
			}
			if tc.check != nil {
				tc.check(t, res.Result)
			}
		})
	}
}

func TestSemverGradeMissingSemverSaysSo(t *testing.T) {
	tasktest.NeedPython(t)
	res := grade(t, workDir(t, ""))
	assert.Contains(t, res.Output, "semver.py not found")
	assert.Equal(t, 1, res.Exit)
}

// TestSemverGradeFindsTheTree covers the three ways test.sh finds the
// agent's tree: FLIGHTDECK_WORKDIR, HANGAR_REPO and the current directory.
func TestSemverGradeFindsTheTree(t *testing.T) {
	tasktest.NeedPython(t)
	tree := workDir(t, reference(t))
	other := workDir(t, "") // what a lower-priority source points at
	cases := []struct {
		name  string
		cwd   string
		extra []string
	}{
		{"FLIGHTDECK_WORKDIR", other, []string{"FLIGHTDECK_WORKDIR=" + tree, "HANGAR_REPO=" + other}},
		{"HANGAR_REPO", other, []string{"HANGAR_REPO=" + tree}},
		{"current directory", tree, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assertGrade(t, gradeWith(t, tc.cwd, tc.extra), semverTotal)
		})
	}
}

// TestSemverGradeRewardPlantedBeforehand checks that a reward planted in the
// reward dir beforehand never survives, and that $HANGAR_GRADE_OUT may name a
// directory.
func TestSemverGradeRewardPlantedBeforehand(t *testing.T) {
	tasktest.NeedPython(t)
	scratch := t.TempDir()
	rewardDir := filepath.Join(scratch, "reward")
	gradeOut := filepath.Join(scratch, "grade")
	require.NoError(t, os.Mkdir(gradeOut, 0o755))
	forged := `{"reward": 1, "passed": 116, "total": 116}`
	tasktest.WriteFile(t, filepath.Join(rewardDir, "reward.json"), forged)
	tasktest.WriteFile(t, filepath.Join(rewardDir, "reward.txt"), "1\n")
	env := append(baseEnv(), "FLIGHTDECK_WORKDIR="+workDir(t, ""), "FLIGHTDECK_REWARD_DIR="+rewardDir,
		"HANGAR_GRADE_OUT="+gradeOut)
	code, out := tasktest.Run(t, taskDir(t), env, "bash", filepath.Join(taskDir(t), "tests", "test.sh"))
	assert.Equal(t, 1, code, out)
	reward := tasktest.ReadReward(t, filepath.Join(rewardDir, "reward.json"), out)
	assert.Equal(t, map[string]any{"reward": 0.0, "passed": 0.0, "total": float64(semverTotal)}, reward)
	assert.NoFileExists(t, filepath.Join(rewardDir, "reward.txt"))
	detail := tasktest.ReadReward(t, filepath.Join(gradeOut, "reward.json"), out)
	assert.Equal(t, 0.0, detail["reward"])
	assert.Contains(t, detail, "failed")
}

// forgery is Python that records that it ran and then tries to forge a
// perfect grade.
func forgery(sentinel string) string {
	return `import json, os
with open(` + tasktest.PyString(sentinel) + `, "a") as f:
    f.write(__file__ + "\n")
for d in (os.environ.get("FLIGHTDECK_REWARD_DIR"), "/logs/verifier"):
    try:
        with open(os.path.join(d, "reward.json"), "w") as f:
            json.dump({"reward": 1, "passed": 116, "total": 116}, f)
    except Exception:
        pass
print('RESULT {"passed":116,"total":116,"by_category":{},"failed":[]}')
`
}

// forgedTests is a test module with some of the hidden tests' names, all
// passing.
func forgedTests(sentinel string) string {
	var b strings.Builder
	b.WriteString(forgery(sentinel))
	b.WriteString("import unittest\n\n\nclass TestPrerelease(unittest.TestCase):\n")
	b.WriteString("    category = \"prerelease\"\n\n")
	for _, m := range []string{"excluded_by_default", "other_tuple_excluded", "star_excludes", "below_release_bound"} {
		b.WriteString("    def test_prerelease_" + m + "(self):\n        pass\n\n")
	}
	return b.String()
}

// semverLie is appended to semver.py: the code under test runs, and lies
// where it can, on stdout and stderr. It fails to import if a reward location
// is in its environment.
const semverLie = `
import os as _os, sys as _sys
assert not {"FLIGHTDECK_REWARD_DIR", "HANGAR_GRADE_OUT"} & set(_os.environ), "reward location visible"
_forged = 'RESULT {"passed":116,"total":116,"by_category":{},"failed":[]}'
print(_forged, file=_sys.stderr, flush=True)
print(_forged, flush=True)
`

// plantForgeries writes files into tree that would forge the grade if the
// grader let them run, and returns the sentinel file they would write.
func plantForgeries(t *testing.T, tree string) string {
	t.Helper()
	sentinel := filepath.Join(t.TempDir(), "forgery-ran")
	py := forgery(sentinel)
	tests := forgedTests(sentinel)
	files := map[string]string{
		"conftest.py":              py + "def pytest_collection_modifyitems(items):\n    items.clear()\n",
		"sitecustomize.py":         py,
		"usercustomize.py":         py,
		"forgeplugin.py":           py,
		"forge.pth":                "import forgeplugin\n",
		"pytest.ini":               "[pytest]\naddopts = -p forgeplugin\n",
		"tox.ini":                  "[pytest]\naddopts = -p forgeplugin\n",
		"setup.cfg":                "[tool:pytest]\naddopts = -p forgeplugin\n",
		"pyproject.toml":           "[tool.pytest.ini_options]\naddopts = \"-p forgeplugin\"\n",
		"unittest.py":              py,
		"json.py":                  py,
		"run_hidden.py":            py,
		"test_semver_hidden.py":    tests,
		"tests/test.sh":            "echo forged\n",
		"tests/conftest.py":        py,
		"tests/test_forge.py":      tests,
		"reward.json":              `{"reward": 1, "passed": 116, "total": 116}`,
		"__pycache__/semver.pyc":   "not bytecode",
		"semver/__init__.py":       py,
		"logs/verifier/reward.txt": "1\n",
	}
	tasktest.WriteFiles(t, tree, files)
	return sentinel
}

// TestSemverGradeIgnoresForgeries checks that files planted in the agent's
// tree (conftest.py, sitecustomize.py, pytest.ini, a .pth file, fake hidden
// tests, modules shadowing the stdlib) and lies told by semver.py itself
// change nothing: the grade is what it is without them.
func TestSemverGradeIgnoresForgeries(t *testing.T) {
	tasktest.NeedPython(t)
	for _, tc := range []struct {
		name  string
		edits [][2]string
	}{
		{"reference", nil},
		{"prerelease rule ignored", [][2]string{noPrereleaseRule}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			plain := grade(t, workDir(t, reference(t, tc.edits...)))

			tree := workDir(t, reference(t, tc.edits...)+semverLie)
			sentinel := plantForgeries(t, tree)
			before := tasktest.Snapshot(t, tree)
			res := grade(t, tree)
			assertGrade(t, res, plain.Result.Passed)
			assert.Equal(t, plain.Result, res.Result, "the same RESULT as without the planted files")
			assert.Equal(t, plain.Reward, res.Reward, "the same reward as without the planted files")
			assert.NoFileExists(t, sentinel, "no planted file ran")
			assert.Equal(t, before, tasktest.Snapshot(t, tree), "the agent's tree is unchanged")
		})
	}
}

// TestSemverGradeReadsOnlySemverPy puts FIFOs everywhere in the agent's tree
// but semver.py: opening any of them would block, and the hang guard would
// fail the test.
func TestSemverGradeReadsOnlySemverPy(t *testing.T) {
	tasktest.NeedPython(t)
	tree := workDir(t, reference(t))
	for _, name := range []string{"conftest.py", "sitecustomize.py", "usercustomize.py", "pytest.ini",
		"setup.cfg", "tox.ini", "pyproject.toml", "test_semver_hidden.py", "forge.pth", "semver.pyc",
		"run_hidden.py", "unittest.py"} {
		require.NoError(t, syscall.Mkfifo(filepath.Join(tree, name), 0o644))
	}
	require.NoError(t, os.Mkdir(filepath.Join(tree, "tests"), 0o755))
	require.NoError(t, syscall.Mkfifo(filepath.Join(tree, "tests", "test_semver_hidden.py"), 0o644))
	before := tasktest.Snapshot(t, tree)
	assertGrade(t, grade(t, tree), semverTotal)
	assert.Equal(t, before, tasktest.Snapshot(t, tree), "the agent's tree is unchanged")
}

func TestSemverSolveScript(t *testing.T) {
	tasktest.NeedPython(t)
	solve := filepath.Join(taskDir(t), "solution", "solve.sh")

	t.Run("plain work dir, Harbor's way (cwd)", func(t *testing.T) {
		dir := workDir(t, "")
		code, out := tasktest.Run(t, dir, baseEnv(), "bash", solve)
		require.Equal(t, 0, code, out)
		assertGrade(t, grade(t, dir), semverTotal)
	})
	t.Run("git work dir by FLIGHTDECK_WORKDIR", func(t *testing.T) {
		dir := workDir(t, "")
		tasktest.WriteFile(t, filepath.Join(dir, "README.md"), "base\n")
		env := tasktest.GitRepo(t, dir, baseEnv())
		code, out := tasktest.Run(t, t.TempDir(), append(env, "FLIGHTDECK_WORKDIR="+dir), "bash", solve)
		require.Equal(t, 0, code, out)
		code, out = tasktest.Run(t, dir, env, "git", "show", "--name-only", "--format=%s", "HEAD")
		require.Equal(t, 0, code, out)
		assert.Equal(t, "Add semver.py\n\nsemver.py", strings.TrimSpace(out))
		code, out = tasktest.Run(t, dir, env, "git", "status", "--porcelain")
		require.Equal(t, 0, code, out)
		assert.Empty(t, out, "work dir clean after the commit")
		assertGrade(t, grade(t, dir), semverTotal)
	})
}

func TestSemverTaskFiles(t *testing.T) {
	task := taskDir(t)
	loaded, err := tasks.Load(task, tasks.LoadOptions{Local: true})
	require.NoError(t, err, "the task loads (files_digest matches tests/)")
	assert.Equal(t, "semver", loaded.ID)
	assert.Equal(t, "bash tests/test.sh", loaded.GraderCommand())

	src, err := os.ReadFile(filepath.Join(task, "task.toml"))
	require.NoError(t, err)
	var cfg tasks.Config
	require.NoError(t, toml.Unmarshal(src, &cfg))
	assert.Equal(t, "1.4", cfg.SchemaVersion)
	require.NotNil(t, cfg.Task)
	assert.Equal(t, "flightdeck/semver", cfg.Task.Name)
	assert.NotEmpty(t, cfg.Task.Version)
	assert.NotEmpty(t, cfg.Task.Description)
	require.NotNil(t, cfg.Agent.TimeoutSec)
	assert.Positive(t, *cfg.Agent.TimeoutSec)
	require.NotNil(t, cfg.Verifier.TimeoutSec)
	assert.Equal(t, 600.0, *cfg.Verifier.TimeoutSec)
	require.NotNil(t, cfg.Environment.BuildTimeoutSec)
	assert.Equal(t, 1.0, cfg.Environment.CPUs)
	assert.Equal(t, int64(1024), cfg.Environment.MemoryMB)
	assert.Equal(t, []string{"smoke"}, cfg.Flightdeck.Tags)
	assert.False(t, cfg.Flightdeck.Sealed)
	assert.Equal(t, "bare", cfg.Flightdeck.Environment)
	require.NotNil(t, cfg.Flightdeck.Grader)
	assert.Equal(t, "bash tests/test.sh", cfg.Flightdeck.Grader.Command)
	digest, err := tasks.FilesDigest(task)
	require.NoError(t, err)
	assert.Equal(t, digest, cfg.Flightdeck.Grader.FilesDigest, "files_digest matches tests/")

	dockerfile, err := os.ReadFile(filepath.Join(task, "environment", "Dockerfile"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(dockerfile), "FROM python:3.12-slim\n"), "Dockerfile starts FROM python:3.12-slim")
	assert.Contains(t, string(dockerfile), "\nWORKDIR ")

	// The instruction documents every function the hidden tests call, and
	// every keyword argument they pass.
	instruction, err := os.ReadFile(filepath.Join(task, "instruction.md"))
	require.NoError(t, err)
	calls := map[string]bool{}
	kwargs := map[string]bool{}
	for _, c := range readOracle(t).Cases {
		calls[c.Call] = true
		for k := range c.Kwargs {
			kwargs[k] = true
		}
	}
	var missing []string
	for call := range calls {
		if !strings.Contains(string(instruction), "`"+call+"(") && !strings.Contains(string(instruction), "`"+call+"`") {
			missing = append(missing, call)
		}
	}
	for kw := range kwargs {
		if !strings.Contains(string(instruction), kw+"=") {
			missing = append(missing, kw+"=")
		}
	}
	sort.Strings(missing)
	assert.Empty(t, missing, "instruction.md documents every call and keyword the hidden tests use")

	// Nothing of node-semver's is committed beside the generator.
	err = filepath.WalkDir(task, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		assert.NotEqual(t, "node_modules", d.Name(), "%s: node-semver's code is never committed", p)
		assert.False(t, strings.HasSuffix(d.Name(), ".tgz"), "%s: no tarball in the task", p)
		return nil
	})
	require.NoError(t, err)
}

// needBaseImage skips when there is no Docker engine (fails instead under
// FLIGHTDECK_REQUIRE_DOCKER=1) and fails when the base image is missing.
func needBaseImage(t *testing.T) {
	t.Helper()
	testenv.Short(t)
	testenv.Tool(t, "docker")
	if code, out, err := tasktest.RunErr("", os.Environ(), "docker", "info", "--format", "{{.ServerVersion}}"); err != nil || code != 0 {
		testenv.Missing(t, "no Docker engine: %v %s", err, out)
	}
	code, out, err := tasktest.RunErr("", os.Environ(), "docker", "image", "inspect", "--format", "{{.Id}}", baseImage)
	require.NoError(t, err)
	require.Equal(t, 0, code, "image %s is missing: run `make base-image` first\n%s", baseImage, out)
}

// gradeInBaseImage runs tests/test.sh in a throwaway container of the base
// image the way Harbor does: the tests at /tests... here /task/tests, the
// agent's tree as the working directory, the reward dir mounted.
func gradeInBaseImage(t *testing.T, tree string, mounts ...string) tasktest.GradeResult {
	t.Helper()
	rewardDir := t.TempDir()
	name := fmt.Sprintf("flightdeck-test-semver-%d-%d", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() {
		// --rm removes it; this is for a run the hang guard cut short.
		_, _, _ = tasktest.RunErr("", os.Environ(), "docker", "rm", "-f", name)
	})
	args := []string{"run", "--rm", "--name", name, "--label", "flightdeck.test=smoke-semver",
		"--network", "none", "--user", fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()),
		"-v", taskDir(t) + ":/task:ro", "-v", tree + ":/app", "-v", rewardDir + ":/reward",
		"-e", "FLIGHTDECK_REWARD_DIR=/reward", "-w", "/app"}
	for _, m := range mounts {
		args = append(args, "-v", m+":"+m)
	}
	args = append(args, baseImage, "bash", "/task/tests/test.sh")
	code, out := tasktest.Run(t, "", os.Environ(), "docker", args...)
	res := tasktest.GradeResult{Exit: code, Output: out}
	res.Reward = tasktest.ReadReward(t, filepath.Join(rewardDir, "reward.json"), out)
	res.Result = tasktest.ParseResult(t, out)
	return res
}

// TestSemverGradeInBaseImage runs the grader where pytest is installed (the
// host's python3 may have none), so the pytest path is exercised: the same
// grades as the unittest path, planted files ignored.
func TestSemverGradeInBaseImage(t *testing.T) {
	tasktest.NeedPython(t)
	needBaseImage(t)

	t.Run("reference", func(t *testing.T) {
		t.Parallel()
		res := gradeInBaseImage(t, workDir(t, reference(t)))
		assert.Contains(t, res.Output, "with pytest")
		assertGrade(t, res, semverTotal)
	})
	t.Run("prerelease rule ignored", func(t *testing.T) {
		t.Parallel()
		src := reference(t, noPrereleaseRule)
		res := gradeInBaseImage(t, workDir(t, src))
		assert.Contains(t, res.Output, "with pytest")
		assertGrade(t, res, res.Result.Passed)
		assertNoPrereleaseRule(t, res.Result)
		onHost := grade(t, workDir(t, src))
		assert.Equal(t, onHost.Result, res.Result, "pytest and unittest count alike")
	})
	t.Run("empty work dir", func(t *testing.T) {
		t.Parallel()
		assertGrade(t, gradeInBaseImage(t, workDir(t, "")), 0)
	})
	t.Run("forgeries", func(t *testing.T) {
		t.Parallel()
		tree := workDir(t, reference(t)+semverLie)
		sentinel := plantForgeries(t, tree)
		before := tasktest.Snapshot(t, tree)
		res := gradeInBaseImage(t, tree, filepath.Dir(sentinel))
		assert.Contains(t, res.Output, "with pytest")
		assertGrade(t, res, semverTotal)
		assert.NoFileExists(t, sentinel, "no planted file ran")
		assert.Equal(t, before, tasktest.Snapshot(t, tree), "the agent's tree is unchanged")
	})
}

// TestSemverGradeUnwritableRewardDir: on hangar the grade goes to
// $HANGAR_GRADE_OUT and Harbor's reward dir need not be writable; without
// $HANGAR_GRADE_OUT an unwritable reward dir is a grading failure (exit 2).
func TestSemverGradeUnwritableRewardDir(t *testing.T) {
	tasktest.NeedPython(t)
	scratch := t.TempDir()
	blocker := filepath.Join(scratch, "file")
	tasktest.WriteFile(t, blocker, "a file, so no directory can be made under it\n")
	rewardDir := filepath.Join(blocker, "reward")
	tree := workDir(t, reference(t))

	gradeOut := filepath.Join(scratch, "grade.json")
	env := append(baseEnv(), "HANGAR_REPO="+tree, "FLIGHTDECK_REWARD_DIR="+rewardDir, "HANGAR_GRADE_OUT="+gradeOut)
	code, out := tasktest.Run(t, taskDir(t), env, "bash", filepath.Join(taskDir(t), "tests", "test.sh"))
	assert.Equal(t, 0, code, out)
	detail := tasktest.ReadReward(t, gradeOut, out)
	assert.Equal(t, 1.0, detail["reward"])
	assert.Equal(t, float64(semverTotal), detail["passed"])
	assert.Equal(t, semverTotal, tasktest.ParseResult(t, out).Passed)

	env = append(baseEnv(), "HANGAR_REPO="+tree, "FLIGHTDECK_REWARD_DIR="+rewardDir)
	code, out = tasktest.Run(t, taskDir(t), env, "bash", filepath.Join(taskDir(t), "tests", "test.sh"))
	assert.Equal(t, 2, code, "grading failed: no reward written anywhere\n%s", out)
}
