package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/atomicfile"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/runner/tamper"
)

// ResultSchema is the version of result.json's layout.
const ResultSchema = 1

// Files in a trial's directory.
const (
	ResultFile = "result.json"
	AgentLog   = "agent.log"
	GraderLog  = "grader.log"
	BuildLog   = "build.log"
	DiffFiles  = "diff.files"
	DiffPatch  = "diff.patch"
	EventsFile = "events.jsonl"
	RunFile    = "run.json"
	JUnitFile  = "junit.xml"
	ReportPage = "report.html" // the run as one page (package htmlreport)
)

// Result is a trial's result.json: written once, atomically, when the trial
// has finished (or ended in an infrastructure error after its retries, or
// its task was refused).
type Result struct {
	Schema       int      `json:"schema"`
	RunID        string   `json:"run_id"`
	Trial        string   `json:"trial"` // the trial's directory name
	TaskID       string   `json:"task_id"`
	TaskDir      string   `json:"task_dir"`
	TaskDigest   string   `json:"task_digest"`
	Variant      string   `json:"variant"`
	Agent        string   `json:"agent"`
	Attempt      int      `json:"attempt"`
	CacheKey     string   `json:"cache_key"`
	Native       bool     `json:"native"` // graded the flightdeck way, else Harbor's
	Image        string   `json:"image,omitempty"`
	ImageID      string   `json:"image_id,omitempty"`
	MappedImages []string `json:"mapped_images,omitempty"` // "from=to" substitutions applied to the build
	WorkDir      string   `json:"workdir,omitempty"`       // the work dir's path in the containers

	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Phases   []Phase   `json:"phases"`

	Outcome      grader.Outcome     `json:"outcome"`
	OutcomeClass grader.SpecOutcome `json:"outcome_class"`
	Error        string             `json:"error,omitempty"`
	Reward       *float64           `json:"reward"`
	Rewards      map[string]float64 `json:"rewards,omitempty"`
	RewardSource string             `json:"reward_source,omitempty"`
	RewardError  *RewardProblem     `json:"reward_error,omitempty"`
	// Steps are a multi-step task's steps that ran, in order; the trial's
	// reward comes from theirs (the task's multi_step_reward_strategy).
	Steps   []StepResult    `json:"steps,omitempty"`
	Summary *grader.Summary `json:"result_summary,omitempty"` // the grader's RESULT line
	// Cause is why a graded trial failed, in one line, where the reward
	// alone does not say: the tests the grader's RESULT line names as
	// failed, the grader's last telling output line, and its log's path.
	Cause   string         `json:"cause,omitempty"`
	Refusal *suite.Refusal `json:"refusal,omitempty"` // why the task cannot run (outcome refused)
	// RegradedFrom is the trial a regrade graded anew: its agent's work,
	// recorded there, was graded by the task as it is now.
	RegradedFrom *Source `json:"regraded_from,omitempty"`
	// NeedsInput is the question that ended the agent's phase (outcome
	// needs_input): one the task's answers do not cover, or one past
	// their bound.
	NeedsInput *NeedsInput `json:"needs_input,omitempty"`
	// Questions are what the agent asked through the question channel and
	// what it was told, in order.
	Questions []Exchange `json:"questions,omitempty"`
	// MaxTurns is the task's [flightdeck] max_turns, given to the agent
	// (FLIGHTDECK_MAX_TURNS) and the bound of its questions; 0: none set.
	MaxTurns int `json:"max_turns,omitempty"`

	// StartWait is the wait for the container's entrypoint to settle
	// before the agent (Harbor's model, an image with an entrypoint of its
	// own and no healthcheck); nil when there was none.
	StartWait  *StartWait       `json:"start_wait,omitempty"`
	AgentPhase AgentRun         `json:"agent_phase"`
	GradePhase GraderRun        `json:"grade_phase"`
	Evidence   Evidence         `json:"evidence"`
	Specs      []grader.Verdict `json:"specs,omitempty"`
	// Tamper are the changes to the verifier's machinery found after the
	// agent's phase (Harbor's container model); TamperCheck says whether
	// the inspector ran and what it set apart.
	Tamper      []tamper.Finding `json:"tamper,omitempty"`
	TamperCheck *TamperCheck     `json:"tamper_check,omitempty"`
	Expect      string           `json:"expect,omitempty"`
	Expectation *bool            `json:"expectation_held,omitempty"`

	Tries      int    `json:"tries"` // 1 + infra_error retries
	Cached     bool   `json:"cached"`
	CachedFrom string `json:"cached_from,omitempty"` // "<run-id>/<trial>" the result was first written in
}

