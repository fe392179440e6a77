package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/internal/testenv"
	"github.com/flightdeck/flightdeck/sandbox"
)

// A `flightdeck run` started beside a running test (another run, a test
// binary) leaves that process's containers alone, however old: its reap
// takes only what a process that is gone left. A container whose owner is
// gone is taken, which shows the reap ran. What a test makes carries a
// label of its own (sandbox.LabelTest): a real run never reaps it, even
// once its test is gone, and a test's run never reaps a user's.
func TestRunLeavesALiveProcessesContainersAlone(t *testing.T) {
	requireEngine(t)
	docker := testenv.Tool(t, "docker")
	host, err := os.Hostname()
	require.NoError(t, err)
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	// Older than the reap's minimum age, and younger than the live owner
	// (pid 1, up since the machine started), as a long test's container
	// is younger than its test process.
	old := time.Now().Add(-2 * time.Minute).UTC().Format(time.RFC3339)
	runID := fmt.Sprintf("e2e-beside-%d", time.Now().UnixNano())
	start := func(name string, pid int, test string) string {
		args := []string{"run", "-d", "--network", "none", "--name", name,
			"--label", sandbox.LabelManaged + "=true", "--label", sandbox.LabelKind + "=container",
			"--label", sandbox.LabelRun + "=" + runID, "--label", sandbox.LabelOwnerHost + "=" + host,
			"--label", fmt.Sprintf("%s=%d", sandbox.LabelOwnerPID, pid), "--label", sandbox.LabelCreated + "=" + old}
		if test != "" {
			args = append(args, "--label", sandbox.LabelTest+"="+test)
		}
		out, err := exec.Command(docker, append(args, testenv.BaseImage, "sleep", "infinity")...).CombinedOutput()
		require.NoError(t, err, "%s", out)
		id := strings.TrimSpace(string(out))
		t.Cleanup(func() { exec.Command(docker, "rm", "-f", id).Run() })
		return id
	}
	test := os.Getenv(sandbox.TestEnv)
	require.NotEmpty(t, test, "a test process marks what it makes as a test's")
	live := start(runID+"-live", 1, test)
	orphan := start(runID+"-orphan", dead.Process.Pid, test)
	// What a user's run left, and what a test left whose process is gone.
	userOrphan := start(runID+"-user-orphan", dead.Process.Pid, "")
	// A test label of this test's alone: no other test's reaper takes it.
	ownTest := runID
	testOrphan := start(runID+"-test-orphan", dead.Process.Pid, ownTest)
	exists := func(id string) bool { return exec.Command(docker, "inspect", id).Run() == nil }

	// A real run (no test label of its own) beside the running test.
	dir := t.TempDir()
	suiteFile := writeSuite(t, dir, suiteFile{Name: "beside", Tasks: []string{taskDir(t, harborTask)},
		Variants: map[string]map[string]any{"nop": {"agent": "nop"}}, Retries: retries(0)})
	real := flightdeck(t, dir, []string{sandbox.TestEnv + "="}, "run", suiteFile)
	require.Equal(t, 0, real.code, "the run measures its nop: %s", real.stderr)
	assert.True(t, exists(live), "a real run leaves the live test's container alone")
	assert.True(t, exists(testOrphan), "a real run never reaps a test's container, even one whose test is gone: %s", real.stderr)
	assert.False(t, exists(userOrphan), "a real run reaps what a gone run of a user left")

	// A test's run beside it.
	runFlightdeck(t, suiteFile, "--no-cache") // a cached trial opens no engine, so reaps nothing
	assert.True(t, exists(live), "the run leaves the live process's container alone")
	// (Another test's gc may have reaped the orphan first: either way it
	// is gone.)
	assert.False(t, exists(orphan), "the gone process's container is reaped")
	assert.True(t, exists(testOrphan), "nor does a run of another test's")
	mine := flightdeck(t, dir, []string{sandbox.TestEnv + "=" + ownTest}, "run", suiteFile, "--no-cache")
	require.Equal(t, 0, mine.code, "%s", mine.stderr)
	assert.False(t, exists(testOrphan), "a run of the same test's reaps what a gone run of it left")
	// gc of this test's run only: another test may be about to reap its
	// own orphans.
	gc := flightdeck(t, dir, nil, "gc", "--run", runID)
	assert.Equal(t, 0, gc.code, "gc: %s", gc.stderr)
	assert.True(t, exists(live), "gc leaves the live process's container alone")
}
