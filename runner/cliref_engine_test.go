package runner

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/tasks"
)

// cliHarbor runs one trial of a fixture task with scripts/cli-reference.sh
// --harbor, a plain docker-CLI re-enactment of Harbor's shared-mode
// procedure, and returns the reward it printed ("none" when no reward).
func cliHarbor(ctx context.Context, imageMap map[string]string, task, agent, runID string) (string, error) {
	script, err := filepath.Abs(filepath.Join("..", "scripts", "cli-reference.sh"))
	if err != nil {
		return "", err
	}
	var pairs []string
	for _, k := range slices.Sorted(maps.Keys(imageMap)) {
		pairs = append(pairs, k+"="+imageMap[k])
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", script, "--harbor", task, agent, runID)
	cmd.Env = append(os.Environ(), "CLIREF_IMAGE_MAP="+strings.Join(pairs, " "))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("cli-reference.sh --harbor %s %s: %w\n%s", filepath.Base(task), agent, err, stderr.String())
	}
	lines := strings.Fields(strings.TrimSpace(string(out)))
	if len(lines) == 0 {
		return "", fmt.Errorf("cli-reference.sh --harbor %s %s printed no reward; stderr:\n%s", filepath.Base(task), agent, stderr.String())
	}
	return lines[len(lines)-1], nil
}

// sameReward compares a flightdeck reward with the re-enactment's.
func sameReward(fd *float64, cli string) bool {
	if fd == nil {
		return cli == "none"
	}
	v, err := strconv.ParseFloat(cli, 64)
	return err == nil && v == *fd
}

// cliResult is the re-enactment's reward for one fixture's oracle, or why
// it has none; recorded when it comes from harborCLIRecord.
type cliResult struct {
	reward   string
	err      error
	inputs   string
	recorded bool
}

// updateHarborCLI re-enacts every fixture, and records the rewards in
// harborCLIRecord.
var updateHarborCLI = flag.Bool("update-harbor-cli", false,
	"re-enact Harbor's procedure (scripts/cli-reference.sh) on every Harbor fixture and record its rewards in fixtures/harbor/"+harborCLIRecord)

// harborCLIRecord, in fixtures/harbor, holds the re-enactment's reward for
// each fixture's oracle, with a digest of everything it depends on: the
// task (task_digest, and its solution/), the script, the base image's
// recipe and the image map. A fixture whose digest differs is re-enacted.
const harborCLIRecord = "harbor-cli.json"

// harborCLIRecorded is harborCLIRecord's content.
type harborCLIRecorded struct {
	Note  string                     `json:"note"`
	Tasks map[string]harborCLIReward `json:"tasks"`
}

// harborCLIReward is one fixture's recorded re-enactment.
type harborCLIReward struct {
	Inputs string `json:"inputs"`
	Oracle string `json:"oracle"`
}

// cliInputs digests what the re-enactment of task's oracle depends on.
func cliInputs(task string, imageMap map[string]string) (string, error) {
	h := sha256.New()
	digest, err := tasks.TaskDigest(task)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(h, "task %s\n", digest)
	if _, err := os.Stat(filepath.Join(task, "solution")); err == nil {
		if digest, err = tasks.DigestTree(filepath.Join(task, "solution"), "solution"); err != nil {
			return "", err
		}
		fmt.Fprintf(h, "solution %s\n", digest)
	}
	for _, f := range []string{"scripts/cli-reference.sh", "sandbox/base-image.sh"} {
		data, err := os.ReadFile(filepath.Join("..", f))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %x\n", filepath.Base(f), sha256.Sum256(data))
	}
	for _, k := range slices.Sorted(maps.Keys(imageMap)) {
		fmt.Fprintf(h, "image %s=%s\n", k, imageMap[k])
	}
	return fmt.Sprintf("sha256:%x", h.Sum(nil)), nil
}

