package e2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/internal/testenv"
	"github.com/flightdeck/flightdeck/sandbox"
)

// shellRun is one `flightdeck task shell` fed a script on stdin (no TTY).
type shellRun struct {
	code           int
	pid            int
	stdout, stderr string
}

func taskShell(t *testing.T, script string, args ...string) shellRun {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"task", "shell"}, args...)...)
	cmd.Dir = t.TempDir()
	cmd.Stdin = strings.NewReader(script)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			require.NoError(t, err)
		}
	case <-time.After(cliTimeout):
		t.Fatalf("task shell %v did not end within %s; stderr:\n%s", args, cliTimeout, errOut.String())
	}
	return shellRun{code: cmd.ProcessState.ExitCode(), pid: cmd.Process.Pid, stdout: out.String(), stderr: errOut.String()}
}

// ownedBy lists the containers, networks and volumes a process made (its
// owner label), task images aside.
func ownedBy(t *testing.T, pid int) []string {
	t.Helper()
	f := "label=" + sandbox.LabelOwnerPID + "=" + strconv.Itoa(pid)
	var left []string
	for _, id := range docker(t, "ps", "-aq", "--filter", f) {
		left = append(left, "container "+id)
	}
	for _, id := range docker(t, "network", "ls", "-q", "--filter", f) {
		left = append(left, "network "+id)
	}
	for _, id := range docker(t, "volume", "ls", "-q", "--filter", f) {
		left = append(left, "volume "+id)
	}
	return left
}

// entrypointTask is a Harbor task whose image has an ENTRYPOINT of its own
// and whose agent is a user that is not root.
func entrypointTask(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "shell-entrypoint")
	files := map[string]string{
		"task.toml": "schema_version = \"1.4\"\n\n[task]\nname = \"e2e/shell-entrypoint\"\nversion = \"1.0.0\"\n" +
			"description = \"an image entrypoint, a non-root agent\"\n\n[verifier]\ntimeout_sec = 60.0\n\n[agent]\ntimeout_sec = 60.0\nuser = \"agent\"\n",
		"instruction.md": "Write done to /app/work.txt.\n",
		"environment/Dockerfile": "FROM " + testenv.BaseImage + "\nRUN useradd --create-home --uid 1001 agent && mkdir -p /app && chown agent:agent /app\n" +
			"COPY entry.sh /entry.sh\nRUN chmod 755 /entry.sh\nWORKDIR /app\nENTRYPOINT [\"/entry.sh\"]\nCMD [\"sleep\", \"infinity\"]\n",
		"environment/entry.sh": "#!/bin/sh\necho started-by-entrypoint > /tmp/entrypoint.txt\nexec \"$@\"\n",
		"solution/solve.sh":    "#!/bin/bash\necho done > /app/work.txt\n",
		"tests/test.sh":        "#!/bin/bash\nif [ \"$(cat /app/work.txt 2>/dev/null)\" = done ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	return dir
}

