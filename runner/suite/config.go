package suite

import "fmt"

// Options are the command line's overrides of a suite file.
type Options struct {
	// Tasks: values naming a directory (relative to Cwd) replace the suite's
	// tasks with those task or dataset dirs; other values are task-id globs
	// that narrow the suite's tasks.
	Tasks []string
	// Variants narrows the suite's variants to these names; a name the suite
	// lacks that is a built-in agent (oracle, nop) adds that variant.
	Variants []string
	Attempts int // 0: the suite's
	Jobs     int // 0: the suite's concurrency, else auto
	// AutoJobs (--jobs auto) lets the run pick the concurrency from the
	// engine's capacity, whatever the suite says.
	AutoJobs bool
	// EnvFile is --env-file: variables every agent gets, and that ${NAME}
	// in a variant's env may name; all of them secrets.
	EnvFile  string
	Retries  int // negative: the suite's
	NoCache  bool
	Keep     bool     // keep containers, snapshots and work dirs for debugging
	ImageMap []string // "from=to" entries, added to the suite's and the environment's
	// NoSubstitute (--no-substitute) forbids any image standing in for one
	// a task names, whatever the suite says.
	NoSubstitute bool
	Results      string // results dir; "": the suite's
	Cwd          string
	Getenv       func(string) string

	// Path: dataset dirs (dirs of task dirs) or task dirs (relative to
	// Cwd) that replace the suite's tasks, like --task DIR.
	Path []string
	// Registry (a Harbor registry.json, relative to Cwd) and Dataset (its
	// name@version, or a name with one version) replace the suite's tasks
	// with the dataset's; git tasks are fetched into CacheDir ("":
	// DefaultCacheDir).
	Registry, Dataset, CacheDir string
	// Include and Exclude are task-id globs applied on top of the suite's
	// include: and exclude:.
	Include, Exclude []string
	// NTasks runs only the first N tasks left after the filters; 0: all.
	NTasks int
}

// Config is a run's resolved configuration, recorded in run.json; --resume
// runs from it rather than from the suite file.
type Config struct {
	Suite     string   `json:"suite"`
	SuiteFile string   `json:"suite_file,omitempty"`
	TaskDirs  []string `json:"task_dirs"`
	// Notes are what loading the tasks has to say before the run starts
	// (a dataset.toml's task dirs it leaves out).
	Notes       []string  `json:"-"`
	Variants    []Variant `json:"variants"`
	Attempts    int       `json:"attempts"`
	Concurrency int       `json:"concurrency"`
	// AutoJobs: neither the suite nor --jobs set the concurrency; the run
	// picks it from the engine's CPUs and memory and the tasks' needs.
	AutoJobs          bool              `json:"auto_jobs,omitempty"`
	Retries           int               `json:"retries"`
	TimeoutMultiplier Multipliers       `json:"timeout_multiplier"`
	Images            map[string]string `json:"images"`
	Specs             []string          `json:"specs,omitempty"`
	Results           string            `json:"results"`
	NoCache           bool              `json:"no_cache"`
	Keep              bool              `json:"keep"`
	Datasets          []string          `json:"datasets,omitempty"` // "<registry file>: name@version" the tasks came from
	NTasks            int               `json:"n_tasks,omitempty"`
	// RewardKey is the key of reward.json that decides each trial's reward
	// (the suite's reward_key:); "": the reward key, else the lowest key.
	RewardKey string `json:"reward_key,omitempty"`
	// ImageBudget bounds the cached task images' size at the end of the
	// run (the suite's image_budget:, else $FLIGHTDECK_IMAGE_BUDGET); 0:
	// no bound.
	ImageBudget int64 `json:"image_budget,omitempty"`
	// NoSubstitute: every image is the one the task names; no image map,
	// no offline base standing in for a missing image.
	NoSubstitute bool `json:"no_substitute,omitempty"`
	// EnvFile is --env-file (an absolute path; its values are never
	// recorded).
	EnvFile string `json:"env_file,omitempty"`
	// Shard is the part of the run's tasks this run ran (--shard K/N);
	// nil for a whole run.
	Shard *Shard `json:"shard,omitempty"`
}

// UsageError is a mistake in the suite, the flags or the tasks they name:
// nothing ran (exit code 2).
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// UsageErrorf is a *UsageError with a formatted message.
func UsageErrorf(format string, args ...any) error {
	return &UsageError{fmt.Errorf(format, args...)}
}

// Shard is one of N disjoint parts of a run's tasks (runner/shard).
type Shard struct {
	K int `json:"k"`
	N int `json:"n"`
	// Tasks are the ids of this part's tasks, sorted; All the whole run's.
	Tasks []string `json:"tasks"`
	All   []string `json:"all"`
	// Plan is a digest of the whole run's tasks (each id and task digest):
	// shards of one run agree on it.
	Plan string `json:"plan"`
}
