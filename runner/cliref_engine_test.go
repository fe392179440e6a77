package runner

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/sandbox"
)

// cliHarbor runs one trial of a fixture task with scripts/cli-reference.sh
// --harbor, a plain docker-CLI re-enactment of Harbor's shared-mode
// procedure, and returns the reward it printed ("none" when no reward).
func cliHarbor(t *testing.T, imageMap map[string]string, task, agent, runID string) string {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("..", "scripts", "cli-reference.sh"))
	require.NoError(t, err)
	var pairs []string
	for _, k := range slices.Sorted(maps.Keys(imageMap)) {
		pairs = append(pairs, k+"="+imageMap[k])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", script, "--harbor", task, agent, runID)
	// The oracle and nop trials of a task share its image (one build).
	cmd.Env = append(os.Environ(), "CLIREF_IMAGE_MAP="+strings.Join(pairs, " "), "CLIREF_KEEP_IMAGE=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "cli-reference.sh --harbor %s %s:\n%s", filepath.Base(task), agent, stderr.String())
	lines := strings.Fields(strings.TrimSpace(string(out)))
	require.NotEmpty(t, lines, "cli-reference.sh printed no reward; stderr:\n%s", stderr.String())
	return lines[len(lines)-1]
}

// sameReward compares a flightdeck reward with the re-enactment's.
func sameReward(fd *float64, cli string) bool {
	if fd == nil {
		return cli == "none"
	}
	v, err := strconv.ParseFloat(cli, 64)
	return err == nil && v == *fd
}

// compareWithCLI checks that every fixture under fixtures/harbor/tasks got
// the same reward from flightdeck (res) as from a plain docker-CLI
// re-enactment of Harbor's shared-mode procedure, under the oracle and nop;
// the only differences allowed are the attacks expected.json lists with
// harbor_shared_oracle, where flightdeck's grading is the hardened one.
func compareWithCLI(t *testing.T, eng *sandbox.Docker, exp harborExpected, root string, rec *results.RunRecord, res map[string]*results.Result) {
	t.Helper()
	if _, err := exec.LookPath("docker"); err != nil {
		t.Fatalf("the docker CLI is needed for the re-enactment: %v", err)
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatalf("python3 is needed by the re-enactment to read task.toml: %v", err)
	}
	if _, err := exec.LookPath("docker-compose"); err != nil {
		t.Fatalf("docker-compose (Debian's package) is needed by the re-enactment of the multi-container fixtures: %v", err)
	}
	runID := "cliref-" + rec.RunID
	t.Cleanup(func() {
		eng.Reap(context.Background(), sandbox.ReapOptions{RunID: runID})
		exec.Command("bash", "-c", `docker images -q --filter label=flightdeck.run=`+runID+` | xargs -r docker rmi -f`).Run()
	})

	names := slices.Sorted(maps.Keys(exp.Tasks))
	type cell struct{ oracle, nop string }
	cli := make(map[string]cell, len(names))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for _, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			task := filepath.Join(root, "tasks", name)
			c := cell{oracle: cliHarbor(t, exp.ImageMap, task, "oracle", runID), nop: cliHarbor(t, exp.ImageMap, task, "nop", runID)}
			mu.Lock()
			cli[name] = c
			mu.Unlock()
		}()
	}
	wg.Wait()

	var table []string
	for _, name := range names {
		want := exp.Tasks[name]
		oracle, nop := res[name+"__oracle__1"], res[name+"__nop__1"]
		require.NotNil(t, oracle, name)
		require.NotNil(t, nop, name)
		c := cli[name]
		table = append(table, fmt.Sprintf("%-24s flightdeck %v/%v  harbor-cli %s/%s", name, fmtReward(oracle.Reward), fmtReward(nop.Reward), c.oracle, c.nop))
		if want.HarborSharedOracle != nil {
			// An attack Harbor's procedure lets through (or trips on) and
			// flightdeck's hardening does not.
			assert.True(t, sameReward(want.HarborSharedOracle, c.oracle), "%s: harbor-cli oracle %s, expected.json says %v", name, c.oracle, *want.HarborSharedOracle)
			assert.False(t, sameReward(oracle.Reward, c.oracle), "%s: a listed difference that no longer differs", name)
		} else {
			assert.True(t, sameReward(oracle.Reward, c.oracle), "%s: oracle: flightdeck %v (%s), harbor-cli %s", name, fmtReward(oracle.Reward), oracle.Error, c.oracle)
		}
		assert.True(t, sameReward(nop.Reward, c.nop), "%s: nop: flightdeck %v (%s), harbor-cli %s", name, fmtReward(nop.Reward), nop.Error, c.nop)
	}
	sort.Strings(table)
	t.Logf("rewards (oracle/nop):\n%s", strings.Join(table, "\n"))
}

func fmtReward(r *float64) string {
	if r == nil {
		return "none"
	}
	return strconv.FormatFloat(*r, 'g', -1, 64)
}
