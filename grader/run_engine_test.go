package grader

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/internal/testenv"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/tasks"
)

// baseImage is the offline image the test images build from.
const baseImage = "flightdeck/base:bookworm"

// engineFixture is a connected engine, a run id for everything the test
// creates, and the two images grades start from.
type engineFixture struct {
	eng      sandbox.Engine
	runID    string
	native   string // a pristine task image: WORKDIR /app, holding /app/made-by-agent
	snapshot string // an agent snapshot: /app/made-by-agent, a planted /logs/verifier/reward.txt and reward.json = 1, planted /tests files, a user agentx (1234)
}

// newEngineFixture connects to the engine (skipping without one, unless
// FLIGHTDECK_REQUIRE_DOCKER=1) and removes every container of the test when
// it ends.
func newEngineFixture(t *testing.T) *engineFixture {
	t.Helper()
	eng := testenv.Engine(t)
	f := &engineFixture{eng: eng, runID: "grader-test-" + randomSuffix(t)}
	t.Cleanup(func() {
		if _, err := eng.Reap(context.Background(), sandbox.ReapOptions{RunID: f.runID}); err != nil {
			t.Errorf("reap %s: %v", f.runID, err)
		}
	})
	return f
}

// buildImages builds the image the grades of TestRunOnEngine start from.
func (f *engineFixture) buildImages(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	suffix := randomSuffix(t)
	// One image serves as both: building is slow, and a grade must not care.
	f.native = f.build(ctx, t, "grader-test-"+suffix,
		"FROM "+baseImage+"\n"+
			"RUN mkdir -p /app /logs/verifier && echo agent > /app/made-by-agent && echo 1 > /logs/verifier/reward.txt && "+
			"echo '{\"reward\": 1}' > /logs/verifier/reward.json && chmod -R a+rwX /logs && "+
			"mkdir -p /tests && echo planted > /tests/planted.txt && echo 'echo 1 > /logs/verifier/reward.txt' > /tests/test.sh && "+
			"useradd --uid 1234 --user-group agentx\n"+
			"WORKDIR /app\n")
	f.snapshot = f.native
}

func (f *engineFixture) build(ctx context.Context, t *testing.T, name, dockerfile string) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "Dockerfile"), dockerfile)
	img, err := f.eng.EnsureImage(ctx, sandbox.BuildSpec{Name: name, ContextDir: dir, Timeout: 5 * time.Minute})
	require.NoError(t, err, "build %s", name)
	t.Cleanup(func() {
		if err := f.eng.RemoveImage(context.Background(), img.Ref); err != nil {
			t.Errorf("remove image %s: %v", img.Ref, err)
		}
	})
	return img.Ref
}

// assertNoContainers checks that the grade left no container behind.
func (f *engineFixture) assertNoContainers(t *testing.T) {
	t.Helper()
	reaped, err := f.eng.Reap(context.Background(), sandbox.ReapOptions{RunID: f.runID})
	require.NoError(t, err)
	assert.Zero(t, reaped.Containers, "containers left behind: %v", reaped.Removed)
}

func randomSuffix(t *testing.T) string {
	b := make([]byte, 4)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

// engineTask writes a task dir whose tests/test.sh is script; native tasks
// run `bash tests/test.sh`.
func engineTask(t *testing.T, native bool, script string) *tasks.Task {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "tests", "test.sh"), "#!/bin/bash\n"+script)
	task := &tasks.Task{ID: "grader-engine", Dir: dir}
	if native {
		task.Config.Flightdeck.Grader = &tasks.GraderKeys{Command: "bash tests/test.sh"}
	}
	return task
}

func (f *engineFixture) request(t *testing.T, task *tasks.Task, image string) Request {
	work := t.TempDir()
	return Request{
		Task: task, Image: image, WorkDir: work, ContainerWorkDir: "/app",
		TrialDir: filepath.Join(t.TempDir(), "trial"), RunID: f.runID,
		TrialID: strings.ReplaceAll(t.Name(), "/", "-"), Timeout: 2 * time.Minute,
		Owner: sandbox.Owner{UID: os.Getuid(), GID: os.Getgid()},
	}
}