// TaskError tells whether the trial ended task_error: the task's own defect.
func (r *Result) TaskError() bool { return r.Outcome == grader.OutcomeTaskError }

// StartWait is how long a trial waited for its container's entrypoint to
// settle before the agent began.
type StartWait struct {
	Settled  bool  `json:"settled"`
	WaitedMS int64 `json:"waited_ms"`
	// StillBusy are what still changed when the wait's bound was reached
	// ("PID COMM STATE").
	StillBusy []string `json:"still_busy,omitempty"`
	Note      string   `json:"note,omitempty"` // why it did not wait
}

// TamperCheck is how the tamper inspector ran over a trial's container.
type TamperCheck struct {
	Checked bool   `json:"checked"`
	Note    string `json:"note,omitempty"` // why it did not run, or what it could not read
	// Installed are changes the package manager made ("path (package)"):
	// not tampering.
	Installed []string `json:"installed,omitempty"`
}

// Phase is one timed phase of a trial: image, workdir, agent, grade, result.
type Phase struct {
	Name    string    `json:"name"`
	Step    string    `json:"step,omitempty"` // a multi-step task's step
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Seconds float64   `json:"seconds"`
	Error   string    `json:"error,omitempty"`
}

// StepResult is how one step of a multi-step trial ended.
type StepResult struct {
	Name          string             `json:"name"`
	Reward        *float64           `json:"reward"`
	Rewards       map[string]float64 `json:"rewards,omitempty"`
	RewardError   *RewardProblem     `json:"reward_error,omitempty"`
	AgentExitCode *int               `json:"agent_exit_code,omitempty"`
	AgentTimedOut bool               `json:"agent_timed_out,omitempty"`
	GradeTimedOut bool               `json:"grade_timed_out,omitempty"`
	// Error says why the step was not graded (its setup.sh failed) or why
	// the steps after it did not run (below its min_reward).
	Error string `json:"error,omitempty"`
}

// AgentRun is how the agent phase ended.
type AgentRun struct {
	ExitCode *int    `json:"exit_code,omitempty"` // the last command's
	TimedOut bool    `json:"timed_out"`
	Timeout  float64 `json:"timeout_sec,omitempty"` // 0: no limit
	Failed   string  `json:"failed,omitempty"`      // why the agent phase failed (a step's exit code, ...)
	Steps    int     `json:"steps,omitempty"`       // steps replayed (deterministic scripts)
	// OOMKilled: the kernel killed a process of the agent's container for
	// its memory limit (the engine tells once the container has stopped).
	OOMKilled bool `json:"oom_killed,omitempty"`
	// PeakMemory is the most memory the agent's container used, where the
	// engine reports it (cgroup v1), and MemoryLimit its limit (0: none):
	// recorded for task verify's oracle runs.
	PeakMemory  int64 `json:"peak_memory_bytes,omitempty"`
	MemoryLimit int64 `json:"memory_limit_bytes,omitempty"`
}

// GraderRun is how the grade phase ended.
type GraderRun struct {
	ExitCode  *int    `json:"exit_code,omitempty"`
	TimedOut  bool    `json:"timed_out"`
	OOMKilled bool    `json:"oom_killed,omitempty"`
	Timeout   float64 `json:"timeout_sec"`
	// Mode is how a Harbor-way trial was graded: "live" (in the agent's
	// container) or "snapshot"; "" for flightdeck-native grading.
	Mode string `json:"mode,omitempty"`
	// AgentProcesses are the command lines of processes started during the
	// agent phase and still running when a live grade started: a service
	// the task asked for, or something able to change what the verifier
	// reads while it runs (grading: snapshot runs none of them).
	AgentProcesses []string `json:"agent_processes,omitempty"`
}