// task shell, driven through pipes, starts the container as a trial's
// agent phase would, runs what it is given as the agent's user in the
// work dir, adds the solution and tests when asked, exits with the
// shell's exit code, and leaves nothing of its own on the engine.
func TestTaskShell(t *testing.T) {
	requireEngine(t)
	csv, err := filepath.Abs("../tasks/fixtures/csv-validator")
	require.NoError(t, err)
	compose, err := filepath.Abs("../fixtures/harbor/tasks/compose-healthy")
	require.NoError(t, err)
	grade := "pwd; id -un; ls /flightdeck/task/tests; cd /flightdeck/task && bash tests/test.sh > /dev/null 2>&1; cat /flightdeck/reward/reward.*\n"
	tests := []struct {
		name      string
		args      []string
		script    string
		out, says []string
		code      int
	}{
		{"native task, its grader by hand", []string{csv, "--with-tests"}, grade,
			[]string{"/workspace\nroot\n", "test.sh\ntest_acceptance.py\n", `"reward": 0`},
			[]string{"csv-validator: image flightdeck/csv-validator:", "work dir /workspace", "added tests/ at /flightdeck/task/tests",
				"`cd /flightdeck/task && bash tests/test.sh; cat /flightdeck/reward/reward.*`"}, 0},
		{"Harbor task with an entrypoint and an agent user, the oracle then the tests", []string{entrypointTask(t), "--with-tests", "--with-solution"},
			"pwd; id -un; cat /tmp/entrypoint.txt; ls /tests; bash /solution/solve.sh; bash /tests/test.sh; cat /logs/verifier/reward.txt\n",
			[]string{"/app\nagent\nstarted-by-entrypoint\ntest.sh\n1\n"},
			[]string{"user agent, work dir /app", "solution/ at /solution", "To grade as Harbor does: `bash /tests/test.sh"}, 0},
		{"compose task: its services are up", []string{compose}, "until [ -f /tmp/web-at-start ]; do sleep 0.2; done; cat /tmp/web-at-start; getent hosts web > /dev/null && echo resolves\n",
			[]string{"up\nresolves\n"}, []string{"compose-healthy: image", "--with-tests adds them here"}, 0},
		{"the shell's exit code is the command's", []string{csv, "--", "sh", "-c", "echo from-cmd; exit 7"}, "",
			[]string{"from-cmd\n"}, nil, 7},
		{"--user", []string{csv, "--user", "nobody", "--", "id", "-un"}, "", []string{"nobody\n"}, []string{"user nobody"}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := taskShell(t, tc.script, tc.args...)
			require.Equal(t, tc.code, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			for _, want := range tc.out {
				assert.Contains(t, r.stdout, want)
			}
			for _, want := range tc.says {
				assert.Contains(t, r.stderr, want)
			}
			assert.Contains(t, r.stderr, "Everything is removed when the shell exits.")
			assert.NotContains(t, r.stderr, "run ", "a shell's run is not printed")
			assert.Empty(t, ownedBy(t, r.pid), "task shell left objects on the engine")
		})
	}
	t.Run("usage", func(t *testing.T) {
		t.Parallel()
		r := taskShell(t, "")
		assert.Equal(t, 2, r.code)
		assert.Contains(t, r.stderr, "name one task directory")
		r = taskShell(t, "", "no-such-dir")
		assert.Equal(t, 2, r.code)
		assert.Contains(t, r.stderr, "no-such-dir: not a task directory")
		// A dir of tasks is not one task: no shell after shell.
		r = taskShell(t, "", filepath.Dir(csv))
		assert.Equal(t, 2, r.code)
		assert.Contains(t, r.stderr, "not a task directory: it holds no task.toml (a shell opens in one task)")
		r = taskShell(t, "", filepath.Join(csv, "task.toml"))
		assert.Equal(t, 2, r.code)
		assert.Contains(t, r.stderr, "a file, not a task directory")
		// A user the image does not have is the caller's mistake.
		r = taskShell(t, "", csv, "--user", "nosuchuser")
		assert.Equal(t, 2, r.code, r.stderr)
		assert.Contains(t, r.stderr, "--user nosuchuser: the image has no such user")
		assert.Empty(t, ownedBy(t, r.pid))
		// An image that does not build is the task's defect; the build log
		// it names is kept.
		broken := entrypointTask(t)
		require.NoError(t, os.WriteFile(filepath.Join(broken, "environment", "Dockerfile"),
			[]byte("FROM "+testenv.BaseImage+"\nRUN apt-gte install -y curl\n"), 0o644))
		r = taskShell(t, "", broken)
		assert.Equal(t, 4, r.code, r.stderr)
		assert.Contains(t, r.stderr, "apt-gte: not found")
		m := regexp.MustCompile(`build log: (\S+)`).FindStringSubmatch(r.stderr)
		require.NotNil(t, m, r.stderr)
		assert.FileExists(t, m[1], "the build log the message names is there")
		assert.Contains(t, r.stderr, "remove it when done")
		kept := regexp.MustCompile(`kept in (\S+);`).FindStringSubmatch(r.stderr)
		require.NotNil(t, kept, r.stderr)
		os.RemoveAll(kept[1])
	})
}

// A shell stopped by Ctrl-C removes what it started; one killed outright
// leaves what `flightdeck gc` removes.
func TestTaskShellInterrupted(t *testing.T) {
	requireEngine(t)
	csv, err := filepath.Abs("../tasks/fixtures/csv-validator")
	require.NoError(t, err)
	ready := func(l string) bool { return strings.Contains(l, "Everything is removed when the shell exits.") }
	t.Run("Ctrl-C", func(t *testing.T) {
		p := startFlightdeck(t, t.TempDir(), nil, "task", "shell", csv, "--", "sleep", "600")
		p.waitLine(t, cliTimeout, ready)
		require.NotEmpty(t, ownedBy(t, p.cmd.Process.Pid), "the shell's container runs")
		p.signal(t, syscall.SIGINT)
		r := p.wait(t, cliTimeout)
		assert.Equal(t, 130, r.code, "stderr:\n%s", r.stderr)
		assert.Contains(t, r.stderr, "interrupted; the container is removed")
		assert.Empty(t, ownedBy(t, p.cmd.Process.Pid))
	})
	t.Run("SIGKILL then gc", func(t *testing.T) {
		dir := t.TempDir()
		p := startFlightdeck(t, dir, nil, "task", "shell", csv, "--", "sleep", "600")
		p.waitLine(t, cliTimeout, ready)
		pid := p.cmd.Process.Pid
		require.NotEmpty(t, ownedBy(t, pid))
		p.signal(t, syscall.SIGKILL)
		p.wait(t, cliTimeout)
		gc := flightdeck(t, dir, nil, "gc")
		require.Equal(t, 0, gc.code, "gc: %s", gc.stderr)
		assert.Empty(t, ownedBy(t, pid), "gc removes what a killed shell left")
	})
}

