package tasks

import "time"

// Config is task.toml as flightdeck reads it: Harbor's keys where Harbor puts
// them, flightdeck's own under [flightdeck]. Unknown keys are ignored, as Harbor
// ignores them; the whole document is also kept generically in Task.Doc.
type Config struct {
	SchemaVersion string         `toml:"schema_version"`
	Version       string         `toml:"version"` // older Harbor tasks: a top-level version, no [task]
	Task          *TaskMeta      `toml:"task"`
	Metadata      map[string]any `toml:"metadata"`
	Agent         AgentConfig    `toml:"agent"`
	Verifier      VerifierConfig `toml:"verifier"`
	Environment   EnvConfig      `toml:"environment"`
	Solution      SolutionConfig `toml:"solution"`
	Flightdeck    FlightdeckKeys `toml:"flightdeck"`
	// Steps is Harbor's multi-step form: each step's instruction, tests,
	// solution and workdir/ live under steps/<name>/ (see Task.StepDir).
	Steps []StepConfig `toml:"steps"`
	// MultiStepRewardStrategy is how a multi-step trial's reward comes from
	// its steps': "mean" (the default) or "final".
	MultiStepRewardStrategy string `toml:"multi_step_reward_strategy"`
	// RawArtifacts is Harbor's top-level artifacts list: each a path, or a
	// table {source, destination, exclude}; see Task.Artifacts.
	RawArtifacts []any `toml:"artifacts"`
}

// StepConfig is one [[steps]] entry.
type StepConfig struct {
	Name     string       `toml:"name"`
	Agent    StepAgent    `toml:"agent"`
	Verifier StepVerifier `toml:"verifier"`
	// MinReward gates the next steps: a number (the "reward" key's
	// threshold) or a table of key → threshold. nil: no gate.
	MinReward any `toml:"min_reward"`
	// Healthcheck is polled after the step's setup.sh, before its agent.
	Healthcheck *Healthcheck `toml:"healthcheck"`
	// RawArtifacts are the step's artifacts, collected after its agent and
	// before its verifier into the step's own artifacts dir.
	RawArtifacts []any `toml:"artifacts"`
}

// StepArtifacts are a step's artifacts, parsed (Task.Artifacts' rules).
func (s StepConfig) StepArtifacts() []Artifact {
	as, _ := parseArtifacts(s.RawArtifacts)
	return as
}

// StepAgent overrides [agent] for one step.
type StepAgent struct {
	TimeoutSec *float64 `toml:"timeout_sec"`
	User       string   `toml:"user"`
}

// StepVerifier overrides [verifier] for one step.
type StepVerifier struct {
	TimeoutSec *float64          `toml:"timeout_sec"`
	User       string            `toml:"user"`
	Env        map[string]string `toml:"env"`
	// EnvironmentMode and Environment override the task's verifier mode
	// for the step, as Harbor resolves them (Task.StepSeparateVerifier).
	EnvironmentMode string     `toml:"environment_mode"`
	Environment     *EnvConfig `toml:"environment"`
	// Collect are the step's [[steps.verifier.collect]] commands, run
	// after the task's before the step's artifacts are collected.
	Collect []CollectHook `toml:"collect"`
}

// Artifact is a path in the task's container that is copied into the
// trial's artifacts once the verifier has run, as Harbor collects it.
type Artifact struct {
	Source      string   // an absolute path in the container
	Destination string   // relative to the artifacts dir; default: Source's last element
	Exclude     []string // patterns left out of a directory (as tar --exclude)
	// Service is the compose service it is copied from: "" or "main" for
	// the task's own container, else a sidecar of the compose file.
	Service string
}

// Sidecar reports whether the artifact is copied from a service other
// than main.
func (a Artifact) Sidecar() bool { return a.Service != "" && a.Service != MainService }

// TaskMeta is Harbor's [task] table.
type TaskMeta struct {
	Name        string   `toml:"name"` // org/name
	Version     string   `toml:"version"`
	Description string   `toml:"description"`
	Authors     []any    `toml:"authors"`
	Keywords    []string `toml:"keywords"`
}

// AgentConfig is Harbor's [agent] table.
type AgentConfig struct {
	TimeoutSec   *float64 `toml:"timeout_sec"` // nil: no limit
	User         string   `toml:"user"`
	NetworkMode  string   `toml:"network_mode"`
	AllowedHosts []string `toml:"allowed_hosts"` // an allowlist for the agent's phase: refused
}

// VerifierConfig is Harbor's [verifier] table.
type VerifierConfig struct {
	TimeoutSec   *float64          `toml:"timeout_sec"` // default 600
	Env          map[string]string `toml:"env"`
	User         string            `toml:"user"`
	NetworkMode  string            `toml:"network_mode"`
	AllowedHosts []string          `toml:"allowed_hosts"` // an allowlist for the verifier's phase: refused
	// EnvironmentMode is "shared" (the verifier runs in the agent's
	// container) or "separate" (in a container of its own, from an image
	// built from tests/ or [verifier.environment].docker_image). Unset, a
	// [verifier.environment] table makes it separate (Task.SeparateVerifier).
	EnvironmentMode string `toml:"environment_mode"`
	// Environment is [verifier.environment], the separate verifier's
	// environment; without it the verifier's is a copy of [environment].
	Environment *EnvConfig `toml:"environment"`
	// Collect are [[verifier.collect]]: commands run in the task's
	// container after the agent, before the artifacts are collected.
	Collect []CollectHook `toml:"collect"`
}

