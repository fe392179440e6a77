package grader

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/sandbox/sandboxtest"
	"github.com/flightdeck/flightdeck/tasks"
)

// newFake is the engine of Run's unit tests: sandboxtest's fake, whose
// containers are host dirs, so the grader's reward files are real files.
func newFake(t *testing.T) *sandboxtest.Engine {
	return sandboxtest.New(t.TempDir())
}

// calls are the fake's calls without container IDs; an exec of the
// grader's own housekeeping is named for what it does ("Exec chown",
// "Exec rm", "Exec give"), the grade itself is "Exec".
func calls(f *sandboxtest.Engine) []string {
	var execs []sandbox.ExecSpec
	for _, c := range f.Containers() {
		execs = append(execs, c.Execs...)
	}
	var out []string
	for _, call := range f.Calls() {
		method, _, _ := strings.Cut(call, " ")
		if method == "Exec" && len(execs) > 0 {
			if h := housekeeping(execs[0]); h != "" {
				method += " " + h
			}
			execs = execs[1:]
		}
		out = append(out, method)
	}
	return out
}

// housekeeping names an exec of the grader's own ("chown", "rm",
// "give"); "" for the grade.
func housekeeping(ex sandbox.ExecSpec) string {
	switch {
	case ex.Cmd[0] == "chown", ex.Cmd[0] == "rm":
		return ex.Cmd[0]
	case ex.Cmd[0] == "sh" && len(ex.Cmd) > 2 && ex.Cmd[2] == chownScript:
		return "give"
	}
	return ""
}

// grading is the one container Run started.
func grading(t *testing.T, f *sandboxtest.Engine) *sandboxtest.Container {
	t.Helper()
	cs := f.Containers()
	require.Len(t, cs, 1)
	return cs[0]
}

// grades makes the fake's execs of the grade (not the grader's own
// housekeeping) run fn.
func grades(f *sandboxtest.Engine, fn func(c *sandboxtest.Container, ex sandbox.ExecSpec) (sandbox.ExecResult, error)) {
	f.Run = func(_ context.Context, c *sandboxtest.Container, ex sandbox.ExecSpec) (sandbox.ExecResult, error) {
		if housekeeping(ex) != "" {
			return sandbox.ExecResult{}, nil
		}
		return fn(c, ex)
	}
}

// states makes State answer seq in turn, then last, for every container.
func states(f *sandboxtest.Engine, last sandbox.State, seq ...sandbox.State) {
	f.StateOf = func(_ *sandboxtest.Container, n int, _ sandbox.State) (sandbox.State, error) {
		if n < len(seq) {
			return seq[n], nil
		}
		return last, nil
	}
}

// killed marks every container as killed through the engine.
func killed(f *sandboxtest.Engine) {
	f.Started = func(c *sandboxtest.Container) { c.Killed = true }
}

// fails makes the named methods fail with err (on any container).
func fails(f *sandboxtest.Engine, err error, methods ...string) {
	f.Fail = func(m, _ string) error {
		if contains(methods, m) {
			return err
		}
		return nil
	}
}

// writesReward is a grader that writes name=content in the reward dir and
// prints log.
func writesReward(rewardDir, name, content, log string) func(*sandboxtest.Container, sandbox.ExecSpec) (sandbox.ExecResult, error) {
	return func(c *sandboxtest.Container, ex sandbox.ExecSpec) (sandbox.ExecResult, error) {
		if name != "" {
			if err := os.WriteFile(c.Path(rewardDir+"/"+name), []byte(content), 0o644); err != nil {
				return sandbox.ExecResult{}, err
			}
		}
		if err := os.WriteFile(ex.StdoutPath, []byte(log), 0o644); err != nil {
			return sandbox.ExecResult{}, err
		}
		return sandbox.ExecResult{ExitCode: 0, Duration: time.Second}, nil
	}
}

