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
// gone is taken, which shows the reap ran.
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
	start := func(name string, pid int) string {
		out, err := exec.Command(docker, "run", "-d", "--network", "none", "--name", name,
			"--label", sandbox.LabelManaged+"=true", "--label", sandbox.LabelKind+"=container",
			"--label", sandbox.LabelRun+"="+runID, "--label", sandbox.LabelOwnerHost+"="+host,
			"--label", fmt.Sprintf("%s=%d", sandbox.LabelOwnerPID, pid), "--label", sandbox.LabelCreated+"="+old,
			testenv.BaseImage, "sleep", "infinity").CombinedOutput()
		require.NoError(t, err, "%s", out)
		id := strings.TrimSpace(string(out))
		t.Cleanup(func() { exec.Command(docker, "rm", "-f", id).Run() })
		return id
	}
	live := start(runID+"-live", 1)
	orphan := start(runID+"-orphan", dead.Process.Pid)

	dir := t.TempDir()
	suiteFile := writeSuite(t, dir, suiteFile{Name: "beside", Tasks: []string{taskDir(t, harborTask)},
		Variants: map[string]map[string]any{"nop": {"agent": "nop"}}, Retries: retries(0)})
	runFlightdeck(t, suiteFile)
	exists := func(id string) bool { return exec.Command(docker, "inspect", id).Run() == nil }
	assert.True(t, exists(live), "the run leaves the live process's container alone")
	// (Another test's gc may have reaped the orphan first: either way it
	// is gone.)
	assert.False(t, exists(orphan), "the gone process's container is reaped")
	// gc of this test's run only: another test may be about to reap its
	// own orphans.
	gc := flightdeck(t, dir, nil, "gc", "--run", runID)
	assert.Equal(t, 0, gc.code, "gc: %s", gc.stderr)
	assert.True(t, exists(live), "gc leaves the live process's container alone")
}
