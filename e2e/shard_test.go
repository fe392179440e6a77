package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/runner/results"
)

// shardTasks are the fixture tasks of the sharded dataset.
var shardTasks = []string{"reward-json", "reward-json-wins", "reward-keys", "reward-txt", "exact-tree", "env-templating", "legacy-v1", "memory-string"}

// shardDataset copies the fixture tasks into a dataset dir, with one more
// task whose oracle fails (its solve.sh does nothing).
func shardDataset(t *testing.T, dir string) string {
	t.Helper()
	ds := filepath.Join(dir, "dataset")
	for _, name := range shardTasks {
		require.NoError(t, os.CopyFS(filepath.Join(ds, name), os.DirFS(filepath.Join("..", "fixtures", "harbor", "tasks", name))))
	}
	broken := filepath.Join(ds, "oracle-fails")
	require.NoError(t, os.CopyFS(broken, os.DirFS(filepath.Join("..", "fixtures", "harbor", "tasks", "reward-txt"))))
	toml := readText(t, filepath.Join(broken, "task.toml"))
	require.NoError(t, os.WriteFile(filepath.Join(broken, "task.toml"), []byte(strings.Replace(toml, "flightdeck-fixtures/reward-txt", "flightdeck-fixtures/oracle-fails", 1)), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(broken, "solution", "solve.sh"), []byte("#!/bin/bash\nexit 0\n"), 0o755))
	return ds
}

// outcomes maps each trial to its outcome and reward, as a run records them.
func outcomes(t *testing.T, runDir string) map[string]string {
	t.Helper()
	var rec results.RunRecord
	require.NoError(t, json.Unmarshal([]byte(readText(t, filepath.Join(runDir, results.RunFile))), &rec))
	out := map[string]string{}
	for _, tr := range rec.Trials {
		reward := "-"
		if tr.Reward != nil {
			reward = strings.TrimRight(strings.TrimRight(strings.TrimSpace(jsonNumber(*tr.Reward)), "0"), ".")
		}
		out[tr.Trial] = string(tr.Outcome) + " " + reward
	}
	return out
}

func jsonNumber(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}