func nativeTask(t *testing.T) *tasks.Task {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "tests", "test.sh"), "#!/bin/bash\n")
	return &tasks.Task{ID: "csv", Dir: dir, Config: tasks.Config{
		Flightdeck: tasks.FlightdeckKeys{Grader: &tasks.GraderKeys{Command: "bash tests/test.sh"}},
	}}
}

func harborTask(t *testing.T) *tasks.Task {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "tests", "test.sh"), "#!/bin/bash\n")
	return &tasks.Task{ID: "hb", Dir: dir}
}

func nativeRequest(t *testing.T) Request {
	return Request{
		Task: nativeTask(t), Image: "flightdeck/csv:0123", WorkDir: t.TempDir(), ContainerWorkDir: "/app",
		TrialDir: filepath.Join(t.TempDir(), "csv__oracle__1"), RunID: "r1", TrialID: "csv__oracle__1",
		Timeout: 30 * time.Second, Env: []string{"A=1", "FLIGHTDECK_REWARD_DIR=/planted"},
		NanoCPUs: 1e9, MemoryBytes: 1 << 30, Owner: sandbox.Owner{UID: 1000, GID: 1000},
	}
}

func TestRunNative(t *testing.T) {
	f := newFake(t)
	grades(f, writesReward(NativeRewardDir, "reward.json", `{"reward": 1, "passed": 3}`, "ok\nRESULT {\"passed\": 3, \"total\": 3}\n"))
	req := nativeRequest(t)

	g, err := Run(context.Background(), f, req)
	require.NoError(t, err)

	assert.Equal(t, []string{"Start", "CopyIn", "InspectImage", "Exec", "State", "HandBack", "Stop", "State", "Remove"}, calls(f))
	// The container: pristine image, no network despite the request, work dir read-only.
	c := grading(t, f)
	assert.Equal(t, "flightdeck/csv:0123", c.Spec.Image)
	assert.False(t, c.Spec.Network)
	assert.Equal(t, "r1", c.Spec.RunID)
	assert.Equal(t, "csv__oracle__1", c.Spec.TrialID)
	assert.Equal(t, NativeTaskDir, c.Spec.Workdir)
	assert.Equal(t, int64(1e9), c.Spec.NanoCPUs)
	assert.Equal(t, int64(1<<30), c.Spec.MemoryBytes)
	assert.Equal(t, []sandbox.Mount{
		{HostPath: req.WorkDir, ContainerPath: "/app", ReadOnly: true},
		{HostPath: filepath.Join(req.TrialDir, "verifier"), ContainerPath: NativeRewardDir},
	}, c.Spec.Mounts)
	// Tests from the host task dir, outside the work dir.
	assert.FileExists(t, c.Path("/flightdeck/task/tests/test.sh"))
	// The command.
	ex := c.Execs[0]
	assert.Equal(t, []string{"bash", "-c", "bash tests/test.sh"}, ex.Cmd)
	assert.Equal(t, NativeTaskDir, ex.Workdir)
	assert.Equal(t, []string{"A=1", "FLIGHTDECK_WORKDIR=/app", "FLIGHTDECK_REWARD_DIR=/flightdeck/reward"}, ex.Env)
	assert.Equal(t, filepath.Join(req.TrialDir, "grader.log"), ex.StdoutPath)
	assert.Equal(t, 30*time.Second, ex.Timeout)
	assert.Equal(t, []string{NativeRewardDir + " 1000:1000"}, c.HandedBack)
	assert.NoError(t, c.RemoveCtxErr)
	// The grade.
	require.NotNil(t, g.Reward, "reward error: %v", g.RewardErr)
	assert.Equal(t, 1.0, g.Reward.Value)
	assert.Equal(t, map[string]float64{"reward": 1, "passed": 3}, g.Reward.Values)
	assert.NoError(t, g.RewardErr)
	assert.Equal(t, &Summary{Passed: 3, Total: 3}, g.Summary)
	assert.Equal(t, filepath.Join(req.TrialDir, "grader.log"), g.LogPath)
	assert.Equal(t, time.Second, g.CommandDuration)
	assert.Empty(t, g.Warnings)
	assert.Equal(t, OutcomePassed, g.Outcome())
	fi, err := os.Stat(filepath.Join(req.TrialDir, "verifier"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o777), fi.Mode().Perm())
}

