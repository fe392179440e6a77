package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/tasks"
)

// runTaskCLI runs flightdeck with args, cwd as the working directory.
func runTaskCLI(t *testing.T, cwd string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &cliEnv{stdout: &out, stderr: &errb, cwd: cwd}
	code = dispatch(context.Background(), env, args)
	return code, out.String(), errb.String()
}

// TestTaskNewCheckDigestFlow: a new task passes check; a changed byte in
// tests/ fails check and loading with both digests shown; digest --write
// repairs it.
func TestTaskNewCheckDigestFlow(t *testing.T) {
	cwd := t.TempDir()
	code, out, errOut := runTaskCLI(t, cwd, "task", "new", "x")
	require.Equal(t, exitOK, code, "%s%s", out, errOut)
	assert.Contains(t, out, "created x")

	code, out, _ = runTaskCLI(t, cwd, "task", "check", "x")
	assert.Equal(t, exitOK, code, out)
	assert.Contains(t, out, "warning [template.placeholder]", "what is left to write")
	assert.Contains(t, out, "1 task checked: 0 errors, 4 warnings")

	dir := filepath.Join(cwd, "x")
	recorded, err := tasks.RecordedFilesDigest(dir)
	require.NoError(t, err)
	hidden := filepath.Join(dir, "tests", "test_hidden.py")
	b, err := os.ReadFile(hidden)
	require.NoError(t, err)
	b[0] ^= 0x20 // change one byte
	require.NoError(t, os.WriteFile(hidden, b, 0o644))
	computed, err := tasks.FilesDigest(dir)
	require.NoError(t, err)
	require.NotEqual(t, recorded, computed)

	code, out, _ = runTaskCLI(t, cwd, "task", "check", "x")
	assert.Equal(t, exitFindings, code, out)
	assert.Contains(t, out, filepath.Join("x", "task.toml")+": error [files-digest]")
	assert.Contains(t, out, recorded)
	assert.Contains(t, out, computed)
	_, err = tasks.Load(dir, tasks.LoadOptions{Local: true})
	require.Error(t, err)
	assert.Contains(t, err.Error(), recorded)
	assert.Contains(t, err.Error(), computed)

	code, out, _ = runTaskCLI(t, cwd, "task", "digest", "x")
	assert.Equal(t, exitOK, code, out)
	assert.Contains(t, out, "files_digest  "+computed)
	assert.Contains(t, out, "task.toml records "+recorded)
	harbor, err := tasks.HarborDigest(dir)
	require.NoError(t, err)
	assert.Contains(t, out, "harbor_digest "+harbor+"  (Harbor's content hash")

	code, out, _ = runTaskCLI(t, cwd, "task", "digest", "--write", "x")
	assert.Equal(t, exitOK, code, out)
	assert.Contains(t, out, "written to task.toml")
	got, err := tasks.RecordedFilesDigest(dir)
	require.NoError(t, err)
	assert.Equal(t, computed, got)

	code, out, _ = runTaskCLI(t, cwd, "task", "check", "x")
	assert.Equal(t, exitOK, code, out)
	_, err = tasks.Load(dir, tasks.LoadOptions{Local: true})
	assert.NoError(t, err)

	code, out, _ = runTaskCLI(t, cwd, "task", "digest", "--write", "x")
	assert.Equal(t, exitOK, code, out)
	assert.Contains(t, out, "matches task.toml", "a second --write has nothing to write")
}

func TestTaskCheckJSON(t *testing.T) {
	cwd := t.TempDir()
	require.NoError(t, tasks.New(filepath.Join(cwd, "good"), ""))
	require.NoError(t, tasks.New(filepath.Join(cwd, "bad"), ""))
	require.NoError(t, os.Remove(filepath.Join(cwd, "bad", "instruction.md")))
	require.NoError(t, os.Remove(filepath.Join(cwd, "bad", "environment", "Dockerfile")))

	code, out, _ := runTaskCLI(t, cwd, "task", "check", "--json", "good", "bad")
	assert.Equal(t, exitFindings, code)
	var res struct {
		Tasks []struct {
			Dir      string          `json:"dir"`
			Findings []tasks.Finding `json:"findings"`
		} `json:"tasks"`
		Errors   int `json:"errors"`
		Warnings int `json:"warnings"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	require.Len(t, res.Tasks, 2)
	assert.Equal(t, "good", res.Tasks[0].Dir)
	assert.NotNil(t, res.Tasks[0].Findings)
	for _, f := range res.Tasks[0].Findings {
		assert.Equal(t, "template.placeholder", f.Rule, "a new task has only its to-do list")
	}
	var rules []string
	for _, f := range res.Tasks[1].Findings {
		if f.Rule == "template.placeholder" {
			continue
		}
		rules = append(rules, f.Rule)
		assert.Equal(t, tasks.SeverityError, f.Severity)
		assert.True(t, strings.HasPrefix(f.Path, "bad"), f.Path)
	}
	assert.ElementsMatch(t, []string{"layout.instruction", "layout.environment"}, rules, "every finding, not just the first")
	assert.Equal(t, 2, res.Errors)
	assert.Contains(t, out, `"path": "bad/instruction.md"`)
}

func TestTaskCheckWarningsExitZero(t *testing.T) {
	cwd := t.TempDir()
	dir := filepath.Join(cwd, "sealed")
	require.NoError(t, tasks.New(dir, ""))
	p := filepath.Join(dir, "task.toml")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, bytes.Replace(b, []byte("sealed = false"), []byte("sealed = true"), 1), 0o644))
	code, out, _ := runTaskCLI(t, cwd, "task", "check", "sealed")
	assert.Equal(t, exitOK, code, out)
	assert.Contains(t, out, "warning [sealed]")
	assert.Contains(t, out, "0 errors, 5 warnings")
}

func TestTaskDigestJSON(t *testing.T) {
	cwd := t.TempDir()
	dir := filepath.Join(cwd, "t")
	require.NoError(t, tasks.New(dir, "acme/t"))
	code, out, _ := runTaskCLI(t, cwd, "task", "digest", "--json", dir)
	require.Equal(t, exitOK, code, out)
	var res struct {
		Tasks []struct {
			Dir                 string `json:"dir"`
			TaskDigest          string `json:"task_digest"`
			FilesDigest         string `json:"files_digest"`
			RecordedFilesDigest string `json:"recorded_files_digest"`
			Written             bool   `json:"written"`
		} `json:"tasks"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	require.Len(t, res.Tasks, 1)
	td, err := tasks.TaskDigest(dir)
	require.NoError(t, err)
	fd, err := tasks.FilesDigest(dir)
	require.NoError(t, err)
	assert.Equal(t, dir, res.Tasks[0].Dir)
	assert.Equal(t, td, res.Tasks[0].TaskDigest)
	assert.Equal(t, fd, res.Tasks[0].FilesDigest)
	assert.Equal(t, fd, res.Tasks[0].RecordedFilesDigest)
	assert.False(t, res.Tasks[0].Written)
}

func TestTaskDigestError(t *testing.T) {
	cwd := t.TempDir()
	dir := filepath.Join(cwd, "t")
	require.NoError(t, tasks.New(dir, ""))
	require.NoError(t, os.Symlink("test.sh", filepath.Join(dir, "tests", "link.sh")))
	code, out, errOut := runTaskCLI(t, cwd, "task", "digest", "t")
	assert.Equal(t, exitFindings, code, out)
	assert.Contains(t, errOut, "symlink")
	assert.Contains(t, errOut, filepath.Join("t", "tests", "link.sh"))
}
