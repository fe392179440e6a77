package runner

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/flightdeck/flightdeck/internal/hostpath"
	"github.com/flightdeck/flightdeck/internal/text"
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
	return taskDirs(ctx, s, cache)
}

// taskDirs is TaskDirs with a cache dir.
func taskDirs(ctx context.Context, s *suite.Suite, cacheDir string) ([]string, error) {
	dirs, err := entryDirs(s)
	if err != nil {
		return nil, err
	}
	ds, err := datasetDirs(ctx, s, cacheDir)
	if err != nil {
		return nil, err
	}
	return uniqueDirs(append(dirs, ds...)), nil
}

// entryDirs expands the tasks: entries.
func entryDirs(s *suite.Suite) ([]string, error) {
	var dirs []string
	for i, entry := range s.Tasks {
		found, err := registry.DatasetTaskDirs(hostpath.Abs(s.Dir, entry))
		if err != nil {
			return nil, suite.UsageErrorf("%s:%d: tasks[%d] %q: %v", s.File, s.TaskLine(i), i, entry, err)
		}
		dirs = append(dirs, found...)
	}
	return dirs, nil
}

// datasetDirs fetches the suite's registry dataset, if it names one.
func datasetDirs(ctx context.Context, s *suite.Suite, cacheDir string) ([]string, error) {
	if s.Dataset == "" {
		return nil, nil
	}
	dirs, err := registry.RegistryTaskDirs(ctx, hostpath.Abs(s.Dir, s.Registry), s.Dataset, cacheDir)
	if err != nil {
		return nil, suite.UsageErrorf("%s:%d: dataset %s: %v", s.File, s.DatasetLine(), s.Dataset, err)
	}
	return dirs, nil
}

// commandLineSuite is the suite `flightdeck run` uses with --path or
// --registry and no suite file: the built-in agents the flags name (oracle
// when none), the default results dir, nothing else.
func commandLineSuite(opts suite.Options) *suite.Suite {
	name := "run"
	switch {
	case opts.Dataset != "":
		name = opts.Dataset
	case len(opts.Path) == 1:
		name = filepath.Base(filepath.Clean(hostpath.Abs(opts.Cwd, opts.Path[0])))
	}
	s := &suite.Suite{
		Name: text.FileName(name), Dir: opts.Cwd, File: filepath.Join(opts.Cwd, suite.CommandLine),
		Attempts: 1, Retries: 1, TimeoutMultiplier: suite.Multipliers{Agent: 1, Verifier: 1, Build: 1},
		Results: suite.DefaultResultsDir(opts.Cwd),
	}
	if len(opts.Variants) == 0 {
		s.Variants = []suite.Variant{suite.BuiltinVariant(suite.AgentOracle)}
	}
	return s
}

// flagTaskDirs expands --path dirs and fetches the --registry dataset; ok is
// false when neither is given.
func flagTaskDirs(ctx context.Context, opts suite.Options) (dirs []string, ok bool, err error) {
	if len(opts.Path) == 0 && opts.Registry == "" && opts.Dataset == "" {
		return nil, false, nil
	}
	for _, p := range opts.Path {
		found, err := registry.DatasetTaskDirs(hostpath.Abs(opts.Cwd, p))
		if err != nil {
			return nil, true, suite.UsageErrorf("--path %s: %v", p, err)
		}
		dirs = append(dirs, found...)
	}
	switch {
	case opts.Registry == "" && opts.Dataset == "":
	case opts.Registry == "" || opts.Dataset == "":
		return nil, true, suite.UsageErrorf("--registry and --dataset go together: --registry FILE --dataset NAME@VERSION")
	default:
		cache := opts.CacheDir
		if cache == "" {
			if cache, err = registry.DefaultCacheDir(opts.Getenv); err != nil {
				return nil, true, &suite.UsageError{Err: err}
			}
		} else {
			cache = hostpath.Abs(opts.Cwd, cache)
		}
		found, err := registry.RegistryTaskDirs(ctx, hostpath.Abs(opts.Cwd, opts.Registry), opts.Dataset, cache)
		if err != nil {
			return nil, true, suite.UsageErrorf("--dataset %s: %v", opts.Dataset, err)
		}
		dirs = append(dirs, found...)
	}
	if len(dirs) == 0 {
		return nil, true, &suite.UsageError{Err: errors.New("--path and --registry name no task")}
	}
	return dirs, true, nil
}

// uniqueDirs drops repeated dirs, keeping the first.
func uniqueDirs(dirs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, d := range dirs {
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}