// startCLIReference gets the reward of the re-enactment of Harbor's
// procedure with the oracle for every fixture task: from harborCLIRecord
// when what it depends on is unchanged, else by running it, two at a
// time, in the background. It returns what waits for the rewards. Each
// fixture's reference runs once for each change to it: its nop runs
// nothing, and expected.json's nop reward (Harbor's) is what flightdeck's
// nop is held to.
func startCLIReference(t *testing.T, eng *sandbox.Docker, exp harborExpected, root string) func() map[string]cliResult {
	t.Helper()
	var rec harborCLIRecorded
	if data, err := os.ReadFile(filepath.Join(root, harborCLIRecord)); err == nil && !*updateHarborCLI {
		require.NoError(t, json.Unmarshal(data, &rec), harborCLIRecord)
	}
	names := slices.Sorted(maps.Keys(exp.Tasks))
	out := make(map[string]cliResult, len(names))
	var run []string
	for _, name := range names {
		inputs, err := cliInputs(filepath.Join(root, "tasks", name), exp.ImageMap)
		require.NoError(t, err, name)
		if r, ok := rec.Tasks[name]; ok && r.Inputs == inputs {
			out[name] = cliResult{reward: r.Oracle, inputs: inputs, recorded: true}
			continue
		}
		out[name] = cliResult{inputs: inputs}
		run = append(run, name)
	}
	if len(run) == 0 {
		return func() map[string]cliResult { return out }
	}
	t.Logf("re-enacting Harbor's procedure for %d fixture(s) not recorded as they are in %s: %v", len(run), harborCLIRecord, run)
	for _, tool := range []string{"docker", "python3", "docker-compose"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the re-enactment of Harbor's procedure needs %s (docker-compose: Debian's package, for the multi-container fixtures): %v", tool, err)
		}
	}
	runID := "cliref-" + NewRunID(time.Now())
	t.Cleanup(func() {
		eng.Reap(context.Background(), sandbox.ReapOptions{RunID: runID})
		exec.Command("bash", "-c", `docker images -q --filter label=flightdeck.run=`+runID+` | xargs -r docker rmi -f`).Run()
	})
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	ctx := t.Context()
	for _, name := range run {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			reward, err := cliHarbor(ctx, exp.ImageMap, filepath.Join(root, "tasks", name), "oracle", runID)
			mu.Lock()
			out[name] = cliResult{reward: reward, err: err, inputs: out[name].inputs}
			mu.Unlock()
		}()
	}
	// A test that ends before it waits still waits for the re-enactments
	// (stopped by its context) before their leftovers are reaped.
	t.Cleanup(wg.Wait)
	return func() map[string]cliResult {
		wg.Wait()
		return out
	}
}

// recordCLI writes harborCLIRecord from the re-enactment's rewards.
func recordCLI(t *testing.T, root string, cli map[string]cliResult) {
	t.Helper()
	rec := harborCLIRecorded{
		Note: "The reward of scripts/cli-reference.sh --harbor TASK oracle (Harbor's procedure, re-enacted with the docker CLI) " +
			"for each task, with a digest of what it depends on; the runner's engine test re-enacts a task whose digest differs. " +
			"Written by go test ./runner -run TestEngineHarborFixtures -update-harbor-cli.",
		Tasks: map[string]harborCLIReward{},
	}
	for name, c := range cli {
		require.NoError(t, c.err, name)
		rec.Tasks[name] = harborCLIReward{Inputs: c.inputs, Oracle: c.reward}
	}
	data, err := json.MarshalIndent(rec, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(root, harborCLIRecord), append(data, '\n'), 0o644))
}

// compareWithCLI checks that every fixture under fixtures/harbor/tasks got
// the same reward from flightdeck's oracle (res) as from a plain docker-CLI
// re-enactment of Harbor's shared-mode procedure (cli); the only
// differences allowed are the attacks expected.json lists with
// harbor_shared_oracle, where flightdeck's grading is the hardened one.
func compareWithCLI(t *testing.T, exp harborExpected, root string, res map[string]*results.Result, cli map[string]cliResult) {
	t.Helper()
	var table []string
	for _, name := range slices.Sorted(maps.Keys(exp.Tasks)) {
		want := exp.Tasks[name]
		oracle := res[name+"__oracle__1"]
		require.NotNil(t, oracle, name)
		c := cli[name]
		if !assert.NoError(t, c.err, name) {
			continue
		}
		source := "re-enacted"
		if c.recorded {
			source = "recorded"
		}
		table = append(table, fmt.Sprintf("%-24s flightdeck %-4v harbor-cli %-4s (%s)", name, fmtReward(oracle.Reward), c.reward, source))
		if want.HarborRace != "" {
			// The task races its own entrypoint: Harbor's procedure wins
			// or loses by the machine's pace (flightdeck waits for the
			// container to settle, and expected.json holds its reward).
			t.Logf("%s: not compared (expected.json: harbor_race): flightdeck %s, harbor-cli %s", name, fmtReward(oracle.Reward), c.reward)
			continue
		}
		if want.HarborSharedOracle != nil {
			// An attack Harbor's procedure lets through (or trips on) and
			// flightdeck's hardening does not.
			assert.True(t, sameReward(want.HarborSharedOracle, c.reward), "%s: harbor-cli oracle %s, expected.json says %v", name, c.reward, *want.HarborSharedOracle)
			assert.False(t, sameReward(oracle.Reward, c.reward), "%s: a listed difference that no longer differs", name)
		} else {
			assert.True(t, sameReward(oracle.Reward, c.reward), "%s: oracle: flightdeck %v (%s), harbor-cli %s", name, fmtReward(oracle.Reward), oracle.Error, c.reward)
		}
	}
	t.Logf("oracle rewards:\n%s", strings.Join(table, "\n"))
	if *updateHarborCLI && !t.Failed() {
		recordCLI(t, root, cli)
	}
}

func fmtReward(r *float64) string {
	if r == nil {
		return "none"
	}
	return strconv.FormatFloat(*r, 'g', -1, 64)
}
