// Package capacity decides how many trials a run can hold at once on an
// engine, and refuses a run that cannot fit at all, before anything
// starts: each task's memory and CPUs against the engine's, the builds'
// disk against the free space on the engine's data root.
package capacity

import (
	"fmt"
	"slices"
	"strings"

	"github.com/flightdeck/flightdeck/internal/text"
)

// DefaultTaskMemory is what a task that sets no memory limit is assumed to
// need: Harbor's default memory_mb.
const DefaultTaskMemory int64 = 2048 << 20

// memoryShare is the part of the engine's memory trials may take: the
// engine, its builds and flightdeck need some too.
const memoryShare = 0.8

// buildMargin is the disk a build needs beyond its context: the layers its
// steps write (packages, dependencies) are often larger than the context.
const buildMargin int64 = 1 << 30

// Host is the engine's capacity (Memory and FreeDisk in bytes; FreeDisk
// -1 when unknown).
type Host struct {
	CPUs     int
	Memory   int64
	FreeDisk int64
	// Subnets is how many trial networks the engine has room for (-1:
	// unknown, or no task needs one).
	Subnets int
	// SubnetRanges names where they come from, for the reason.
	SubnetRanges string
}

// Task is what one task needs.
type Task struct {
	ID          string
	Memory      int64   // its memory limit in bytes; 0: none set
	CPUs        float64 // its cpus; 0: none set
	ContextSize int64   // its build context's bytes
	Cached      bool    // its image is on the engine: nothing to build
	Network     bool    // a trial of it creates a network of its own
}

// Decision is the concurrency chosen, and why, in one line.
type Decision struct {
	Jobs int
	Why  string
	// Warnings are what does not stop the run but may hurt it.
	Warnings []string
}

// Decide checks that every task fits the engine and chooses the
// concurrency: requested when it is above 0 (the suite's or --jobs), else
// the largest that fits the CPUs and memory, at most trials. A task that
// can never fit, or builds that cannot fit the free disk, are an error
// that names the resource.
func Decide(h Host, ts []Task, requested, trials int) (Decision, error) {
	var perTrialMem int64
	perTrialCPU := 1.0
	var needDisk int64
	uncached := 0
	for _, t := range ts {
		mem := t.Memory
		if mem == 0 {
			mem = DefaultTaskMemory
		}
		if h.Memory > 0 && t.Memory > h.Memory {
			return Decision{}, fmt.Errorf("task %s needs %s of memory; the engine has %s", t.ID, text.Bytes(t.Memory), text.Bytes(h.Memory))
		}
		if h.CPUs > 0 && t.CPUs > float64(h.CPUs) {
			return Decision{}, fmt.Errorf("task %s needs %g CPUs; the engine has %d", t.ID, t.CPUs, h.CPUs)
		}
		perTrialMem = max(perTrialMem, mem)
		perTrialCPU = max(perTrialCPU, t.CPUs)
		if !t.Cached {
			uncached++
			needDisk += t.ContextSize
		}
	}
	d := Decision{}
	if h.FreeDisk >= 0 && uncached > 0 {
		if needDisk > h.FreeDisk {
			return Decision{}, fmt.Errorf("disk: %d images to build from %s of build contexts; the engine's data root has %s free", uncached, text.Bytes(needDisk), text.Bytes(h.FreeDisk))
		}
		if want := needDisk + int64(uncached)*buildMargin; want > h.FreeDisk {
			d.Warnings = append(d.Warnings, fmt.Sprintf("disk: %d images to build may need about %s; the engine's data root has %s free", uncached, text.Bytes(want), text.Bytes(h.FreeDisk)))
		}
	}
	byCPU, byMem := 0, 0
	if h.CPUs > 0 {
		byCPU = max(1, int(float64(h.CPUs)/perTrialCPU))
	}
	if h.Memory > 0 && perTrialMem > 0 {
		byMem = max(1, int(float64(h.Memory)*memoryShare/float64(perTrialMem)))
	}
	networked := slices.ContainsFunc(ts, func(t Task) bool { return t.Network })
	if requested > 0 {
		d.Jobs = requested
		d.Why = fmt.Sprintf("jobs: %d", requested)
		if networked && h.Subnets >= 0 && requested > h.Subnets {
			d.Jobs = max(1, h.Subnets)
			d.Warnings = append(d.Warnings, subnetsText(h, d.Jobs, requested))
		}
		if byMem > 0 && requested > byMem {
			d.Warnings = append(d.Warnings, fmt.Sprintf("memory: %d trials at once of up to %s each exceed the engine's %s; trials may be killed for memory (--jobs auto picks %d)",
				requested, text.Bytes(perTrialMem), text.Bytes(h.Memory), min(byMem, max(byCPU, 1))))
		}
		return d, nil
	}
	var why []string
	jobs := trials
	if byCPU > 0 {
		why = append(why, fmt.Sprintf("%d CPUs at %g per trial", h.CPUs, perTrialCPU))
		jobs = min(jobs, byCPU)
	}
	if byMem > 0 {
		why = append(why, fmt.Sprintf("%s of memory at %s per trial fits %d", text.Bytes(h.Memory), text.Bytes(perTrialMem), byMem))
		jobs = min(jobs, byMem)
	}
	if networked && h.Subnets >= 0 && jobs > h.Subnets {
		jobs = h.Subnets
		why = append(why, fmt.Sprintf("room for %s in %s", text.Count(h.Subnets, "trial network"), h.SubnetRanges))
	}
	if byCPU == 0 && byMem == 0 {
		jobs = min(jobs, 1)
		why = append(why, "the engine's CPUs and memory unknown")
	}
	if jobs == trials && trials > 0 {
		why = append(why, text.Count(trials, "trial"))
	}
	d.Jobs = max(1, jobs)
	d.Why = fmt.Sprintf("jobs: %d (auto: %s)", d.Jobs, strings.Join(why, "; "))
	return d, nil
}

// subnetsText is the line of a --jobs the free subnets cut down.
func subnetsText(h Host, jobs, requested int) string {
	return fmt.Sprintf("networks: --jobs %d, but room for %s in %s: jobs %d (another trial would wait for a subnet; FLIGHTDECK_SUBNETS, or the engine's default-address-pools, give more)",
		requested, text.Count(h.Subnets, "trial network"), h.SubnetRanges, jobs)
}
