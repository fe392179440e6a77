package tasks

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/internal/testenv"
)

func TestNewPassesCheck(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fix-retry")
	require.NoError(t, New(dir, ""))
	assertOnlyPlaceholders(t, Check(dir), "a new task passes check at once, its to-do list as warnings")
	task, err := Load(dir, LoadOptions{Local: true})
	require.NoError(t, err)
	assert.Equal(t, "fix-retry", task.ID)
	assert.Equal(t, "flightdeck/fix-retry", task.Config.Task.Name)
	assert.Equal(t, "1.4", task.Config.SchemaVersion)
	assert.Equal(t, "bare", task.Config.Flightdeck.Environment)
	assert.False(t, task.Config.Flightdeck.Sealed)
	assert.Equal(t, "bash tests/test.sh", task.GraderCommand())
	assert.True(t, task.HasSolution())
	assert.NotNil(t, task.Config.Agent.TimeoutSec)
	assert.NotNil(t, task.Config.Verifier.TimeoutSec)
	for _, f := range []string{"tests/test.sh", "solution/solve.sh"} {
		info, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o755), info.Mode().Perm(), f)
	}
	info, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), info.Mode().Perm())
	entries, err := os.ReadDir(filepath.Dir(dir))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary directory is left behind")
}

func TestNewNames(t *testing.T) {
	tests := []struct {
		path, name string
		wantName   string
		wantErr    string
	}{
		{"x", "acme/thing", "acme/thing", ""},
		{"x", "acme/has.dots_and-dash", "acme/has.dots_and-dash", ""},
		{"x", "no-org", "", "org/name"},
		{"x", "a/b/c", "", "org/name"},
		{"x", "acme/_hidden", "", "must match"},
		{"x", "acme/" + strings.Repeat("y", 41), "", "must match"},
		{"bad name", "", "", "must be org/name"},
		{"_x", "", "", "--name"},
	}
	for _, tt := range tests {
		dir := filepath.Join(t.TempDir(), tt.path)
		err := New(dir, tt.name)
		if tt.wantErr != "" {
			require.Error(t, err, "%s %s", tt.path, tt.name)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.NoDirExists(t, dir)
			continue
		}
		require.NoError(t, err)
		task, err := Load(dir, LoadOptions{})
		require.NoError(t, err)
		assert.Equal(t, tt.wantName, task.Config.Task.Name)
	}
}

func TestNewRefusesNonEmptyPath(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"keep.txt": "mine"})
	err := New(dir, "acme/x")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not empty")
	b, err := os.ReadFile(filepath.Join(dir, "keep.txt"))
	require.NoError(t, err)
	assert.Equal(t, "mine", string(b))

	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	assert.ErrorContains(t, New(file, "acme/x"), "not a directory")

	empty := filepath.Join(t.TempDir(), "empty")
	require.NoError(t, os.Mkdir(empty, 0o755))
	require.NoError(t, New(empty, "acme/x"), "an empty directory is fine")
	assertOnlyPlaceholders(t, Check(empty), "an empty directory is fine")
}

// TestTemplateFiles checks the template against the spec's "Writing a safe
// test.sh" and the issue's list of files.
func TestTemplateFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t")
	require.NoError(t, New(dir, ""))
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		require.NoError(t, err)
		return string(b)
	}
	testSh := read("tests/test.sh")
	for _, want := range []string{
		// 1. things found by environment
		`${FLIGHTDECK_WORKDIR:-${HANGAR_REPO:-$PWD}}`,
		`${FLIGHTDECK_REWARD_DIR:-/logs/verifier}`,
		`HANGAR_GRADE_OUT`,
		`dirname "${BASH_SOURCE[0]}"`,
		// 2. a fresh copy outside the agent's tree
		`mktemp -d /tmp/`,
		`CODE_UNDER_TEST=(`,
		// 3. isolated Python
		`python3 -I -m pytest --noconftest -p no:cacheprovider -c /dev/null -o addopts=`,
		`PYTHONNOUSERSITE=1`,
		`unset PYTHONPATH PYTEST_ADDOPTS PYTEST_PLUGINS`,
		`python3 -I -c "$RUN_UNITTEST"`,
		// 5. reward last, numbers only, RESULT line, exit code
		`echo "RESULT $result"`,
		`reward.json`,
		`exit 1`,
	} {
		assert.Contains(t, testSh, want)
	}
	assert.Regexp(t, regexp.MustCompile(`(?m)^FROM python:3\.12-slim$`), read("environment/Dockerfile"))
	assert.Regexp(t, regexp.MustCompile(`(?m)^WORKDIR /\S+$`), read("environment/Dockerfile"))
	assert.Contains(t, read("tests/test_hidden.py"), "self.fail(")
	assert.Contains(t, read("task.toml"), `files_digest = "sha256:`)
	assert.Contains(t, read("solution/solve.sh"), "app/__init__.py")
}

