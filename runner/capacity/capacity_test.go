package capacity

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecide(t *testing.T) {
	const gib = int64(1) << 30
	host := Host{CPUs: 2, Memory: 24 * gib, FreeDisk: 100 * gib}
	tests := []struct {
		name      string
		host      Host
		tasks     []Task
		requested int
		trials    int
		jobs      int
		why       string
		warn      string
		err       string
	}{
		{name: "CPUs bound", host: host, tasks: []Task{{ID: "a"}}, trials: 10, jobs: 2,
			why: "jobs: 2 (auto: 2 CPUs at 1 per trial; 24.0GiB of memory at 2.0GiB per trial fits 9)"},
		{name: "memory bound", host: Host{CPUs: 16, Memory: 24 * gib, FreeDisk: -1}, tasks: []Task{{ID: "a", Memory: 8 * gib}, {ID: "b"}}, trials: 10, jobs: 2,
			why: "jobs: 2 (auto: 16 CPUs at 1 per trial; 24.0GiB of memory at 8.0GiB per trial fits 2)"},
		{name: "cpus per trial", host: Host{CPUs: 8, Memory: 64 * gib, FreeDisk: -1}, tasks: []Task{{ID: "a", CPUs: 4}}, trials: 10, jobs: 2},
		{name: "fewer trials", host: host, tasks: []Task{{ID: "a"}}, trials: 1, jobs: 1, why: "jobs: 1 (auto: 2 CPUs at 1 per trial; 24.0GiB of memory at 2.0GiB per trial fits 9; 1 trial)"},
		{name: "unknown engine", host: Host{FreeDisk: -1}, tasks: []Task{{ID: "a"}}, trials: 4, jobs: 1},
		{name: "requested kept, warned", host: host, tasks: []Task{{ID: "a", Memory: 12 * gib}}, requested: 4, trials: 10, jobs: 4,
			why: "jobs: 4", warn: "memory: 4 trials at once of up to 12.0GiB each exceed the engine's 24.0GiB"},
		{name: "subnets bound a requested --jobs", host: Host{CPUs: 64, Memory: 256 * gib, FreeDisk: -1, Subnets: 3, SubnetRanges: "FLIGHTDECK_SUBNETS 10.9.0.0/26"},
			tasks: []Task{{ID: "compose", Network: true}, {ID: "plain"}}, requested: 8, trials: 20, jobs: 3,
			warn: "networks: --jobs 8, but room for 3 trial networks in FLIGHTDECK_SUBNETS 10.9.0.0/26: jobs 3"},
		{name: "subnets bound auto", host: Host{CPUs: 64, Memory: 256 * gib, FreeDisk: -1, Subnets: 4, SubnetRanges: "the engine's default address pools"},
			tasks: []Task{{ID: "compose", Network: true}}, trials: 20, jobs: 4,
			why: "jobs: 4 (auto: 64 CPUs at 1 per trial; 256.0GiB of memory at 2.0GiB per trial fits 102; room for 4 trial networks in the engine's default address pools)"},
		{name: "subnets do not bind tasks without a network", host: Host{CPUs: 64, Memory: 256 * gib, FreeDisk: -1, Subnets: 0},
			tasks: []Task{{ID: "plain"}}, requested: 8, trials: 20, jobs: 8},
		{name: "task too big for memory", host: host, tasks: []Task{{ID: "big", Memory: 32 * gib}}, trials: 1,
			err: "task big needs 32.0GiB of memory; the engine has 24.0GiB"},
		{name: "task too big for CPUs", host: host, tasks: []Task{{ID: "wide", CPUs: 4}}, trials: 1,
			err: "task wide needs 4 CPUs; the engine has 2"},
		{name: "disk too small", host: Host{CPUs: 2, Memory: 24 * gib, FreeDisk: gib}, tasks: []Task{{ID: "a", ContextSize: 2 * gib}}, trials: 1,
			err: "disk: 1 images to build from 2.0GiB of build contexts; the engine's data root has 1.0GiB free"},
		{name: "disk tight: a warning", host: Host{CPUs: 2, Memory: 24 * gib, FreeDisk: 2 * gib}, tasks: []Task{{ID: "a", ContextSize: gib}, {ID: "b", ContextSize: 1}}, trials: 2, jobs: 2,
			warn: "disk: 2 images to build may need about 3.0GiB"},
		{name: "cached images need no disk", host: Host{CPUs: 2, Memory: 24 * gib, FreeDisk: 1}, tasks: []Task{{ID: "a", ContextSize: gib, Cached: true}}, trials: 1, jobs: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Decide(tc.host, tc.tasks, tc.requested, tc.trials)
			if tc.err != "" {
				require.Error(t, err)
				assert.Equal(t, tc.err, err.Error())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.jobs, d.Jobs)
			if tc.why != "" {
				assert.Equal(t, tc.why, d.Why)
			}
			if tc.warn != "" {
				require.Len(t, d.Warnings, 1)
				assert.Contains(t, d.Warnings[0], tc.warn)
			} else {
				assert.Empty(t, d.Warnings)
			}
		})
	}
}
