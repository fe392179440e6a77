// Package shard splits a run's tasks into N disjoint parts, one for each
// job of a CI matrix (flightdeck run --shard K/N), so that every trial of
// a task lands in the same part and the parts take about as long. The
// split depends only on the task ids and their weights, so every machine
// computes the same one.
package shard

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Spec is the K-th of N shards (1 ≤ K ≤ N).
type Spec struct {
	K int `json:"k"`
	N int `json:"n"`
}

func (s Spec) String() string { return fmt.Sprintf("%d/%d", s.K, s.N) }

// Parse reads "K/N".
func Parse(s string) (Spec, error) {
	k, n, ok := strings.Cut(s, "/")
	ki, kerr := strconv.Atoi(k)
	ni, nerr := strconv.Atoi(n)
	switch {
	case !ok || kerr != nil || nerr != nil:
		return Spec{}, fmt.Errorf("--shard %q: want K/N, the K-th of N shards (1/3, 2/3, 3/3)", s)
	case ni < 1 || ki < 1 || ki > ni:
		return Spec{}, fmt.Errorf("--shard %q: want 1 ≤ K ≤ N", s)
	}
	return Spec{K: ki, N: ni}, nil
}

// Split divides ids into n parts. With weights (a task's seconds in an
// earlier run), the heaviest task goes first to the lightest part; a task
// without a weight counts the mean of the others'; without any weights
// every task counts 1, which balances the count. Ties go by id, then to
// the lowest part: the same ids and weights give the same split anywhere.
// Each part lists its ids sorted.
func Split(ids []string, weights map[string]float64, n int) [][]string {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	mean, known := 0.0, 0
	for _, id := range ids {
		if w, ok := weights[id]; ok && w > 0 {
			mean += w
			known++
		}
	}
	if known > 0 {
		mean /= float64(known)
	} else {
		mean = 1
	}
	weight := func(id string) float64 {
		if w, ok := weights[id]; ok && w > 0 {
			return w
		}
		return mean
	}
	slices.SortStableFunc(ids, func(a, b string) int {
		return cmp.Compare(weight(b), weight(a)) // heaviest first; ids stay sorted within a weight
	})
	parts := make([][]string, n)
	load := make([]float64, n)
	for _, id := range ids {
		best := 0
		for i := 1; i < n; i++ {
			if load[i] < load[best] {
				best = i
			}
		}
		parts[best] = append(parts[best], id)
		load[best] += weight(id)
	}
	for _, p := range parts {
		slices.Sort(p)
	}
	return parts
}

// Timings reads the seconds each task took in an earlier run: path is a
// run's dir or its run.json (any run, sharded or merged), or a timings
// file of the same shape ({"trials": [{"task_id": ..., "seconds": ...}]}).
func Timings(path string) (map[string]float64, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "run.json")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--shard-timings: %w", err)
	}
	var rec struct {
		Trials []struct {
			TaskID  string  `json:"task_id"`
			Seconds float64 `json:"seconds"`
		} `json:"trials"`
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("--shard-timings %s: not a run.json: %w", path, err)
	}
	out := map[string]float64{}
	for _, t := range rec.Trials {
		if t.TaskID != "" && t.Seconds > 0 {
			out[t.TaskID] += t.Seconds
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--shard-timings %s: no trial with a duration", path)
	}
	return out, nil
}
