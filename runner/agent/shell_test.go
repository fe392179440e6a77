package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/sandbox/sandboxtest"
	"github.com/flightdeck/flightdeck/tasks"
)

// shellTask is a task dir with a solution and tests; native gives it a
// grader command.
func shellTask(t *testing.T, native bool) *tasks.Task {
	dir := t.TempDir()
	for name, body := range map[string]string{"solution/solve.sh": "echo done\n", "tests/test.sh": "echo 1\n"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	task := &tasks.Task{ID: "demo", Dir: dir}
	if native {
		task.Config.Flightdeck.Grader = &tasks.GraderKeys{Command: "bash tests/test.sh"}
	}
	return task
}

// shellSession is a session in a fake container whose execs run run
// (housekeeping as root does nothing).
func shellSession(t *testing.T, task *tasks.Task, run func(sandbox.ExecSpec) sandbox.ExecResult) (*Session, *sandboxtest.Container) {
	e := sandboxtest.New(t.TempDir())
	e.Run = func(_ context.Context, _ *sandboxtest.Container, spec sandbox.ExecSpec) (sandbox.ExecResult, error) {
		return run(spec), nil
	}
	c, err := e.Start(context.Background(), sandbox.ContainerSpec{})
	require.NoError(t, err)
	s := &Session{Engine: e, Trial: &suite.Trial{Task: task}, Container: c.ID, Workdir: "/app", User: "agent",
		Scratch: t.TempDir(), Image: "flightdeck/demo:0123", Env: []string{"FLIGHTDECK_MAX_TURNS=5"}}
	return s, e.Containers()[0]
}

func TestShellAddsWhatItIsAskedAndSaysWhere(t *testing.T) {
	for _, tc := range []struct {
		name           string
		native         bool
		tests, rewards string
		says           []string
		env            []string
	}{
		{"Harbor", false, "/tests", "/logs/verifier", []string{"demo: image flightdeck/demo:0123, user agent, work dir /app",
			"added solution/ at /solution (the oracle runs `bash /solution/solve.sh`), tests/ at /tests",
			"To grade as Harbor does: `bash /tests/test.sh > /logs/verifier/test-stdout.txt 2>&1; cat /logs/verifier/reward.*`"},
			[]string{"FLIGHTDECK_MAX_TURNS=5"}},
		{"native: where its grader has them", true, "/flightdeck/task/tests", "/flightdeck/reward", []string{"tests/ at /flightdeck/task/tests",
			"running `bash tests/test.sh` from /flightdeck/task",
			"`cd /flightdeck/task && bash tests/test.sh; cat /flightdeck/reward/reward.*`"},
			[]string{"FLIGHTDECK_MAX_TURNS=5", "FLIGHTDECK_WORKDIR=/app", "FLIGHTDECK_REWARD_DIR=/flightdeck/reward"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var shell sandbox.ExecSpec
			s, c := shellSession(t, shellTask(t, tc.native), func(spec sandbox.ExecSpec) sandbox.ExecResult {
				if spec.Stdio != nil {
					shell = spec
					return sandbox.ExecResult{ExitCode: 4}
				}
				return sandbox.ExecResult{}
			})
			var said string
			sh := &Shell{WithSolution: true, WithTests: true, Stdio: &sandbox.Stdio{}, Say: func(p string) { said = p }}
			res, err := sh.Run(context.Background(), s, "")
			require.NoError(t, err)
			assert.True(t, sh.Ran)
			assert.Equal(t, 4, sh.ExitCode)
			require.NotNil(t, res.ExitCode)
			assert.Equal(t, 4, *res.ExitCode)
			assert.FileExists(t, c.Path("/solution/solve.sh"))
			assert.FileExists(t, c.Path(tc.tests+"/test.sh"))
			assert.Equal(t, "0", c.Execs[0].User, "the reward dir is made as root")
			assert.Contains(t, c.Execs[0].Cmd[2], "mkdir -p "+tc.rewards+" && chmod 777 "+tc.rewards)
			assert.Equal(t, ShellCommand(), shell.Cmd)
			assert.Equal(t, "agent", shell.User)
			assert.Equal(t, "/app", shell.Workdir)
			assert.Equal(t, tc.env, shell.Env)
			for _, want := range tc.says {
				assert.Contains(t, said, want)
			}
			assert.True(t, strings.HasSuffix(said, "Everything is removed when the shell exits."), said)
		})
	}
}

// A trial's patch that applies, one that does not, and an empty one are
// each said as they are.
func TestShellAppliesTheTrialsPatch(t *testing.T) {
	for _, tc := range []struct {
		name, patch, output string
		exit                int
		says                string
	}{
		{"applies", "diff --git a/x b/x\n", "applied with git apply\n", 0,
			"the trial's diff.patch, applied with git apply, so the work dir is as the agent left it"},
		{"does not apply", "diff --git a/x b/x\n", "error: patch failed: x:1\n", 1,
			"the trial's diff.patch did NOT apply, so the work dir is the image's (error: patch failed: x:1; the patch is at /tmp/flightdeck-trial/diff.patch)"},
		{"cut short", "diff --git a/x b/x\n\n[flightdeck: patch cut at 32 MiB]\n", "applied with git apply\n", 0,
			"the run recorded it incomplete, so the work dir is not whole"},
		{"empty", "", "", 0, "the trial's diff.patch is empty: the agent changed nothing in the work dir"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var applied []string
			s, c := shellSession(t, shellTask(t, false), func(spec sandbox.ExecSpec) sandbox.ExecResult {
				if spec.Stdio == nil {
					applied = append(applied, spec.User)
					require.NoError(t, os.WriteFile(spec.StdoutPath, []byte(tc.output), 0o644))
					return sandbox.ExecResult{ExitCode: tc.exit}
				}
				return sandbox.ExecResult{}
			})
			patch := filepath.Join(t.TempDir(), "diff.patch")
			require.NoError(t, os.WriteFile(patch, []byte(tc.patch), 0o644))
			var said string
			sh := &Shell{Patch: patch, Stdio: &sandbox.Stdio{}, Say: func(p string) { said = p }}
			_, err := sh.Run(context.Background(), s, "")
			require.NoError(t, err)
			assert.Contains(t, said, tc.says)
			if tc.patch == "" {
				assert.Empty(t, applied, "nothing to apply")
				return
			}
			assert.Equal(t, []string{"agent"}, applied, "applied as the shell's user")
			data, err := os.ReadFile(c.Path(PatchPath))
			require.NoError(t, err)
			assert.Equal(t, tc.patch, string(data))
		})
	}
}
