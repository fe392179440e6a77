package registry

import (
	"context"
	"errors"

	"github.com/flightdeck/flightdeck/internal/hostpath"
	"github.com/flightdeck/flightdeck/runner/suite"
)

// SuiteTaskDirs expands the suite's tasks: entries (task dirs, dataset
// dirs and globs, relative to the suite's directory) and the tasks of its
// registry dataset, git tasks fetched into cacheDir, in order and without
// duplicates.
func SuiteTaskDirs(ctx context.Context, s *suite.Suite, cacheDir string) ([]string, error) {
	dirs, err := entryDirs(s)
	if err != nil {
		return nil, err
	}
	ds, err := datasetDirs(ctx, s, cacheDir)
	if err != nil {
		return nil, err
	}
	return UniqueDirs(append(dirs, ds...)), nil
}

// entryDirs expands the tasks: entries.
func entryDirs(s *suite.Suite) ([]string, error) {
	var dirs []string
	for i, entry := range s.Tasks {
		found, err := DatasetTaskDirs(hostpath.Abs(s.Dir, entry))
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
	dirs, err := RegistryTaskDirs(ctx, hostpath.Abs(s.Dir, s.Registry), s.Dataset, cacheDir)
	if err != nil {
		return nil, suite.UsageErrorf("%s:%d: dataset %s: %v", s.File, s.DatasetLine(), s.Dataset, err)
	}
	return dirs, nil
}

// FlagTaskDirs expands --path dirs and fetches the --registry dataset; ok is
// false when neither is given.
func FlagTaskDirs(ctx context.Context, opts suite.Options) (dirs []string, ok bool, err error) {
	if len(opts.Path) == 0 && opts.Registry == "" && opts.Dataset == "" {
		return nil, false, nil
	}
	for _, p := range opts.Path {
		found, err := DatasetTaskDirs(hostpath.Abs(opts.Cwd, p))
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
			if cache, err = DefaultCacheDir(opts.Getenv); err != nil {
				return nil, true, &suite.UsageError{Err: err}
			}
		} else {
			cache = hostpath.Abs(opts.Cwd, cache)
		}
		found, err := RegistryTaskDirs(ctx, hostpath.Abs(opts.Cwd, opts.Registry), opts.Dataset, cache)
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

// UniqueDirs drops repeated dirs, keeping the first.
func UniqueDirs(dirs []string) []string {
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
