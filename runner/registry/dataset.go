package registry

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Datasets: a directory of task directories (a suite's tasks: entry, or
// --path), and a dataset of a Harbor registry.json (a suite's registry: and
// dataset:, or --registry and --dataset), whose git tasks are fetched once
// into the task cache.

// cacheDirEnv overrides the task cache's location.
const cacheDirEnv = "FLIGHTDECK_CACHE_DIR"

// DefaultCacheDir is where git tasks of registry datasets are fetched:
// $FLIGHTDECK_CACHE_DIR, else $XDG_CACHE_HOME/flightdeck/tasks, else
// ~/.cache/flightdeck/tasks. getenv nil means the process environment.
func DefaultCacheDir(getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if d := getenv(cacheDirEnv); d != "" {
		return filepath.Abs(d)
	}
	if d := getenv("XDG_CACHE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "flightdeck", "tasks"), nil
	}
	home := getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("the task cache: no home directory (set %s or --cache-dir): %w", cacheDirEnv, err)
		}
		home = h
	}
	return filepath.Join(home, ".cache", "flightdeck", "tasks"), nil
}

// RegistryTaskDirs loads a registry file and returns the task dirs of
// one of its datasets, fetching git tasks into cacheDir.
func RegistryTaskDirs(ctx context.Context, registry, dataset, cacheDir string) ([]string, error) {
	reg, err := loadRegistry(registry)
	if err != nil {
		return nil, err
	}
	ds, err := reg.Dataset(dataset)
	if err != nil {
		return nil, err
	}
	if len(ds.Tasks) == 0 {
		return nil, fmt.Errorf("%s: dataset %s has no tasks", reg.File, ds.ID())
	}
	return fetchDataset(ctx, ds, cacheDir)
}

// DatasetTaskDirs is p itself when it is a task directory (it holds
// task.toml), else the task directories directly in it (a dataset), in
// name order; a glob is expanded to the task directories it matches.
func DatasetTaskDirs(p string) ([]string, error) {
	if strings.ContainsAny(p, "*?[") {
		matches, err := filepath.Glob(p)
		if err != nil {
			return nil, fmt.Errorf("bad glob: %v", err)
		}
		if len(matches) == 0 {
			return nil, errors.New("matches no directory")
		}
		var out []string
		for _, m := range matches {
			if fi, err := os.Stat(m); err == nil && fi.IsDir() {
				found, err := DatasetTaskDirs(m)
				if err == nil {
					out = append(out, found...)
				}
			}
		}
		if len(out) == 0 {
			return nil, errors.New("the glob matches no task directory")
		}
		return out, nil
	}
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, errors.New("no such directory")
	case errors.Is(err, fs.ErrPermission):
		return nil, errors.New("cannot be read: permission denied (a directory on the way lacks read or search permission for this user)")
	case err != nil:
		return nil, fmt.Errorf("cannot be read: %w", err)
	}
	if !fi.IsDir() {
		return nil, errors.New("not a directory (want a task dir or a dataset dir)")
	}
	if isTaskDir(p) {
		return []string{p}, nil
	}
	if m, err := ReadManifest(p); err != nil || m != nil {
		if err != nil {
			return nil, err
		}
		dirs, _, err := m.Resolve(p)
		return dirs, err
	}
	ents, err := os.ReadDir(p)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		sub := filepath.Join(p, e.Name())
		if e.IsDir() && isTaskDir(sub) {
			out = append(out, sub)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("neither a task directory (no task.toml) nor a dataset of task directories")
	}
	return out, nil
}

func isTaskDir(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, "task.toml"))
	return err == nil && fi.Mode().IsRegular()
}