// runTestSh runs the template's tests/test.sh on the host as a grader would,
// with the work dir and a fresh reward dir; python3 decides whether pytest
// or unittest runs.
func runTestSh(t *testing.T, task, work string, extraEnv ...string) (out string, exitCode int, reward map[string]any, rewardDir string) {
	t.Helper()
	rewardDir = filepath.Join(t.TempDir(), "reward")
	cmd := exec.Command("bash", "tests/test.sh")
	cmd.Dir = task
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + t.TempDir(),
		"FLIGHTDECK_WORKDIR=" + work,
		"FLIGHTDECK_REWARD_DIR=" + rewardDir,
	}, extraEnv...)
	b, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		exitCode = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	if raw, err := os.ReadFile(filepath.Join(rewardDir, "reward.json")); err == nil {
		require.NoError(t, json.Unmarshal(raw, &reward), "reward.json: %s", raw)
	}
	return string(b), exitCode, reward, rewardDir
}

func needBashPython(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"bash", "python3"} {
		testenv.Tool(t, tool)
	}
}

// newGradedTask makes a template task and a work dir where solve.sh ran.
func newGradedTask(t *testing.T) (task, work string) {
	t.Helper()
	task = filepath.Join(t.TempDir(), "graded")
	require.NoError(t, New(task, "acme/graded"))
	work = t.TempDir()
	cmd := exec.Command("bash", filepath.Join(task, "solution", "solve.sh"))
	cmd.Dir = work
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return task, work
}

const passingHidden = `import unittest

import app


class Hidden(unittest.TestCase):
    def test_doc(self):
        self.assertEqual(app.__doc__, "TODO: the reference solution.")

    def test_two(self):
        self.assertEqual(1 + 1, 2)
`

func TestTemplateTestShPlaceholderFails(t *testing.T) {
	needBashPython(t)
	task, work := newGradedTask(t)
	gradeOut := filepath.Join(t.TempDir(), "grade.json")
	out, code, reward, _ := runTestSh(t, task, work, "HANGAR_GRADE_OUT="+gradeOut)
	assert.NotEqual(t, 0, code, "reward 0 exits non-zero: %s", out)
	assert.Equal(t, map[string]any{"reward": 0.0, "passed": 0.0, "total": 1.0}, reward, "numbers only")
	assert.Regexp(t, `(?m)^RESULT \{"reward": 0, "passed": 0, "total": 1, `, out)
	grade, err := os.ReadFile(gradeOut)
	require.NoError(t, err)
	assert.Contains(t, string(grade), "test_placeholder")
}

func TestTemplateTestShPasses(t *testing.T) {
	needBashPython(t)
	task, work := newGradedTask(t)
	require.NoError(t, os.WriteFile(filepath.Join(task, "tests", "test_hidden.py"), []byte(passingHidden), 0o644))
	out, code, reward, _ := runTestSh(t, task, work)
	assert.Equal(t, 0, code, out)
	assert.Equal(t, map[string]any{"reward": 1.0, "passed": 2.0, "total": 2.0}, reward)
	assert.Contains(t, out, `RESULT {"reward": 1, "passed": 2, "total": 2`)
}

// TestTemplateTestShResistsForgery: what the agent leaves in its tree, or in
// the environment, does not change the grade.
func TestTemplateTestShResistsForgery(t *testing.T) {
	needBashPython(t)
	task, work := newGradedTask(t)
	marker := filepath.Join(t.TempDir(), "ran")
	hook := "open(" + pyQuote(marker) + ", 'a').write('x')\n"
	writeTree(t, work, map[string]string{
		"conftest.py":              hook + "import pytest\ndef pytest_collection_modifyitems(items):\n    items.clear()\n",
		"sitecustomize.py":         hook,
		"usercustomize.py":         hook,
		"app/sitecustomize.py":     hook,
		"app/conftest.py":          hook,
		"app/test_agent.py":        "def test_extra():\n    pass\n",
		"pytest.ini":               "[pytest]\naddopts = -k nothing\n",
		"not_under_test/secret.py": "x = 1\n",
	})
	// The placeholder hidden test still fails: the reward is 0.
	out, code, reward, rewardDir := runTestSh(t, task, work,
		"PYTHONPATH="+work, "PYTEST_ADDOPTS=-k nothing", "PYTEST_PLUGINS=conftest")
	assert.NotEqual(t, 0, code, out)
	assert.Equal(t, 0.0, reward["reward"])
	assert.Equal(t, 1.0, reward["total"], "only the hidden tests count: %s", out)
	assert.NoFileExists(t, marker, "none of the agent's hooks ran")

	// A reward the agent wrote before grading is not what is read.
	require.NoError(t, os.WriteFile(filepath.Join(task, "tests", "test_hidden.py"), []byte(passingHidden), 0o644))
	require.NoError(t, os.MkdirAll(rewardDir, 0o755))
	_, _, reward, _ = runTestSh(t, task, work)
	assert.Equal(t, 1.0, reward["reward"])
	require.NoError(t, os.WriteFile(filepath.Join(task, "tests", "test_hidden.py"), []byte(passingHidden+"\n    def test_fails(self):\n        self.fail('no')\n"), 0o644))
	_, code, reward, _ = runTestSh(t, task, work)
	assert.NotEqual(t, 0, code)
	assert.Equal(t, map[string]any{"reward": 0.0, "passed": 2.0, "total": 3.0}, reward)
}