func TestRunNativeGivesTestsToTheGradersUser(t *testing.T) {
	for _, tt := range []struct {
		user, imageUser string
		chown           string // "" when no chown is needed
		inspect         bool
	}{
		{"", "", "", true},
		{"", "root", "", true},
		{"", "app", "app", true},
		{"1000:1000", "", "1000:1000", false},
		{"root", "app", "", false},
		{"0:1000", "", "", false},
	} {
		f := newFake(t)
		f.Image.User = tt.imageUser
		req := nativeRequest(t)
		req.User = tt.user
		_, err := Run(context.Background(), f, req)
		require.NoError(t, err)
		assert.Equal(t, tt.inspect, contains(calls(f), "InspectImage"), "%+v", tt)
		if tt.chown == "" {
			assert.NotContains(t, calls(f), "Exec chown", "%+v", tt)
			continue
		}
		require.Contains(t, calls(f), "Exec chown", "%+v", tt)
		execs := grading(t, f).Execs
		assert.Equal(t, []string{"chown", "-R", "--", tt.chown, NativeTaskDir}, execs[0].Cmd)
		assert.Equal(t, "0", execs[0].User)
		assert.Equal(t, tt.user, execs[1].User, "the grader runs as the requested user")
	}
}

func last(list []string) string {
	if len(list) == 0 {
		return ""
	}
	return list[len(list)-1]
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestRunHarbor(t *testing.T) {
	f := newFake(t)
	grades(f, func(c *sandboxtest.Container, ex sandbox.ExecSpec) (sandbox.ExecResult, error) {
		require.NoError(t, os.WriteFile(c.Path(HarborVerifierDir+"/reward.txt"), []byte("0\n"), 0o644))
		require.NoError(t, os.WriteFile(c.Path(HarborVerifierDir+"/test-stdout.txt"),
			[]byte("1 failed\nRESULT {\"passed\": 0, \"total\": 1, \"failed\": [\"t1\"]}\n"), 0o644))
		return sandbox.ExecResult{ExitCode: 1}, nil
	})
	req := Request{
		Task: harborTask(t), Image: "flightdeck-snapshot:abc", WorkDir: t.TempDir(), ContainerWorkDir: "/app",
		TrialDir: t.TempDir(), Timeout: time.Minute, Env: []string{"V=1"}, User: "root",
		Harbor: &HarborVerifier{Network: true},
	}
	g, err := Run(context.Background(), f, req)
	require.NoError(t, err)

	assert.Equal(t, []string{"Start", "Exec rm", "CopyIn", "Exec", "State", "Stop", "State", "Remove"}, calls(f),
		"nothing is given away or handed back to a root caller: the host reclaims the reward dir")
	c := grading(t, f)
	assert.Equal(t, []string{"rm", "-rf", "--", "/tests"}, c.Execs[0].Cmd, "whatever the agent left at /tests goes first")
	assert.Equal(t, "0", c.Execs[0].User)
	assert.True(t, c.Spec.Network, "Harbor's network decision is kept")
	assert.Equal(t, "root", c.Spec.User)
	assert.Equal(t, "/app", c.Spec.Workdir)
	assert.Equal(t, []sandbox.Mount{
		{HostPath: req.WorkDir, ContainerPath: "/app"},
		{HostPath: filepath.Join(req.TrialDir, "verifier"), ContainerPath: HarborVerifierDir},
	}, c.Spec.Mounts)
	assert.FileExists(t, c.Path("/tests/test.sh"))
	ex := c.Execs[1]
	assert.Equal(t, []string{"bash", "-c", "chmod +x /tests/test.sh && /tests/test.sh > /logs/verifier/test-stdout.txt 2>&1"}, ex.Cmd)
	assert.Equal(t, "/app", ex.Workdir)
	assert.Equal(t, []string{"V=1"}, ex.Env)
	assert.Empty(t, c.HandedBack)

	require.NotNil(t, g.Reward)
	assert.Equal(t, 0.0, g.Reward.Value)
	assert.Equal(t, RewardTxt, g.Reward.Source)
	assert.Equal(t, 1, g.ExitCode, "recorded, though the reward ignores it")
	assert.Equal(t, &Summary{Passed: 0, Total: 1, Failed: []string{"t1"}}, g.Summary)
	log, err := os.ReadFile(g.LogPath)
	require.NoError(t, err)
	assert.Contains(t, string(log), "1 failed\n")
	assert.Equal(t, OutcomeFailed, g.Outcome())
}

// A caller who is not root handed the work dir back after the agent: it is
// given to the agent's user before test.sh runs and handed back after.
func TestRunHarborGivesTheWorkDirToTheAgentsUser(t *testing.T) {
	f := newFake(t)
	req := Request{
		Task: harborTask(t), Image: "snap", WorkDir: t.TempDir(), ContainerWorkDir: "/app",
		TrialDir: t.TempDir(), User: "root", Harbor: &HarborVerifier{WorkDirUser: "agent"}, Owner: sandbox.Owner{UID: 1000, GID: 1001},
	}
	_, err := Run(context.Background(), f, req)
	require.NoError(t, err)
	assert.Equal(t, []string{"Start", "Exec rm", "Exec give", "CopyIn", "Exec", "State", "HandBack", "HandBack", "Stop", "State", "Remove"}, calls(f))
	give := grading(t, f).Execs[1]
	assert.Equal(t, ChownCommand("agent", "/app"), give.Cmd)
	assert.Equal(t, "0", give.User)
	assert.Equal(t, []string{"/logs/verifier 1000:1001", "/app 1000:1001"}, grading(t, f).HandedBack)

	// No work dir (the agent worked in /): nothing to give.
	f = newFake(t)
	req.WorkDir = ""
	_, err = Run(context.Background(), f, req)
	require.NoError(t, err)
	assert.NotContains(t, calls(f), "Exec give")
	assert.Equal(t, []string{"/logs/verifier 1000:1001"}, grading(t, f).HandedBack)
}

// A variant's grading: harbor grades a native task with Harbor's verifier.
func TestRunHarborForANativeTask(t *testing.T) {
	f := newFake(t)
	req := nativeRequest(t)
	req.Harbor = &HarborVerifier{Network: true}
	req.User = "root"
	req.Owner = sandbox.Owner{}
	_, err := Run(context.Background(), f, req)
	require.NoError(t, err)
	c := grading(t, f)
	assert.FileExists(t, c.Path("/tests/test.sh"))
	assert.Equal(t, []string{"bash", "-c", harborCommand}, c.Execs[1].Cmd)
	assert.Equal(t, []sandbox.Mount{
		{HostPath: req.WorkDir, ContainerPath: "/app"},
		{HostPath: filepath.Join(req.TrialDir, "verifier"), ContainerPath: HarborVerifierDir},
	}, c.Spec.Mounts, "the work dir is mounted as the agent had it, read-write")
	assert.True(t, c.Spec.Network, "the network is the request's")
}

func TestRunHarborTestStdoutSymlinkIsNotFollowed(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	writeFile(t, secret, "host secret\n")
	f := newFake(t)
	grades(f, func(c *sandboxtest.Container, ex sandbox.ExecSpec) (sandbox.ExecResult, error) {
		require.NoError(t, os.Symlink(secret, c.Path(HarborVerifierDir+"/test-stdout.txt")))
		require.NoError(t, os.WriteFile(c.Path(HarborVerifierDir+"/reward.txt"), []byte("1"), 0o644))
		return sandbox.ExecResult{}, nil
	})
	req := Request{Task: harborTask(t), Image: "snap", TrialDir: t.TempDir(), User: "root"}
	g, err := Run(context.Background(), f, req)
	require.NoError(t, err)
	log, _ := os.ReadFile(g.LogPath)
	assert.NotContains(t, string(log), "host secret")
	assert.NotEmpty(t, g.Warnings)
}

func TestRunTimeout(t *testing.T) {
	f := newFake(t)
	states(f, sandbox.State{Running: false, ExitCode: 137})
	grades(f, func(*sandboxtest.Container, sandbox.ExecSpec) (sandbox.ExecResult, error) {
		return sandbox.ExecResult{TimedOut: true, ExitCode: -1}, nil
	})
	g, err := Run(context.Background(), f, nativeRequest(t))
	require.NoError(t, err, "a timeout is the grade's, not the infrastructure's")
	assert.True(t, g.TimedOut)
	assert.Nil(t, g.Reward)
	assertRewardKind(t, RewardMissing, g.RewardErr)
	assert.Equal(t, "Remove", last(calls(f)))
	assert.Equal(t, OutcomeVerifierTimeout, g.Outcome())
}

func assertRewardKind(t *testing.T, kind string, err error) {
	t.Helper()
	var re *RewardError
	require.True(t, errors.As(err, &re), "%v is a *RewardError", err)
	assert.Equal(t, kind, re.Kind)
}

func TestRunInfraErrors(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(f *sandboxtest.Engine)
		want   string
		remove bool
		oom    bool
	}{
		{"container killed through the engine mid-grade", func(f *sandboxtest.Engine) {
			states(f, sandbox.State{Running: false, ExitCode: 137, OOMKilled: true})
			killed(f)
		}, "killed through the engine while the grader ran (exit code 137)", true, true},
		{"container stopped mid-grade, its events unreadable", func(f *sandboxtest.Engine) {
			states(f, sandbox.State{Running: false, ExitCode: 137})
			fails(f, errors.New("engine down"), "Killed", "KilledSince")
		}, "its events cannot be read: engine down", true, false},
		{"container removed", func(f *sandboxtest.Engine) {
			states(f, sandbox.State{Missing: true})
			killed(f)
		}, "removed while the grader ran", true, false},
		{"container gone under the exec, killed through the engine", func(f *sandboxtest.Engine) {
			grades(f, func(*sandboxtest.Container, sandbox.ExecSpec) (sandbox.ExecResult, error) {
				return sandbox.ExecResult{ExitCode: -1}, fmt.Errorf("exec: %w", sandbox.ErrContainerGone)
			})
			states(f, sandbox.State{ExitCode: 137})
			killed(f)
		}, "killed through the engine", true, false},
		{"state fails", func(f *sandboxtest.Engine) {
			fails(f, errors.New("engine down"), "State")
		}, "inspect grading container of csv__oracle__1: engine down", true, false},
		{"exec fails", func(f *sandboxtest.Engine) {
			grades(f, func(*sandboxtest.Container, sandbox.ExecSpec) (sandbox.ExecResult, error) {
				return sandbox.ExecResult{}, errors.New("container is gone")
			})
		}, "run the grader of csv__oracle__1: container is gone", true, false},
		{"start fails after create", func(f *sandboxtest.Engine) {
			f.Fail = func(method, id string) error {
				if method == "Start" && id != "" {
					return errors.New("no such image")
				}
				return nil
			}
		}, "start grading container for csv__oracle__1: no such image", true, false},
		{"start fails before create", func(f *sandboxtest.Engine) {
			fails(f, errors.New("engine down"), "Start")
		}, "engine down", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t)
			tt.setup(f)
			g, err := Run(context.Background(), f, nativeRequest(t))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Equal(t, tt.remove, contains(calls(f), "Remove"), "calls: %v", calls(f))
			assert.Equal(t, tt.oom, g.OOMKilled)
			assert.Nil(t, g.Reward)
		})
	}
}

func TestRunRemovesOnACancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	f := newFake(t)
	grades(f, func(*sandboxtest.Container, sandbox.ExecSpec) (sandbox.ExecResult, error) {
		cancel()
		return sandbox.ExecResult{}, context.Canceled
	})
	_, err := Run(ctx, f, nativeRequest(t))
	require.ErrorIs(t, err, context.Canceled)
	require.Contains(t, calls(f), "Remove")
	assert.Empty(t, f.Live())
	assert.NoError(t, grading(t, f).RemoveCtxErr, "removal runs on a context the caller's cancellation does not reach")
}

func TestRunRemoveFailureIsAWarning(t *testing.T) {
	f := newFake(t)
	fails(f, errors.New("busy"), "Remove")
	grades(f, writesReward(NativeRewardDir, "reward.txt", "1", ""))
	g, err := Run(context.Background(), f, nativeRequest(t))
	require.NoError(t, err)
	require.NotNil(t, g.Reward)
	require.Len(t, g.Warnings, 1)
	assert.Contains(t, g.Warnings[0], "remove grading container c1: busy")
}

func TestRunRewardMustBeFresh(t *testing.T) {
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, rewardDir string)
		ok    bool
	}{
		{"absent", func(*testing.T, string) {}, true},
		{"empty dir", func(t *testing.T, d string) { require.NoError(t, os.MkdirAll(d, 0o755)) }, true},
		{"planted reward", func(t *testing.T, d string) { writeFile(t, filepath.Join(d, "reward.txt"), "1") }, false},
		{"a file", func(t *testing.T, d string) { writeFile(t, d, "x") }, false},
		{"a symlink to an empty dir", func(t *testing.T, d string) {
			require.NoError(t, os.MkdirAll(filepath.Dir(d), 0o755))
			require.NoError(t, os.Symlink(t.TempDir(), d))
		}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t)
			req := nativeRequest(t)
			tt.setup(t, filepath.Join(req.TrialDir, "verifier"))
			_, err := Run(context.Background(), f, req)
			if tt.ok {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), "fresh")
			assert.Empty(t, f.Calls(), "nothing is started for a stale reward dir")
		})
	}
}