// nativeChecks fail the grade (exit 3, no reward) unless the grader runs
// where and how Run promises.
const nativeChecks = `set -u
fail() { echo "CHECK FAILED: $*"; exit 3; }
[ "$PWD" = /flightdeck/task ] || fail "cwd $PWD"
[ -f /flightdeck/task/tests/test.sh ] || fail "tests not at /flightdeck/task/tests"
[ "$FLIGHTDECK_WORKDIR" = /app ] || fail "FLIGHTDECK_WORKDIR=$FLIGHTDECK_WORKDIR"
[ "$FLIGHTDECK_REWARD_DIR" = /flightdeck/reward ] || fail "FLIGHTDECK_REWARD_DIR=$FLIGHTDECK_REWARD_DIR"
[ -z "$(ls -A "$FLIGHTDECK_REWARD_DIR")" ] || fail "reward dir not empty: $(ls -A "$FLIGHTDECK_REWARD_DIR")"
[ "$(cat /app/solution.txt)" = done ] || fail "the agent's work is not visible"
[ ! -e /app/made-by-agent ] || fail "the image's /app shows instead of the agent's work dir"
touch /app/written-by-grader 2>/dev/null && fail "the work dir is writable"
[ "$(ls /sys/class/net)" = lo ] || fail "network interfaces: $(ls /sys/class/net | tr '\n' ' ')"
[ "$EXTRA" = yes ] || fail "request env missing"
echo "checks passed"
`

func TestRunOnEngine(t *testing.T) {
	f := newEngineFixture(t)
	f.buildImages(t)

	// Each subtest grades on the images built once above.
	t.Run("native grader writes reward 1; the agent's planted rewards are ignored", func(t *testing.T) { runOnEngineNativeReward(t, f) })
	t.Run("native grader that writes 0 beside a planted 1", func(t *testing.T) { runOnEngineNativeZeroBesidePlanted(t, f) })
	t.Run("native grader past its timeout", func(t *testing.T) { runOnEngineNativeTimeout(t, f) })
	t.Run("native grader that writes no reward", func(t *testing.T) { runOnEngineNativeNoReward(t, f) })
	t.Run("native grader that writes a malformed reward", func(t *testing.T) { runOnEngineNativeMalformedReward(t, f) })
	t.Run("native grader container stopped from within mid-grade, the grade fails", func(t *testing.T) { runOnEngineNativeStoppedFromWithin(t, f) })
	t.Run("native grader container killed through the engine mid-grade, infrastructure", func(t *testing.T) { runOnEngineNativeKilledThroughEngine(t, f) })
	t.Run("harbor grade reads the fresh verifier dir, not the planted one", func(t *testing.T) { runOnEngineHarborFreshVerifierDir(t, f) })
	t.Run("harbor grade with the work dir mounted, as a user who is not root", func(t *testing.T) { runOnEngineHarborWorkDirMounted(t, f) })
	t.Run("harbor grade: /tests holds exactly the task's tests; the work dir is the agent's user's", func(t *testing.T) { runOnEngineHarborTestsAndOwner(t, f) })
	t.Run("a stale reward dir is refused before any container starts", func(t *testing.T) { runOnEngineStaleRewardDir(t, f) })
}