// RewardProblem is why no reward could be read.
type RewardProblem struct {
	Kind   string `json:"kind"`
	File   string `json:"file,omitempty"`
	Detail string `json:"detail"`
}

// Evidence is what the runner observed of the agent's work, summarised;
// the events themselves are in events.jsonl and the paths in diff.files.
type Evidence struct {
	Source    string `json:"source"` // "steps" or "workdir"; "" when none was recorded
	Note      string `json:"note,omitempty"`
	Events    int    `json:"events"`
	DiffFiles int    `json:"diff_files"`
}

// WriteJSONFile writes v as indented JSON to path atomically.
func WriteJSONFile(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	return atomicfile.WriteFile(path, append(data, '\n'))
}

// ReadResult reads a trial's result.json; an unreadable or incomplete file
// is an error (the trial counts as not run).
func ReadResult(path string) (*Result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: not a valid result: %w", path, err)
	}
	if r.Schema != ResultSchema || r.TaskID == "" || r.Variant == "" || r.Attempt < 1 || r.Outcome == "" {
		return nil, fmt.Errorf("%s: not a complete result (schema, task_id, variant, attempt, outcome)", path)
	}
	return &r, nil
}

// RewardProblemOf describes why no reward was read.
func RewardProblemOf(err error) *RewardProblem {
	var re *grader.RewardError
	if errors.As(err, &re) {
		return &RewardProblem{Kind: re.Kind, File: re.File, Detail: re.Error()}
	}
	return &RewardProblem{Kind: "unreadable", Detail: err.Error()}
}

// SetExpectation records whether the trial met its variant's expectation.
// A trial without a grade that counts (an infrastructure error, the task's
// own defect, a refused task) is held to none: the run's exit code says
// what kept it from being graded.
func SetExpectation(r *Result, v suite.Variant) {
	r.Expect = v.Expect
	r.Expectation = nil
	if v.Expect == "" || (r.Outcome.Ungraded() && r.Outcome != grader.OutcomeNeedsInput) {
		return
	}
	held := false
	switch {
	case r.Outcome == grader.OutcomeNeedsInput:
		// Not graded, so neither expectation held: an oracle that asks
		// what its task does not answer does not verify the task.
	case v.Expect == suite.ExpectPassed:
		held = r.Outcome == grader.OutcomePassed
	case v.Expect == suite.ExpectFailed:
		held = r.Outcome != grader.OutcomePassed
	}
	r.Expectation = &held
}

// RoundSeconds is d in seconds, to the millisecond.
func RoundSeconds(d time.Duration) float64 {
	return float64(d.Round(time.Millisecond)) / float64(time.Second)
}

// NeedsInput is why a trial ended as needs_input.
type NeedsInput struct {
	Question string    `json:"question"`     // as asked (cut at 4 KiB; "" when it was not text)
	Reason   string    `json:"reason"`       // why it got no reply
	ID       string    `json:"id,omitempty"` // the question's name in the channel
	Asked    int       `json:"asked"`        // questions asked, this one included
	At       time.Time `json:"at,omitzero"`  // when the runner read it
}

// Exchange is one question the agent asked and the reply it got.
type Exchange struct {
	ID       string    `json:"id"`
	Question string    `json:"question"`
	Reply    string    `json:"reply"`
	At       time.Time `json:"at,omitzero"` // when the runner answered it
}

// Source is the recorded trial a regrade derives from.
type Source struct {
	Action  string   `json:"action"` // "regrade"
	RunID   string   `json:"run_id"`
	Trial   string   `json:"trial"`
	Path    string   `json:"path"`   // its trial dir
	Reward  *float64 `json:"reward"` // its reward, for the delta
	Outcome string   `json:"outcome"`
	// Reproduced is what of the recorded trial the regrade graded:
	// ReproducedArtifacts or ReproducedWorkdir.
	Reproduced string `json:"reproduced,omitempty"`
}

// What a regrade reproduced of the recorded trial.
const (
	// ReproducedArtifacts: the recorded artifacts, in a separate verifier
	// (Harbor's regrade).
	ReproducedArtifacts = "artifacts"
	// ReproducedWorkdir: the work dir, rebuilt from the recorded
	// diff.patch (a native task, or a verifier in the agent's container).
	ReproducedWorkdir = "workdir"
)