func TestRunRefusesBadRequests(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(r *Request)
		want   string
	}{
		{"no task", func(r *Request) { r.Task = nil }, "no task"},
		{"no image", func(r *Request) { r.Image = "" }, "no image"},
		{"no trial dir", func(r *Request) { r.TrialDir = "" }, "no trial dir"},
		{"no work dir", func(r *Request) { r.WorkDir = "" }, "no work dir"},
		{"relative container work dir", func(r *Request) { r.ContainerWorkDir = "app" }, "not absolute"},
		{"work dir over the grader's files", func(r *Request) { r.ContainerWorkDir = "/flightdeck/task" }, "overlaps /flightdeck"},
		{"work dir at the root", func(r *Request) { r.ContainerWorkDir = "/" }, "overlaps /flightdeck"},
		{"negative timeout", func(r *Request) { r.Timeout = -1 }, "negative timeout"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t)
			req := nativeRequest(t)
			tt.change(&req)
			_, err := Run(context.Background(), f, req)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Empty(t, f.Calls())
		})
	}
}

func TestRunMalformedReward(t *testing.T) {
	f := newFake(t)
	grades(f, writesReward(NativeRewardDir, "reward.json", `{"reward": "yes"}`, strings.Repeat("x\n", 3)))
	g, err := Run(context.Background(), f, nativeRequest(t))
	require.NoError(t, err)
	assert.Nil(t, g.Reward)
	assertRewardKind(t, RewardNonNumeric, g.RewardErr)
	assert.Nil(t, g.Summary)
	assert.Equal(t, OutcomeFailed, g.Outcome())
}

