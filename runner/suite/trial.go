package suite

import (
	"fmt"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/text"
	"github.com/flightdeck/flightdeck/tasks"
)

// Trial is one task × variant × attempt.
type Trial struct {
	ID      string // "<task>__<variant>__<attempt>", the trial's directory name
	Task    *tasks.Task
	Variant Variant
	Attempt int
	Key     string // cache key
	Images  []string
	Specs   []grader.Spec
	// Refusal is why the trial's task cannot run (nil when it can): the
	// trial is recorded refused without running.
	Refusal *Refusal
	// Rewrite is what task verify's rewrite and answer attacks plant,
	// known once the traced oracle of its task has been graded (set
	// before the trial runs).
	Rewrite *Rewrite
}

// Rewrite is the plan of the attacks that read the traced oracle's trial:
// for the rewrite attack, the files its verifier executed or loaded as
// code, outside the oracle's own work, and what that verifier printed,
// which each stub prints; for the answer attack, the files the oracle
// added to its work dir, which it looks for in the image.
type Rewrite struct {
	Files  []string
	Output string
	// Printed is what the run of each of Files that printed anything
	// printed (the tracer's record of its process): its stub prints that,
	// where the verifier may read it, rather than Output.
	Printed map[string]string
	Note    string // why there is nothing to rewrite, when Files is empty
	// Outputs are the oracle's added files of 16 bytes or more.
	Outputs     []OracleOutput
	OutputsNote string // why there are none, when Outputs is empty
	// Data are the files the traced oracle's verifier read as data only
	// (vtrace.DataFiles): what its verdict may be compared with.
	Data []string
}

// OracleOutput is a file the oracle added to its work dir: its path in
// the container, size and SHA-256 (hex).
type OracleOutput struct {
	Path   string
	Size   int64
	SHA256 string
}

// Harbor reports whether the trial runs in Harbor's container model and is
// graded with Harbor's verifier: the task has no [flightdeck.grader]
// command, or the variant asks for grading: harbor or snapshot.
func (t *Trial) Harbor() bool {
	return !t.Task.Native() || t.Variant.Grading != ""
}

// TrialID names a trial (and its directory): TASK__VARIANT__ATTEMPT.
func TrialID(task, variant string, attempt int) string {
	return fmt.Sprintf("%s__%s__%d", text.FileName(task), text.FileName(variant), attempt)
}