func runOnEngineNativeReward(t *testing.T, f *engineFixture) {
	ctx := context.Background()
	task := engineTask(t, true, nativeChecks+`
printf '{"reward": 1, "passed": 2, "total": 2}' > "$FLIGHTDECK_REWARD_DIR/reward.json"
echo 'RESULT {"passed": 2, "total": 2, "by_category": {"a": {"passed": 2, "total": 2}}, "failed": []}'
`)
	req := f.request(t, task, f.native)
	req.Env = []string{"EXTRA=yes", "FLIGHTDECK_REWARD_DIR=/app"}
	writeFile(t, filepath.Join(req.WorkDir, "solution.txt"), "done\n")
	writeFile(t, filepath.Join(req.WorkDir, "reward.json"), `{"reward": 0}`)
	writeFile(t, filepath.Join(req.WorkDir, "reward.txt"), "0\n")

	g, err := Run(ctx, f.eng, req)
	require.NoError(t, err)
	log, _ := os.ReadFile(g.LogPath)
	require.NotNil(t, g.Reward, "reward error %v; log:\n%s", g.RewardErr, log)
	assert.Equal(t, 1.0, g.Reward.Value)
	assert.Equal(t, map[string]float64{"reward": 1, "passed": 2, "total": 2}, g.Reward.Values)
	assert.Equal(t, &Summary{Passed: 2, Total: 2, ByCategory: map[string]Category{"a": {2, 2}}, Failed: []string{}}, g.Summary)
	assert.Equal(t, 0, g.ExitCode)
	assert.Contains(t, string(log), "checks passed")
	assert.Equal(t, OutcomePassed, g.Outcome())
	assert.NoFileExists(t, filepath.Join(req.WorkDir, "written-by-grader"))
	f.assertNoContainers(t)
}

func runOnEngineNativeZeroBesidePlanted(t *testing.T, f *engineFixture) {
	ctx := context.Background()
	task := engineTask(t, true, `echo 0 > "$FLIGHTDECK_REWARD_DIR/reward.txt"`)
	req := f.request(t, task, f.native)
	writeFile(t, filepath.Join(req.WorkDir, "reward.json"), `{"reward": 1}`)
	writeFile(t, filepath.Join(req.WorkDir, "reward.txt"), "1\n")
	g, err := Run(ctx, f.eng, req)
	require.NoError(t, err)
	require.NotNil(t, g.Reward, "%v", g.RewardErr)
	assert.Equal(t, 0.0, g.Reward.Value)
	assert.Equal(t, RewardTxt, g.Reward.Source)
	assert.Equal(t, OutcomeFailed, g.Outcome())
}

func runOnEngineNativeTimeout(t *testing.T, f *engineFixture) {
	ctx := context.Background()
	task := engineTask(t, true, `echo started; echo 1 > "$FLIGHTDECK_REWARD_DIR/early.txt"; sleep 60; echo 1 > "$FLIGHTDECK_REWARD_DIR/reward.txt"`)
	req := f.request(t, task, f.native)
	// Long enough for the script's first lines to run on a machine under
	// make test's own load (2 s was not, at load 30 on 2 cores); the
	// script sleeps far past it, so the timeout is still what ends it.
	req.Timeout = 10 * time.Second
	g, err := Run(ctx, f.eng, req)
	require.NoError(t, err)
	assert.True(t, g.TimedOut)
	assert.Nil(t, g.Reward)
	assertRewardKind(t, RewardMissing, g.RewardErr)
	assert.Equal(t, OutcomeVerifierTimeout, g.Outcome())
	log, _ := os.ReadFile(g.LogPath)
	assert.Contains(t, string(log), "started")
	// The reward dir was handed back even though its container was killed.
	fi, err := os.Stat(filepath.Join(req.TrialDir, RewardDir, "early.txt"))
	require.NoError(t, err)
	assertOwner(t, fi, req.Owner)
	f.assertNoContainers(t)
}

func runOnEngineNativeNoReward(t *testing.T, f *engineFixture) {
	ctx := context.Background()
	g, err := Run(ctx, f.eng, f.request(t, engineTask(t, true, "echo nothing to say; exit 1"), f.native))
	require.NoError(t, err)
	assert.Equal(t, 1, g.ExitCode)
	assertRewardKind(t, RewardMissing, g.RewardErr)
	assert.Nil(t, g.Summary)
	assert.Equal(t, OutcomeFailed, g.Outcome())
}

