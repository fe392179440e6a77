package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/flightdeck/flightdeck/runner/shard"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/tasks"
)

// Shard narrows the request to the K-th of N parts of its tasks (refused
// ones included: they are reported by the shard that holds them), split
// by weights (seconds per task from an earlier run; nil: by count), and
// records the part in the run's configuration.
func (req *Request) Shard(spec shard.Spec, weights map[string]float64) {
	var ids, plan []string
	for _, t := range req.Tasks {
		ids = append(ids, t.ID)
		plan = append(plan, t.ID+"\t"+t.Digest)
	}
	for _, rt := range req.Refused {
		ids = append(ids, rt.ID)
		plan = append(plan, rt.ID+"\trefused")
	}
	slices.Sort(plan)
	sum := sha256.Sum256([]byte(strings.Join(plan, "\n")))
	mine := shard.Split(ids, weights, spec.N)[spec.K-1]
	req.Tasks = slices.DeleteFunc(req.Tasks, func(t *tasks.Task) bool { return !slices.Contains(mine, t.ID) })
	req.Refused = slices.DeleteFunc(req.Refused, func(rt suite.RefusedTask) bool { return !slices.Contains(mine, rt.ID) })
	req.Config.Shard = &suite.Shard{K: spec.K, N: spec.N, Tasks: append([]string{}, mine...),
		All: slices.Compact(slices.Sorted(slices.Values(ids))), Plan: "sha256:" + hex.EncodeToString(sum[:])}
}
