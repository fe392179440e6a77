package merge

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
)

// writeShardRun writes a finished shard run's run.json under resultsDir.
func writeShardRun(t *testing.T, resultsDir, id string, rec results.RunRecord) string {
	t.Helper()
	dir := filepath.Join(resultsDir, id)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	rec.Schema, rec.RunID, rec.Dir, rec.Status = results.RunSchema, id, dir, results.StatusFinished
	require.NoError(t, results.WriteJSONFile(filepath.Join(dir, results.RunFile), &rec))
	return dir
}

func shardRec(k, n int, plan, version string) results.RunRecord {
	return results.RunRecord{Suite: "s", Versions: results.Versions{Flightdeck: version},
		Config: suite.Config{Suite: "s", Attempts: 1, Variants: []suite.Variant{{Name: "oracle", Agent: "oracle"}},
			Shard: &suite.Shard{K: k, N: n, Plan: plan}}}
}

func TestMergeRefuses(t *testing.T) {
	root := t.TempDir()
	a := writeShardRun(t, filepath.Join(root, "a"), "run-a", shardRec(1, 2, "p", "v1"))
	b := writeShardRun(t, filepath.Join(root, "b"), "run-b", shardRec(2, 2, "p", "v1"))
	other := writeShardRun(t, filepath.Join(root, "c"), "run-c", shardRec(2, 2, "q", "v1"))
	newer := writeShardRun(t, filepath.Join(root, "d"), "run-d", shardRec(2, 2, "p", "v2"))
	three := writeShardRun(t, filepath.Join(root, "e"), "run-e", shardRec(2, 3, "p", "v1"))
	whole := shardRec(1, 1, "p", "v1")
	whole.Config.Shard = nil
	notShard := writeShardRun(t, filepath.Join(root, "f"), "run-f", whole)
	cases := map[string]struct {
		dirs []string
		want string
	}{
		"another task set":      {[]string{a, other}, "tasks (their ids or digests)"},
		"another version":       {[]string{a, newer}, "flightdeck v2, not v1"},
		"another split":         {[]string{a, three}, "split in 3 shards, not 2 shards"},
		"a shard twice":         {[]string{a, a, b}, "shard 1/2 is given twice"},
		"a missing shard":       {[]string{a}, "shard 2/2 missing"},
		"not a shard":           {[]string{notShard}, "is not a shard"},
		"not a run":             {[]string{root}, "no run.json"},
		"a results dir of many": {[]string{filepath.Join(root, "a"), b, filepath.Join(root, "a")}, "given twice"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Runs(Options{Dirs: tc.dirs, Results: filepath.Join(root, "merged")})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	// A CI job's results dir holding its shard's run alone names that run.
	got, err := shardRunDir(filepath.Join(root, "b"))
	require.NoError(t, err)
	assert.Equal(t, b, got)
	writeShardRun(t, filepath.Join(root, "b"), "run-b2", shardRec(2, 2, "p", "v1"))
	_, err = shardRunDir(filepath.Join(root, "b"))
	assert.ErrorContains(t, err, "results dir of 2 runs")

	// Two shards merge; nothing of the merge is left when it fails.
	rec, err := Runs(Options{Dirs: []string{a, b}, Results: filepath.Join(root, "merged")})
	require.NoError(t, err)
	assert.Equal(t, []string{"1/2 run-a", "2/2 run-b"}, rec.Shards)
	entries, err := os.ReadDir(filepath.Join(root, "merged"))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Contains(t, names, rec.RunID)
	for _, n := range names {
		assert.NotContains(t, n, ".merge-", "no temporary dir left")
	}
}