func runOnEngineNativeMalformedReward(t *testing.T, f *engineFixture) {
	ctx := context.Background()
	for _, tt := range []struct{ content, kind string }{
		{`{"reward": "1"}`, RewardNonNumeric},
		{`{"reward": NaN}`, RewardNotFinite},
		{`{"reward": 1`, RewardMalformed},
	} {
		script := "printf '%s' '" + tt.content + "' > \"$FLIGHTDECK_REWARD_DIR/reward.json\""
		g, err := Run(ctx, f.eng, f.request(t, engineTask(t, true, script), f.native))
		require.NoError(t, err)
		assertRewardKind(t, tt.kind, g.RewardErr)
		assert.Nil(t, g.Reward)
	}
}

func runOnEngineNativeStoppedFromWithin(t *testing.T, f *engineFixture) {
	ctx := context.Background()
	// The code under test kills the keep-alive process, which ends the
	// container under the grader: the agent's doing, not the engine's.
	script := `echo 1 > "$FLIGHTDECK_REWARD_DIR/reward.txt"; kill -9 $(pgrep -x sleep); sleep 30`
	req := f.request(t, engineTask(t, true, script), f.native)
	g, err := Run(ctx, f.eng, req)
	log, _ := os.ReadFile(filepath.Join(req.TrialDir, LogFile))
	require.NoError(t, err, "a failed grade, not an infrastructure error; log:\n%s", log)
	assert.False(t, g.TimedOut)
	assert.Nil(t, g.Reward, "the reward written before the container stopped is not a verdict")
	assertRewardKind(t, RewardUnfinished, g.RewardErr)
	assert.Equal(t, OutcomeFailed, g.Outcome())
	f.assertNoContainers(t)
}

func runOnEngineNativeKilledThroughEngine(t *testing.T, f *engineFixture) {
	ctx := context.Background()
	script := `touch "$FLIGHTDECK_REWARD_DIR/started"; sleep 100; echo 1 > "$FLIGHTDECK_REWARD_DIR/reward.txt"`
	req := f.request(t, engineTask(t, true, script), f.native)
	killed := make(chan string, 1)
	go func() {
		last := "the grader never started"
		defer func() { killed <- last }()
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if _, err := os.Stat(filepath.Join(req.TrialDir, RewardDir, "started")); err != nil {
				continue
			}
			out, err := exec.Command("docker", "ps", "-q", "--filter", "label="+sandbox.LabelTrial+"="+req.TrialID).Output()
			last = fmt.Sprintf("docker ps: %v %q", err, out)
			if id := strings.TrimSpace(string(out)); err == nil && id != "" {
				out, err := exec.Command("docker", "kill", id).CombinedOutput()
				last = fmt.Sprintf("docker kill %s: %v %s", id, err, out)
				return
			}
		}
	}()
	g, err := Run(ctx, f.eng, req)
	log, _ := os.ReadFile(filepath.Join(req.TrialDir, LogFile))
	require.Error(t, err, "an infrastructure error (%s); grade %+v; log:\n%s", <-killed, g, log)
	assert.ErrorIs(t, err, sandbox.ErrContainerGone)
	assert.Contains(t, err.Error(), "killed through the engine")
	f.assertNoContainers(t)
}

func runOnEngineHarborFreshVerifierDir(t *testing.T, f *engineFixture) {
	ctx := context.Background()
	task := engineTask(t, false, `set -u
echo "in $PWD as $(id -un)"
ls /logs/verifier
cat /app/made-by-agent
cat /app/host-file.txt
[ -x /tests/test.sh ] && echo "test.sh executable"
echo 0 > /logs/verifier/reward.txt
echo 'RESULT {"passed": 0, "total": 1, "failed": ["t1"]}'
exit 7
`)
	req := f.request(t, task, f.snapshot)
	req.User = "root"
	req.Env = []string{"V=1"}
	writeFile(t, filepath.Join(req.WorkDir, "host-file.txt"), "from the host work dir\n")
	req.WorkDir = "" // the snapshot carries the work dir's files
	g, err := Run(ctx, f.eng, req)
	require.NoError(t, err)
	log, _ := os.ReadFile(g.LogPath)
	require.NotNil(t, g.Reward, "%v; log:\n%s", g.RewardErr, log)
	assert.Equal(t, 0.0, g.Reward.Value, "the planted reward.txt/reward.json of the snapshot do not count")
	assert.Equal(t, RewardTxt, g.Reward.Source)
	assert.Contains(t, string(log), "in /app as root")
	assert.Contains(t, string(log), "agent\n")
	assert.Contains(t, string(log), "test.sh executable")
	assert.NotContains(t, string(log), "from the host work dir", "no work dir mounted when WorkDir is empty")
	assert.Equal(t, &Summary{Passed: 0, Total: 1, Failed: []string{"t1"}}, g.Summary)
	f.assertNoContainers(t)
}