func TestTemplateTestShMissingCode(t *testing.T) {
	needBashPython(t)
	task, _ := newGradedTask(t)
	require.NoError(t, os.WriteFile(filepath.Join(task, "tests", "test_hidden.py"), []byte(passingHidden), 0o644))
	out, code, reward, _ := runTestSh(t, task, t.TempDir())
	assert.NotEqual(t, 0, code, out)
	assert.Equal(t, 0.0, reward["reward"])
	assert.Contains(t, out, "app is missing from the work dir")
}

func pyQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// baseImage is the offline image with python3-pytest the engine tests use.
const baseImage = "flightdeck/base:bookworm"

// needDockerBase skips under -short (which touches no engine) and
// without a Docker engine (unless FLIGHTDECK_REQUIRE_DOCKER=1), and fails
// without the base image.
func needDockerBase(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the template's pytest path runs in a container")
	}
	testenv.Tool(t, "docker")
	if err := exec.Command("docker", "info").Run(); err != nil {
		testenv.Missing(t, "no Docker engine (docker info: %v): the template's pytest path is not run", err)
	}
	if err := exec.Command("docker", "image", "inspect", baseImage).Run(); err != nil {
		t.Fatalf("image %s is missing: run `make base-image`", baseImage)
	}
}

// TestTemplateTestShPytest runs test.sh where pytest is installed (the base
// image), with the agent's conftest.py, pytest.ini and pytest variables in
// the way.
func TestTemplateTestShPytest(t *testing.T) {
	needDockerBase(t)
	task, work := newGradedTask(t)
	writeTree(t, work, map[string]string{
		"conftest.py":       "import pytest\ndef pytest_collection_modifyitems(items):\n    items.clear()\n",
		"app/conftest.py":   "raise SystemExit('agent conftest ran')\n",
		"pytest.ini":        "[pytest]\naddopts = -k nothing\n",
		"app/test_agent.py": "def test_extra():\n    pass\n",
	})
	run := func(hidden string) (string, map[string]any) {
		t.Helper()
		require.NoError(t, os.WriteFile(filepath.Join(task, "tests", "test_hidden.py"), []byte(hidden), 0o644))
		// Unique across processes: another test run beside this one makes
		// containers of the same temp dir numbers.
		name := fmt.Sprintf("flightdeck-tasks-test-%d-%d", os.Getpid(), time.Now().UnixNano())
		t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", name).Run() })
		cmd := exec.Command("docker", "run", "--rm", "--name", name, "--network", "none",
			"--label", "flightdeck.managed=true", "--label", "flightdeck.test=tasks",
			"-v", task+":/task:ro", "-v", work+":/work:ro",
			"-e", "FLIGHTDECK_WORKDIR=/work", "-e", "FLIGHTDECK_REWARD_DIR=/out",
			"-e", "PYTEST_ADDOPTS=-k nothing", "-e", "PYTHONPATH=/work",
			baseImage, "bash", "-c", `cd /task && bash tests/test.sh; echo "EXIT=$?"; echo "REWARD=$(cat /out/reward.json)"`)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		m := regexp.MustCompile(`(?m)^REWARD=(.*)$`).FindStringSubmatch(string(out))
		require.NotNil(t, m, "%s", out)
		var reward map[string]any
		require.NoError(t, json.Unmarshal([]byte(m[1]), &reward), "%s", out)
		return string(out), reward
	}
	out, reward := run(passingHidden)
	assert.Contains(t, out, `"runner": "pytest"`)
	assert.Contains(t, out, "EXIT=0")
	assert.Equal(t, map[string]any{"reward": 1.0, "passed": 2.0, "total": 2.0}, reward, out)

	out, reward = run(passingHidden + "\n    def test_fails(self):\n        self.fail('no')\n")
	assert.Contains(t, out, "EXIT=1")
	assert.Equal(t, map[string]any{"reward": 0.0, "passed": 2.0, "total": 3.0}, reward, out)
	assert.Contains(t, out, "test_hidden.Hidden.test_fails")
}

// assertOnlyPlaceholders checks that findings are warnings of the
// template's placeholders, and that there are some.
func assertOnlyPlaceholders(t *testing.T, findings []Finding, msg string) {
	t.Helper()
	assert.NotEmpty(t, findings, msg)
	for _, f := range findings {
		assert.Equal(t, rulePlaceholder, f.Rule, "%s: %s", msg, f)
		assert.Equal(t, SeverityWarning, f.Severity, msg)
	}
}