// CollectHook is one [[verifier.collect]] command.
type CollectHook struct {
	Command    string   `toml:"command"`
	Service    string   `toml:"service"`     // default "main"
	TimeoutSec *float64 `toml:"timeout_sec"` // default 60
	User       string   `toml:"user"`        // default: the container's
}

// EnvConfig is Harbor's [environment] table.
type EnvConfig struct {
	DockerImage     string            `toml:"docker_image"`
	BuildTimeoutSec *float64          `toml:"build_timeout_sec"` // default 600
	CPUs            float64           `toml:"cpus"`
	MemoryMB        int64             `toml:"memory_mb"`
	Memory          string            `toml:"memory"` // older form: "2G", "512M"
	StorageMB       int64             `toml:"storage_mb"`
	Storage         string            `toml:"storage"`
	GPUs            int               `toml:"gpus"`
	GPUTypes        []string          `toml:"gpu_types"`
	TPU             any               `toml:"tpu"`            // refused when set
	OS              string            `toml:"os"`             // "linux" (default); "windows" is refused
	AllowInternet   *bool             `toml:"allow_internet"` // deprecated: false means network_mode "no-network"
	NetworkMode     string            `toml:"network_mode"`   // "public" (default), "no-network", "allowlist"
	AllowedHosts    []string          `toml:"allowed_hosts"`
	Workdir         string            `toml:"workdir"`
	Env             map[string]string `toml:"env"`
	Healthcheck     *Healthcheck      `toml:"healthcheck"`
}

// Healthcheck is Harbor's [environment.healthcheck], polled in the agent's
// container before the agent starts. Unset keys take Harbor's defaults
// (the methods below).
type Healthcheck struct {
	Command          string   `toml:"command"`
	IntervalSec      *float64 `toml:"interval_sec"`       // default 5
	TimeoutSec       *float64 `toml:"timeout_sec"`        // default 30
	StartPeriodSec   *float64 `toml:"start_period_sec"`   // default 0
	StartIntervalSec *float64 `toml:"start_interval_sec"` // default 5
	Retries          *int     `toml:"retries"`            // default 3
}

// Harbor's healthcheck defaults.
const (
	DefaultHealthInterval      = 5 * time.Second
	DefaultHealthTimeout       = 30 * time.Second
	DefaultHealthStartPeriod   = 0
	DefaultHealthStartInterval = 5 * time.Second
	DefaultHealthRetries       = 3
)

// Interval is the wait after a failure once the start period is over.
func (h *Healthcheck) Interval() time.Duration {
	return secondsOr(h.IntervalSec, DefaultHealthInterval)
}

// Timeout bounds one run of the command.
func (h *Healthcheck) Timeout() time.Duration { return secondsOr(h.TimeoutSec, DefaultHealthTimeout) }

// StartPeriod is how long after the container starts failures do not count.
func (h *Healthcheck) StartPeriod() time.Duration {
	return secondsOr(h.StartPeriodSec, DefaultHealthStartPeriod)
}

// StartInterval is the wait after a failure during the start period.
func (h *Healthcheck) StartInterval() time.Duration {
	return secondsOr(h.StartIntervalSec, DefaultHealthStartInterval)
}

// RetryLimit is how many failures in a row (after the start period) fail
// the trial; at least 1.
func (h *Healthcheck) RetryLimit() int {
	if h.Retries == nil {
		return DefaultHealthRetries
	}
	return max(1, *h.Retries)
}

// secondsOr is *s seconds, or def when s is nil or negative.
func secondsOr(s *float64, def time.Duration) time.Duration {
	if s == nil || *s < 0 {
		return def
	}
	return time.Duration(*s * float64(time.Second))
}

// SolutionConfig is Harbor's [solution] table.
type SolutionConfig struct {
	Env map[string]string `toml:"env"`
}

// FlightdeckKeys is the [flightdeck] table, which Harbor ignores.
type FlightdeckKeys struct {
	Tags        []string      `toml:"tags"`
	Sealed      bool          `toml:"sealed"`
	Environment string        `toml:"environment"` // the hangar environment
	MinedAfter  string        `toml:"mined_after"`
	MinedFrom   string        `toml:"mined_from"`
	MaxTurns    int           `toml:"max_turns"`
	Source      *Source       `toml:"source"`
	Grader      *GraderKeys   `toml:"grader"`
	Agent       *AgentAnswers `toml:"agent"`
}

// Source is [flightdeck.source]: what hangar checks out.
type Source struct {
	Repo       string `toml:"repo"`
	BaseSHA    string `toml:"base_sha"`
	BaseBranch string `toml:"base_branch"`
	Issue      string `toml:"issue"`
	Verify     string `toml:"verify"`
}

// GraderKeys is [flightdeck.grader]. A task that has a command is graded the
// flightdeck-native way; one without is graded with Harbor's semantics.
type GraderKeys struct {
	Command     string `toml:"command"`
	FilesDigest string `toml:"files_digest"`
}

// AgentAnswers is [flightdeck.agent]: bounded replies to an agent's questions.
type AgentAnswers struct {
	Answers []Answer `toml:"answers"`
}

// Answer replies Reply to a question that contains Match (case-insensitive).
// A question no answer matches is needs-input.
type Answer struct {
	Match string `toml:"match"`
	Reply string `toml:"reply"`
}
