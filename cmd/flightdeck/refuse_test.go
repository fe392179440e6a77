package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What task check calls an error, every command that runs a task refuses:
// a refused task exits 4 naming the file and the rule, before any engine
// is asked for anything (none answers here), and nothing is graded in
// another mode. Each kind of error the loader shares with check, through
// each command.
func TestEveryCommandRefusesCheckErrors(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-engine.sock"))
	kinds := []struct {
		name   string
		break_ func(t *testing.T, dir string)
		file   string // named on the refusal
		rule   string
	}{
		{"unknown key", func(t *testing.T, dir string) {
			edit(t, filepath.Join(dir, "task.toml"), "\ncommand = ", "\ncomand = ")
		}, "task.toml", "comand: unknown key"},
		{"test.sh syntax", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "tests", "test.sh"), "#!/usr/bin/env bash\nif true; then\n  echo 1\n")
		}, "tests/test.sh", "syntax error"},
		{"solve.sh syntax", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "solution", "solve.sh"), "#!/usr/bin/env bash\nfor f in; do\n")
		}, "solution/solve.sh", "syntax error"},
		{"empty instruction", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "instruction.md"), "\n  \n")
		}, "instruction.md", "is empty"},
	}
	commands := []struct {
		args []string // the task dir is appended
		code int
	}{
		{[]string{"task", "check"}, exitFindings},
		{[]string{"run", "--results", "results", "--path"}, exitTask},
		{[]string{"task", "verify", "--results", "results"}, exitTask},
		{[]string{"build", "--results", "results", "--path"}, exitTask},
		{[]string{"task", "shell", "--"}, exitTask},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			cwd := t.TempDir()
			code, _, stderr := runTaskCLI(t, cwd, "task", "new", "broken")
			require.Equal(t, 0, code, stderr)
			dir := filepath.Join(cwd, "broken")
			k.break_(t, dir)
			if k.file == "tests/test.sh" {
				code, _, stderr := runTaskCLI(t, cwd, "task", "digest", "--write", "broken")
				require.Equal(t, 0, code, stderr)
			}
			for _, c := range commands {
				args := append(append([]string{}, c.args...), "broken")
				if args[1] == "shell" {
					args = []string{"task", "shell", "broken", "--", "true"}
				}
				t.Run(strings.Join(c.args[:2], " "), func(t *testing.T) {
					code, stdout, stderr := runTaskCLI(t, cwd, args...)
					out := stdout + stderr
					assert.Equal(t, c.code, code, out)
					assert.Contains(t, out, k.file)
					assert.Contains(t, out, k.rule)
					assert.NotContains(t, out, "no Docker engine answers", "refused before the engine is asked")
					assert.NotRegexp(t, `(?m)^(passed|failed|ok) `, out, "nothing is graded")
					if args[0] == "build" {
						assert.Contains(t, out, "0 failed, 1 refused", "the count says what the lines say")
					}
				})
			}
			assert.NoDirExists(t, filepath.Join(cwd, "results", ".work"))
		})
	}
}

func edit(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(b), old)
	write(t, path, strings.Replace(string(b), old, new, 1))
}

func write(t *testing.T, path, body string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(body), 0o755))
}