func TestRunKilledGrader(t *testing.T) {
	exit137 := func(*sandboxtest.Container, sandbox.ExecSpec) (sandbox.ExecResult, error) {
		return sandbox.ExecResult{ExitCode: 137}, nil
	}
	t.Run("the container stops soon after, killed through the engine: infrastructure", func(t *testing.T) {
		f := newFake(t)
		grades(f, exit137)
		states(f, sandbox.State{Running: false, ExitCode: 137}, sandbox.State{Running: true}, sandbox.State{Running: true})
		killed(f)
		_, err := Run(context.Background(), f, nativeRequest(t))
		require.ErrorIs(t, err, sandbox.ErrContainerGone)
		assert.Contains(t, err.Error(), "killed through the engine")
		assert.Equal(t, "Remove", last(calls(f)))
	})
	t.Run("the container stops soon after, from within: the grade fails", func(t *testing.T) {
		f := newFake(t)
		grades(f, func(c *sandboxtest.Container, ex sandbox.ExecSpec) (sandbox.ExecResult, error) {
			// A reward written before the container stopped is not the grader's verdict.
			require.NoError(t, os.WriteFile(c.Path(NativeRewardDir+"/reward.txt"), []byte("1"), 0o644))
			return sandbox.ExecResult{ExitCode: 137}, nil
		})
		states(f, sandbox.State{Running: false, ExitCode: 137}, sandbox.State{Running: true}, sandbox.State{Running: true})
		g, err := Run(context.Background(), f, nativeRequest(t))
		require.NoError(t, err)
		assert.Nil(t, g.Reward)
		assertRewardKind(t, RewardUnfinished, g.RewardErr)
		assert.Contains(t, g.RewardErr.Error(), "stopped from within")
		assert.Equal(t, OutcomeFailed, g.Outcome())
		assert.Contains(t, calls(f), "HandBack", "the reward dir is handed back all the same")
		assert.Equal(t, "Remove", last(calls(f)))
	})
	t.Run("the container gone under the exec, from within: the grade fails", func(t *testing.T) {
		f := newFake(t)
		grades(f, func(*sandboxtest.Container, sandbox.ExecSpec) (sandbox.ExecResult, error) {
			return sandbox.ExecResult{ExitCode: 137}, fmt.Errorf("exec: %w", sandbox.ErrContainerGone)
		})
		states(f, sandbox.State{ExitCode: 137, OOMKilled: true})
		g, err := Run(context.Background(), f, nativeRequest(t))
		require.NoError(t, err)
		assertRewardKind(t, RewardUnfinished, g.RewardErr)
		assert.True(t, g.OOMKilled)
		assert.Contains(t, calls(f), "KilledSince", "the engine was asked whether it killed the container")
	})
	t.Run("the container keeps running: the grader's own kill, a grade", func(t *testing.T) {
		f := newFake(t)
		grades(f, exit137)
		states(f, sandbox.State{Running: true, OOMKilled: true})
		g, err := Run(context.Background(), f, nativeRequest(t))
		require.NoError(t, err)
		assert.Equal(t, 137, g.ExitCode)
		assert.True(t, g.OOMKilled)
		assertRewardKind(t, RewardMissing, g.RewardErr)
	})
}

