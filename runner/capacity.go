package runner

import (
	"context"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/flightdeck/flightdeck/runner/capacity"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/runner/trialnet"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/tasks"
)

// checkCapacity refuses a run whose tasks cannot fit the engine (a task's
// memory or CPUs above the engine's, builds above its free disk) before
// anything starts, and under --jobs auto picks the concurrency, saying
// why in one line.
func (s *runState) checkCapacity(ctx context.Context, info sandbox.Info, rec *results.RunRecord, todo []*suite.Trial) error {
	var repos map[string]bool
	if store, ok := s.eng.(sandbox.ImageStore); ok {
		repos, _ = store.TaskImageRepos(ctx)
	}
	host := capacity.Host{CPUs: info.CPUs, Memory: info.Memory, FreeDisk: info.FreeDisk, Subnets: -1}
	if repos == nil {
		host.FreeDisk = -1 // which images are cached is unknown
	}
	seen := map[*tasks.Task]bool{}
	var need []capacity.Task
	for _, t := range todo {
		if seen[t.Task] {
			continue
		}
		seen[t.Task] = true
		mem, _ := t.Task.MemoryBytes()
		need = append(need, capacity.Task{ID: t.Task.ID, Memory: mem, CPUs: t.Task.Config.Environment.CPUs,
			ContextSize: dirSize(t.Task.Path("environment")), Cached: t.Task.Config.Environment.DockerImage != "" || repos[sandbox.TaskImageRepo(t.Task.ID)],
			Network: trialnet.NeedsNetwork(t.Task)})
	}
	if sc, ok := s.eng.(sandbox.SubnetCounter); ok && slices.ContainsFunc(need, func(t capacity.Task) bool { return t.Network }) {
		// Enough to say whether the jobs fit; counting every free /28 of
		// the default pools would take a while.
		if n, err := sc.FreeSubnets(ctx, max(len(todo), 1)); err == nil {
			host.Subnets, host.SubnetRanges = n, sc.SubnetRanges()
		}
	}
	requested := s.cfg.Concurrency
	if s.cfg.AutoJobs {
		requested = 0
	}
	d, err := capacity.Decide(host, need, requested, len(todo))
	if err != nil {
		return &suite.UsageError{Err: err}
	}
	if s.cfg.AutoJobs && !s.progress.Quiet {
		s.progress.Line(d.Why)
	}
	for _, w := range d.Warnings {
		s.progress.Line(w)
	}
	s.cfg.Concurrency, rec.Config.Concurrency = d.Jobs, d.Jobs
	return nil
}

// dirSize is the bytes of the regular files under dir (0 when it cannot be
// read: the build will say why).
func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
