package grader

import (
	"path"
	"strings"
)

// Spec is a behaviour spec: an assertion about how a trial's work was done,
// judged on the evidence the runner observed. A spec has exactly one
// Assert, or none and a Pending note (a check a person records later).
//
// In a spec file (YAML):
//
//	specs:
//	  - id: csv-duplicate-rows.commit
//	    description: the agent committed its work
//	    applies_when: {task_id: csv-duplicate-rows, variant: treatment}   # both optional
//	    assert: {eventually: {event: git.commit}}
//	  - id: csv-duplicate-rows.touches-validator
//	    assert: {any: {diff.files: "csvcheck/*.py"}}
//	  - id: csv-duplicate-rows.ordering
//	    assert: {before: {before: "docs/plan.md", after: "csvcheck/validate.py"}}
//	  - id: csv-duplicate-rows.artifact
//	    assert: {artifact: {expect: "docs/*.md"}}
//	  - id: csv-duplicate-rows.quality
//	    description: code is readable
//	    pending: "human review: record with flightdeck spec record"
//
// The assert kinds:
//
//   - eventually: {event: git.commit} passes when a git.commit event was
//     recorded; with path: GLOB it also needs a delivered file (Evidence.DiffFiles)
//     matching GLOB. {event: edit} (optionally with path, matched against the
//     edited paths) and {event: command} pass on such an event.
//   - any: {diff.files: GLOB} passes when a delivered file matches GLOB.
//   - before: {before: A, after: B} passes when the first edit of a path
//     matching A precedes (lower Seq) the first edit of a path matching B. It
//     is edit order, not commit order; a missing edit of either fails.
//   - artifact: {expect: GLOB} passes when a changed (edited) or delivered
//     file matches GLOB.
//
// Paths and globs are relative to the work dir; see matchGlob for the glob
// syntax ("**" spans directories). applies_when's task_id and variant are
// path.Match patterns over the task id and variant name; an empty one
// matches all.
type Spec struct {
	ID          string      `json:"id"`
	Description string      `json:"description,omitempty"`
	AppliesWhen AppliesWhen `json:"applies_when,omitzero"`
	Assert      *Assert     `json:"assert,omitempty"`
	Pending     string      `json:"pending,omitempty"`
	File        string      `json:"file,omitempty"` // the spec file it came from
	Line        int         `json:"line,omitempty"` // the line of its entry in File
}

// AppliesWhen scopes a spec to tasks and variants; empty fields match all.
type AppliesWhen struct {
	TaskID  string `json:"task_id,omitempty"`
	Variant string `json:"variant,omitempty"`
}

// Assert holds exactly one assert kind.
type Assert struct {
	Eventually *EventuallyAssert `json:"eventually,omitempty"`
	Any        *AnyAssert        `json:"any,omitempty"`
	Before     *BeforeAssert     `json:"before,omitempty"`
	Artifact   *ArtifactAssert   `json:"artifact,omitempty"`
}

// EventuallyAssert: an event of kind Event was recorded (for git.commit with
// Path: and a delivered file matches Path; for edit with Path: an edit of a
// matching path).
type EventuallyAssert struct {
	Event string `json:"event"`
	Path  string `json:"path,omitempty"`
}

// AnyAssert: a delivered file (diff.files) matches DiffFiles.
type AnyAssert struct {
	DiffFiles string `json:"diff.files"`
}

// BeforeAssert: the first edit of Before precedes the first edit of After.
// Either may be "event:KIND" instead of a path glob: the first event of
// that kind ("event:question": the agent asked before it edited).
type BeforeAssert struct {
	Before string `json:"before"`
	After  string `json:"after"`
}

// ArtifactAssert: a changed or delivered file matches Expect.
type ArtifactAssert struct {
	Expect string `json:"expect"`
}

// Assert kinds, as Kind returns them.
const (
	KindEventually = "eventually"
	KindAny        = "any"
	KindBefore     = "before"
	KindArtifact   = "artifact"
)

// Event kinds recorded in Evidence.
const (
	EventEdit      = "edit"
	EventCommand   = "command"
	EventGitCommit = "git.commit"
	EventQuestion  = "question" // the agent asked (Question)
	EventAnswer    = "answer"   // the task's answers replied (Question, Reply)
)

// eventPrefix marks a before/after assert's side that names an event kind.
const eventPrefix = "event:"

// Kind names the assert's kind, or "" when none is set.
func (a *Assert) Kind() string {
	switch {
	case a == nil:
		return ""
	case a.Eventually != nil:
		return KindEventually
	case a.Any != nil:
		return KindAny
	case a.Before != nil:
		return KindBefore
	case a.Artifact != nil:
		return KindArtifact
	}
	return ""
}

// Applies reports whether the spec applies to a trial of taskID under variant.
func (s Spec) Applies(taskID, variant string) bool {
	return matchScope(s.AppliesWhen.TaskID, taskID) && matchScope(s.AppliesWhen.Variant, variant)
}

func matchScope(pattern, name string) bool {
	if pattern == "" {
		return true
	}
	ok, err := path.Match(pattern, name)
	return ok && err == nil
}

// validScope reports whether pattern is usable in applies_when.
func validScope(pattern string) bool {
	_, err := path.Match(pattern, "")
	return err == nil && strings.TrimSpace(pattern) == pattern
}