func runOnEngineHarborWorkDirMounted(t *testing.T, f *engineFixture) {
	ctx := context.Background()
	task := engineTask(t, false, `echo "as $(id -un)"
cat /app/host-file.txt
echo '{"reward": 1, "extra": 0.5}' > /logs/verifier/reward.json
`)
	req := f.request(t, task, f.snapshot)
	req.User = "nobody"
	writeFile(t, filepath.Join(req.WorkDir, "host-file.txt"), "from the host work dir\n")
	g, err := Run(ctx, f.eng, req)
	require.NoError(t, err)
	log, _ := os.ReadFile(g.LogPath)
	require.NotNil(t, g.Reward, "%v; log:\n%s", g.RewardErr, log)
	assert.Equal(t, 1.0, g.Reward.Value)
	assert.Equal(t, map[string]float64{"reward": 1, "extra": 0.5}, g.Reward.Values)
	assert.Contains(t, string(log), "as nobody")
	assert.Contains(t, string(log), "from the host work dir")
	fi, err := os.Stat(filepath.Join(req.TrialDir, RewardDir, RewardJSON))
	require.NoError(t, err)
	assertOwner(t, fi, req.Owner)
	f.assertNoContainers(t)
}

func runOnEngineHarborTestsAndOwner(t *testing.T, f *engineFixture) {
	ctx := context.Background()
	task := engineTask(t, false, `echo "tests: $(cd /tests && ls -A | tr '\n' ' ')"
echo "owner: $(stat -c %u:%g /app/host-file.txt)"
echo 0.5 > /logs/verifier/reward.txt
`)
	writeFile(t, filepath.Join(task.Dir, "tests", "data.txt"), "the task's\n")
	req := f.request(t, task, f.snapshot)
	req.User = "root"
	req.Harbor = &HarborVerifier{WorkDirUser: "agentx"}
	req.Owner = sandbox.Owner{UID: 4321, GID: 4322} // the caller is not root: the work dir was handed back
	writeFile(t, filepath.Join(req.WorkDir, "host-file.txt"), "from the host work dir\n")
	g, err := Run(ctx, f.eng, req)
	require.NoError(t, err)
	log, _ := os.ReadFile(g.LogPath)
	require.NotNil(t, g.Reward, "%v; log:\n%s", g.RewardErr, log)
	assert.Equal(t, 0.5, g.Reward.Value, "the planted /tests/test.sh did not run")
	assert.Contains(t, string(log), "tests: data.txt test.sh \n", "nothing the agent left at /tests remains")
	assert.Contains(t, string(log), "owner: 1234:1234\n", "the verifier sees the agent's user's files")
	fi, err := os.Stat(filepath.Join(req.WorkDir, "host-file.txt"))
	require.NoError(t, err)
	assertOwner(t, fi, req.Owner)
	f.assertNoContainers(t)
}

func runOnEngineStaleRewardDir(t *testing.T, f *engineFixture) {
	ctx := context.Background()
	req := f.request(t, engineTask(t, true, "true"), f.native)
	writeFile(t, filepath.Join(req.TrialDir, RewardDir, "reward.txt"), "1")
	_, err := Run(ctx, f.eng, req)
	require.Error(t, err)
	assert.False(t, errors.Is(err, sandbox.ErrContainerGone))
	f.assertNoContainers(t)
}