// A dataset run as 3 shards (separate processes, two at once) and merged
// is the same run as one unsharded process: the same trials, rewards,
// outcomes and exit code (1: one oracle fails). A missing shard is
// refused by name, and merged anyway with --allow-missing, incomplete.
func TestShardAndMerge(t *testing.T) {
	requireEngine(t)
	dir := t.TempDir()
	ds := shardDataset(t, dir)
	args := []string{"run", "--path", ds, "--variant", "oracle", "--image-map", "python:3.12-slim=flightdeck/base:bookworm"}

	whole := flightdeck(t, dir, nil, append(args, "--results", filepath.Join(dir, "whole"), "--no-cache")...)
	wholeRun := readRun(t, whole, filepath.Join(dir, "whole"))
	require.Len(t, wholeRun.resultsDir, len(shardTasks)+1, whole.stderr)
	assert.Equal(t, 1, whole.code, "the failing oracle fails the run")

	shardDirs := make([]string, 3)
	run := func(k int) *process {
		res := filepath.Join(dir, "shard"+string(rune('0'+k)))
		return startFlightdeck(t, dir, nil, append(args, "--results", res, "--no-cache", "--shard", string(rune('0'+k))+"/3", "-j", "1")...)
	}
	finish := func(k int, p *process) {
		cli := p.wait(t, cliTimeout)
		assert.Contains(t, cli.stderr, "shard "+string(rune('0'+k))+"/3:", cli.stderr)
		r := readRun(t, cli, filepath.Join(dir, "shard"+string(rune('0'+k))))
		shardDirs[k-1] = r.dir
	}
	p1, p2 := run(1), run(2) // two at once on the engine
	finish(1, p1)
	finish(2, p2)
	finish(3, run(3))

	// Every task in exactly one shard.
	var tasksSeen []string
	for _, d := range shardDirs {
		var rec results.RunRecord
		require.NoError(t, json.Unmarshal([]byte(readText(t, filepath.Join(d, results.RunFile))), &rec))
		require.NotNil(t, rec.Config.Shard)
		tasksSeen = append(tasksSeen, rec.Config.Shard.Tasks...)
	}
	slices.Sort(tasksSeen)
	assert.Len(t, tasksSeen, len(shardTasks)+1)
	assert.Len(t, slices.Compact(tasksSeen), len(shardTasks)+1)

	before := treeStamps(t, shardDirs)
	merged := flightdeck(t, dir, nil, append([]string{"merge", "--results", filepath.Join(dir, "merged")}, shardDirs...)...)
	assert.Equal(t, whole.code, merged.code, "the merged run exits as the whole run did:\n%s\n%s", merged.stdout, merged.stderr)
	entries, err := os.ReadDir(filepath.Join(dir, "merged"))
	require.NoError(t, err)
	var mergedDir string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "merged-") {
			mergedDir = filepath.Join(dir, "merged", e.Name())
		}
	}
	require.NotEmpty(t, mergedDir, merged.stderr)
	assert.Equal(t, outcomes(t, wholeRun.dir), outcomes(t, mergedDir))
	assert.FileExists(t, filepath.Join(mergedDir, results.JUnitFile))
	assert.FileExists(t, filepath.Join(mergedDir, "report.html"))
	assert.Contains(t, merged.stdout, "oracle")
	assert.Equal(t, before, treeStamps(t, shardDirs), "merging never changes the shard dirs")

	// Idempotent: the same shards merge to the same run, in the same dir.
	again := flightdeck(t, dir, nil, append([]string{"merge", "--results", filepath.Join(dir, "merged")}, shardDirs...)...)
	assert.Equal(t, merged.code, again.code)
	assert.Equal(t, outcomes(t, wholeRun.dir), outcomes(t, mergedDir))

	// The merged run is a normal run: report reads it, and --resume finds
	// every trial done (it runs only what the shards left without a result).
	rep := flightdeck(t, dir, nil, "report", filepath.Base(mergedDir), "--results", filepath.Join(dir, "merged"))
	assert.Equal(t, 0, rep.code, rep.stderr)
	resumed := flightdeck(t, dir, nil, "run", "--resume", filepath.Base(mergedDir), "--results", filepath.Join(dir, "merged"))
	assert.Equal(t, whole.code, resumed.code, resumed.stderr)
	assert.NotContains(t, resumed.stderr, "start ", "nothing runs again")
	assert.Equal(t, outcomes(t, wholeRun.dir), outcomes(t, mergedDir))

	// A missing shard is named; --allow-missing merges what is there.
	missing := flightdeck(t, dir, nil, "merge", "--results", filepath.Join(dir, "partial"), shardDirs[0], shardDirs[2])
	assert.Equal(t, 2, missing.code)
	assert.Contains(t, missing.stderr, "shard 2/3 missing")
	partial := flightdeck(t, dir, nil, "merge", "--allow-missing", "--results", filepath.Join(dir, "partial"), shardDirs[0], shardDirs[2])
	assert.NotEqual(t, 0, partial.code, "an incomplete run does not pass")
	assert.Contains(t, partial.stderr, "incomplete: shard 2 of 3 is missing")
	assert.Contains(t, partial.stdout, "without a result: shard 2 of 3 is missing; merge again with its run dir")
	assert.NotContains(t, partial.stdout, "(interrupted)", "nothing was interrupted")

	// A shard given twice, or a run that is not a shard, is refused.
	twice := flightdeck(t, dir, nil, "merge", shardDirs[0], shardDirs[0], shardDirs[1])
	assert.Equal(t, 2, twice.code)
	assert.Contains(t, twice.stderr, "given twice")
	notShard := flightdeck(t, dir, nil, "merge", wholeRun.dir)
	assert.Equal(t, 2, notShard.code)
	assert.Contains(t, notShard.stderr, "is not a shard")
}

// treeStamps are the paths, sizes and modification times under dirs.
func treeStamps(t *testing.T, dirs []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, d := range dirs {
		require.NoError(t, filepath.Walk(d, func(p string, fi os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			out[p] = fi.ModTime().Format(time.RFC3339Nano) + " " + jsonNumber(float64(fi.Size()))
			return nil
		}))
	}
	return out
}