// task shell at a terminal (tmux): a TTY, typed commands answered, the
// exit code the shell's, nothing left.
func TestTaskShellTTY(t *testing.T) {
	requireEngine(t)
	tmuxBin := testenv.Tool(t, "tmux")
	csv, err := filepath.Abs("../tasks/fixtures/csv-validator")
	require.NoError(t, err)
	dir := t.TempDir()
	sock := "flightdeck-e2e-" + strconv.Itoa(os.Getpid())
	tmux := func(args ...string) string {
		out, err := exec.Command(tmuxBin, append([]string{"-L", sock}, args...)...).CombinedOutput()
		require.NoError(t, err, "tmux %v: %s", args, out)
		return string(out)
	}
	pidFile := filepath.Join(dir, "pid")
	exitFile := filepath.Join(dir, "exit")
	// The pane's shell waits for flightdeck, then writes its exit code.
	tmux("new-session", "-d", "-s", "shell", "-x", "150", "-y", "40",
		"sh -c 'echo $$ > "+pidFile+"; "+binary(t)+" task shell "+csv+"; echo $? > "+exitFile+"'")
	t.Cleanup(func() { exec.Command(tmuxBin, "-L", sock, "kill-server").Run() })
	tmux("set-option", "-t", "shell", "remain-on-exit", "on")
	screen := func() string { return tmux("capture-pane", "-p", "-J", "-t", "shell", "-S", "-100") }
	waitFor := func(what string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Minute)
		for time.Now().Before(deadline) {
			if strings.Contains(screen(), what) {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatalf("%q never showed; the screen:\n%s", what, screen())
	}
	waitFor("Everything is removed when the shell exits.")
	tmux("send-keys", "-t", "shell", "echo hello-$((6*7)); tty; pwd; echo end-$((1+1))", "Enter")
	waitFor("end-2")
	s := screen()
	assert.Contains(t, s, "hello-42")
	assert.Contains(t, s, "/dev/pts/", "the shell has a terminal")
	assert.Contains(t, s, "/workspace")
	// flightdeck is the pane's shell's one child.
	children := readText(t, "/proc/"+strings.TrimSpace(readText(t, pidFile))+"/task/"+strings.TrimSpace(readText(t, pidFile))+"/children")
	pid, err := strconv.Atoi(strings.TrimSpace(children))
	require.NoError(t, err, "children: %q", children)
	require.NotEmpty(t, ownedBy(t, pid), "the shell's container runs")
	tmux("send-keys", "-t", "shell", "exit 3", "Enter")
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := os.Stat(exitFile); err == nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "the shell did not end; the screen:\n%s", screen())
		time.Sleep(200 * time.Millisecond)
	}
	assert.Equal(t, "3", strings.TrimSpace(readText(t, exitFile)), "flightdeck exits with the shell's code")
	assert.Empty(t, ownedBy(t, pid))
}