// An out-of-memory kill the container survived shows once it has stopped.
func TestRunRecordsOOMAfterStop(t *testing.T) {
	f := newFake(t)
	states(f, sandbox.State{OOMKilled: true}, sandbox.State{Running: true})
	grades(f, writesReward(NativeRewardDir, "reward.txt", "0", "Killed\n"))
	g, err := Run(context.Background(), f, nativeRequest(t))
	require.NoError(t, err)
	assert.True(t, g.OOMKilled)
	assert.Equal(t, []string{"Start", "CopyIn", "InspectImage", "Exec", "State", "HandBack", "Stop", "State", "Remove"}, calls(f))
}

// A traced grade copies the tracer in, runs the verifier's command under
// it, removes it, and keeps its record beside grader.log, out of the
// reward dir.
func TestRunTraced(t *testing.T) {
	f := newFake(t)
	grades(f, func(c *sandboxtest.Container, ex sandbox.ExecSpec) (sandbox.ExecResult, error) {
		if ex.Cmd[0] != path.Join(traceDir, traceExe) {
			return sandbox.ExecResult{}, nil
		}
		assert.FileExists(t, c.Path(path.Join(traceDir, traceExe)), "the tracer is in the container")
		require.NoError(t, os.WriteFile(c.Path(HarborVerifierDir+"/reward.txt"), []byte("1\n"), 0o644))
		require.NoError(t, os.WriteFile(c.Path(HarborVerifierDir+"/"+traceName), []byte(`{"op":"open","path":"/app/x.py"}`+"\n"), 0o644))
		return sandbox.ExecResult{}, nil
	})
	exe := filepath.Join(t.TempDir(), "flightdeck-binary")
	require.NoError(t, os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755))
	req := Request{
		Task: harborTask(t), Image: "snap", ContainerWorkDir: "/app", TrialDir: t.TempDir(), User: "root",
		Harbor: &HarborVerifier{}, Trace: exe,
	}
	g, err := Run(context.Background(), f, req)
	require.NoError(t, err)
	require.NotNil(t, g.Reward, "%v", g.RewardErr)
	c := grading(t, f)
	var traced sandbox.ExecSpec
	for _, ex := range c.Execs {
		if ex.Cmd[0] == path.Join(traceDir, traceExe) {
			traced = ex
		}
	}
	assert.Equal(t, []string{path.Join(traceDir, traceExe), "__vtrace", HarborVerifierDir + "/" + traceName, "--", "bash", "-c", harborCommand}, traced.Cmd)
	assert.Equal(t, []string{"rm", "-rf", traceDir}, c.Execs[len(c.Execs)-1].Cmd, "the tracer leaves with the grade")
	assert.FileExists(t, filepath.Join(req.TrialDir, TraceFile))
	assert.NoFileExists(t, filepath.Join(req.TrialDir, RewardDir, traceName))
	assert.Empty(t, g.Warnings)
}

