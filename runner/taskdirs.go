package runner

import (
	"context"

	"github.com/flightdeck/flightdeck/runner/registry"
	"github.com/flightdeck/flightdeck/runner/suite"
)

// TaskDirs expands the suite's tasks: entries (task dirs, dataset dirs and
// globs, relative to the suite's directory) and the tasks of its registry
// dataset, in order and without duplicates. Git tasks of the dataset are
// fetched into the default task cache when missing there. It needs no
// runnable variant, so a suite whose variants are still to be filled works.
func TaskDirs(ctx context.Context, s *suite.Suite) ([]string, error) {
	cache, err := registry.DefaultCacheDir(nil)
	if err != nil && s.Dataset != "" {
		return nil, err
	}
	return registry.SuiteTaskDirs(ctx, s, cache)
}