// trial shell rebuilds a failed trial of a run without --keep from the
// task image and its diff.patch: the tests, rerun by hand as the
// verifier, give what the grader gave.
func TestTrialShellReproducesAFailedTrial(t *testing.T) {
	requireEngine(t)
	semver, err := filepath.Abs("../tasks/smoke/semver")
	require.NoError(t, err)
	dir := t.TempDir()
	suiteFile := writeSuite(t, dir, suiteFile{Name: "broken", Tasks: []string{semver}, Retries: retries(0),
		Variants: map[string]map[string]any{"broken": command(
			`printf 'def valid(v, loose=False):\n    return v\n' > semver.py`)}})
	run := runFlightdeck(t, suiteFile)
	res := run.result(t, "semver", "broken")
	require.Equal(t, "failed", string(res.Outcome), "%s", res.Error)
	result := regexp.MustCompile(`RESULT \{"passed":\d+,"total":\d+`)
	graded := result.FindString(readText(t, filepath.Join(run.trialDir("semver", "broken"), "grader.log")))
	require.NotEmpty(t, graded)

	cmd := exec.Command(binary(t), "trial", "shell", run.id, "semver__broken__1", "--as", "verifier")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader("cat semver.py; cd /flightdeck/task && bash tests/test.sh 2>&1 | grep RESULT\n")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	require.NoError(t, cmd.Run(), "stderr:\n%s", errOut.String())
	assert.Contains(t, out.String(), "return v", "the work dir is as the agent left it")
	assert.Equal(t, graded, result.FindString(out.String()), "the tests by hand give what the grader gave")
	assert.Contains(t, errOut.String(), "rebuilt from the task image and the trial's diff.patch (failed")
	assert.Contains(t, errOut.String(), "the trial's diff.patch, applied with git apply")
	assert.Empty(t, ownedBy(t, cmd.Process.Pid))

	bad := flightdeck(t, dir, nil, "trial", "shell", run.id, "semver__nosuch__1")
	assert.Equal(t, 2, bad.code)
	assert.Contains(t, bad.stderr, `has no trial "semver__nosuch__1"`)

	// A run with --keep: the shell opens in the container it kept, which
	// is left as it was.
	kept := runFlightdeck(t, suiteFile, "--keep", "--no-cache")
	t.Cleanup(func() { flightdeck(t, dir, nil, "gc", "--all", "--run", kept.id) })
	// The run ends saying what it kept and how to remove it.
	assert.Regexp(t, `kept \(--keep\): [0-9]+ containers? of run `+kept.id+` on the engine, the trials' work dirs in \S+; `+
		`a shell in a trial's: flightdeck trial shell `+kept.id+` TRIAL; remove them: flightdeck gc --run `+kept.id,
		kept.cli.stdout+kept.cli.stderr)
	cmd = exec.Command(binary(t), "trial", "shell", kept.id, "semver__broken__1", "--as", "verifier")
	cmd.Dir = dir
	// The grader's command as the paragraph gives it.
	// A command agent's kept container has its instruction mounted
	// read-only at /flightdeck: the tests go to Harbor's places, and the
	// paragraph says so.
	cmd.Stdin = strings.NewReader("cat /app/semver.py; cd / && bash tests/test.sh 2>&1 | grep RESULT\n")
	out.Reset()
	errOut.Reset()
	cmd.Stdout, cmd.Stderr = &out, &errOut
	require.NoError(t, cmd.Run(), "stderr:\n%s", errOut.String())
	assert.Contains(t, errOut.String(), "the run's kept container")
	assert.Contains(t, out.String(), "return v")
	assert.Equal(t, graded, result.FindString(out.String()))
	assert.Contains(t, errOut.String(), "cannot be written here")
	assert.Contains(t, errOut.String(), "`cd / && bash tests/test.sh; cat /logs/verifier/reward.*`")
	assert.Len(t, docker(t, "ps", "-aq", "--filter", "label="+sandbox.LabelRun+"="+kept.id, "--filter", "label=flightdeck.phase=agent"), 1,
		"the kept container stays")
	// The tests the verifier's shell added are gone for the agent's.
	agentShell := exec.Command(binary(t), "trial", "shell", kept.id, "semver__broken__1", "--", "sh", "-c", "ls /tests 2>&1; exit 0")
	agentShell.Dir = dir
	got, err := agentShell.CombinedOutput()
	require.NoError(t, err, "%s", got)
	assert.Contains(t, string(got), "No such file or directory", "the tests are not left in the agent's container")
}

// trial shell on a Harbor task whose image has an entrypoint and whose
// agent is not root, and on a compose task: the rebuilt work dir holds
// what the oracle wrote, and the tests by hand pass as the grader's did.
func TestTrialShellHarborAndCompose(t *testing.T) {
	requireEngine(t)
	compose, err := filepath.Abs("../fixtures/harbor/tasks/compose-healthy")
	require.NoError(t, err)
	dir := t.TempDir()
	suiteFile := writeSuite(t, dir, suiteFile{Name: "shells", Tasks: []string{entrypointTask(t), compose}, Retries: retries(0),
		Variants: map[string]map[string]any{"oracle": {"agent": "oracle"}}})
	run := runFlightdeck(t, suiteFile)
	for _, tc := range []struct {
		task, script string
		out          []string
	}{
		{"shell-entrypoint", "id -un; cat /tmp/entrypoint.txt; cat work.txt; bash /tests/test.sh; cat /logs/verifier/reward.txt\n",
			[]string{"root\nstarted-by-entrypoint\ndone\n1\n"}},
		{"compose-healthy", "cat answer.txt; bash /tests/test.sh > /dev/null; cat /logs/verifier/reward.txt\n", []string{"up\n1\n"}},
	} {
		t.Run(tc.task, func(t *testing.T) {
			res := run.result(t, tc.task, "oracle")
			require.Equal(t, "passed", string(res.Outcome), "%s", res.Error)
			cmd := exec.Command(binary(t), "trial", "shell", run.id, trialName(tc.task, "oracle"), "--as", "verifier")
			cmd.Dir = dir
			cmd.Stdin = strings.NewReader(tc.script)
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			require.NoError(t, cmd.Run(), "stderr:\n%s", errOut.String())
			for _, want := range tc.out {
				assert.Contains(t, out.String(), want, "stderr:\n%s", errOut.String())
			}
			assert.Contains(t, errOut.String(), "applied with git apply")
			assert.Empty(t, ownedBy(t, cmd.Process.Pid))
		})
	}
}
