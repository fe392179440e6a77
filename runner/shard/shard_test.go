package shard

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ids(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("task-%02d", i))
	}
	return out
}

func TestParse(t *testing.T) {
	s, err := Parse("2/3")
	require.NoError(t, err)
	assert.Equal(t, Spec{K: 2, N: 3}, s)
	for _, bad := range []string{"", "3", "0/3", "4/3", "1/0", "a/b", "1/3/4", "-1/3"} {
		_, err := Parse(bad)
		assert.Error(t, err, bad)
	}
}

// The parts are disjoint, cover every task, and do not depend on the
// order the tasks came in.
func TestSplitIsAPartitionAndDeterministic(t *testing.T) {
	all := ids(17)
	want := Split(all, nil, 4)
	var union []string
	for _, p := range want {
		union = append(union, p...)
	}
	slices.Sort(union)
	assert.Equal(t, all, union)
	for i := range 20 {
		shuffled := slices.Clone(all)
		rand.New(rand.NewPCG(uint64(i), 7)).Shuffle(len(shuffled), func(a, b int) { shuffled[a], shuffled[b] = shuffled[b], shuffled[a] })
		assert.Equal(t, want, Split(shuffled, nil, 4))
	}
	// Without timings the count is balanced.
	for _, p := range want {
		assert.InDelta(t, 17.0/4, len(p), 1)
	}
	// The same split as recorded here: a change to the rule changes every
	// CI matrix's shards, and must be deliberate.
	assert.Equal(t, []string{"task-00", "task-04", "task-08", "task-12", "task-16"}, want[0])
}

// With timings, no part takes more than 1.3 × the mean, on a skewed set.
func TestSplitBalancesByTimings(t *testing.T) {
	all := ids(40)
	weights := map[string]float64{}
	for i, id := range all {
		weights[id] = math.Pow(float64(i%13+1), 2) // 1 s to 169 s
	}
	for _, n := range []int{2, 3, 5} {
		parts := Split(all, weights, n)
		total, max := 0.0, 0.0
		for _, p := range parts {
			sum := 0.0
			for _, id := range p {
				sum += weights[id]
			}
			total += sum
			max = math.Max(max, sum)
		}
		mean := total / float64(n)
		assert.LessOrEqual(t, max, 1.3*mean, "n=%d: %v", n, parts)
	}
	// A task without a timing counts the mean of the others.
	parts := Split(append(all, "new-task"), weights, 3)
	found := 0
	for _, p := range parts {
		if slices.Contains(p, "new-task") {
			found++
		}
	}
	assert.Equal(t, 1, found)
}

// More shards than tasks: the later shards are empty.
func TestSplitMoreShardsThanTasks(t *testing.T) {
	parts := Split(ids(2), nil, 4)
	assert.Len(t, parts, 4)
	assert.Len(t, parts[0], 1)
	assert.Len(t, parts[1], 1)
	assert.Empty(t, parts[2])
	assert.Empty(t, parts[3])
}

func TestTimings(t *testing.T) {
	dir := t.TempDir()
	run := `{"trials": [{"task_id": "a", "seconds": 2}, {"task_id": "a", "seconds": 3}, {"task_id": "b", "seconds": 1}, {"task_id": "c"}]}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "run.json"), []byte(run), 0o644))
	got, err := Timings(dir)
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{"a": 5, "b": 1}, got)
	_, err = Timings(filepath.Join(dir, "missing"))
	assert.Error(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.json"), []byte("nope"), 0o644))
	_, err = Timings(filepath.Join(dir, "bad.json"))
	assert.ErrorContains(t, err, "not a run.json")
}