// A grade asked to empty files does so as root, in the grading container,
// before the verifier runs (the engine's script test shows the verdict
// fall: verify_audit's answer-hashed).
func TestGradeEmptiesFilesFirst(t *testing.T) {
	f := newFake(t)
	grades(f, func(c *sandboxtest.Container, ex sandbox.ExecSpec) (sandbox.ExecResult, error) {
		require.NoError(t, os.WriteFile(c.Path(HarborVerifierDir+"/reward.txt"), []byte("1\n"), 0o644))
		return sandbox.ExecResult{}, nil
	})
	req := Request{
		Task: harborTask(t), Image: "snap", ContainerWorkDir: "/app", TrialDir: t.TempDir(), User: "root",
		Harbor: &HarborVerifier{}, Empty: []string{"/opt/expected.txt", "/opt/missing.txt"},
	}
	_, err := Run(context.Background(), f, req)
	require.NoError(t, err)
	c := grading(t, f)
	emptied, verified := -1, -1
	for i, ex := range c.Execs {
		switch {
		case len(ex.Cmd) > 4 && ex.Cmd[3] == "empty":
			emptied = i
			assert.Equal(t, "0", ex.User)
			assert.Equal(t, []string{"/opt/expected.txt", "/opt/missing.txt"}, ex.Cmd[4:])
		case len(ex.Cmd) > 2 && ex.Cmd[2] == harborCommand:
			verified = i
		}
	}
	require.GreaterOrEqual(t, emptied, 0, "the files were emptied: %v", c.Execs)
	assert.Less(t, emptied, verified, "before the verifier ran")
}
