package grader

import (
	"fmt"
	"sort"
	"strings"
)

// Event is one thing the runner observed during the agent phase.
type Event struct {
	Seq      int    `json:"seq"`                 // order of observation, increasing
	Kind     string `json:"kind"`                // "edit" | "command" | "git.commit"
	Path     string `json:"path,omitempty"`      // edit: the file, relative to the work dir, "/"-separated
	Command  string `json:"command,omitempty"`   // command: the command line
	ExitCode *int   `json:"exit_code,omitempty"` // command: how it exited, when known
	Message  string `json:"message,omitempty"`   // git.commit: the commit message
	Question string `json:"question,omitempty"`  // question, answer: what the agent asked
	Reply    string `json:"reply,omitempty"`     // answer: the task's reply
}

// Evidence is what the runner observed of one trial. A transcript is never
// evidence.
type Evidence struct {
	Events    []Event  `json:"events"`
	DiffFiles []string `json:"diff_files"` // committed plus uncommitted paths since the base commit, relative to the work dir
	Source    string   `json:"source"`     // "steps" (a deterministic replay) | "workdir" (recovered after the agent phase)
}

// Verdict statuses. Unknown never counts as a pass.
const (
	StatusPass    = "pass"
	StatusFail    = "fail"
	StatusUnknown = "unknown"
)

// JudgeRecorder is Verdict.RecordedBy for verdicts Judge gives.
const JudgeRecorder = "flightdeck"

// Verdict is a spec's judgement on one trial, with the evidence it used.
type Verdict struct {
	SpecID     string   `json:"spec_id"`
	Status     string   `json:"status"` // "pass" | "fail" | "unknown"
	Reason     string   `json:"reason"`
	Evidence   []Event  `json:"evidence,omitempty"` // the events the verdict rests on
	Files      []string `json:"files,omitempty"`    // the files the verdict rests on
	RecordedBy string   `json:"recorded_by,omitempty"`
	Note       string   `json:"note,omitempty"` // a pending spec's note, or a person's note
}

// Judge gives spec s's verdict on a trial's evidence. A pending spec is
// unknown (a person records it later); nil evidence is unknown ("no
// evidence"). Empty evidence — the agent did nothing observable — is
// judged, and fails what needs an event or a file.
func Judge(s Spec, ev *Evidence) Verdict {
	v := Verdict{SpecID: s.ID, RecordedBy: JudgeRecorder}
	switch {
	case s.Assert == nil || s.Assert.Kind() == "":
		v.Status, v.Reason, v.Note = StatusUnknown, "pending: awaits a person's verdict", s.Pending
		return v
	case ev == nil:
		v.Status, v.Reason = StatusUnknown, "no evidence"
		return v
	}
	a := s.Assert
	switch a.Kind() {
	case KindEventually:
		judgeEventually(&v, a.Eventually, ev)
	case KindAny:
		judgeAny(&v, a.Any, ev)
	case KindBefore:
		judgeBefore(&v, a.Before, ev)
	case KindArtifact:
		judgeArtifact(&v, a.Artifact, ev)
	}
	return v
}

func judgeEventually(v *Verdict, a *EventuallyAssert, ev *Evidence) {
	var events []Event
	for _, e := range ev.Events {
		if e.Kind != a.Event {
			continue
		}
		if a.Event == EventEdit && a.Path != "" && !matchGlob(a.Path, e.Path) {
			continue
		}
		events = append(events, e)
	}
	if len(events) == 0 {
		v.Status = StatusFail
		if a.Event == EventEdit && a.Path != "" {
			v.Reason = fmt.Sprintf("no edit of a path matching %q among %d events", a.Path, len(ev.Events))
		} else {
			v.Reason = fmt.Sprintf("no %s event among %d events", a.Event, len(ev.Events))
		}
		return
	}
	v.Evidence = events
	if a.Event == EventGitCommit && a.Path != "" {
		files := matching(a.Path, ev.DiffFiles)
		if len(files) == 0 {
			v.Status = StatusFail
			v.Reason = fmt.Sprintf("%d commit(s), but no delivered file (of %d in diff.files) matches %q", len(events), len(ev.DiffFiles), a.Path)
			return
		}
		v.Files = files
		v.Status = StatusPass
		v.Reason = fmt.Sprintf("%d commit(s), and %d delivered file(s) match %q", len(events), len(files), a.Path)
		return
	}
	v.Status = StatusPass
	v.Reason = fmt.Sprintf("%d %s event(s)", len(events), a.Event)
}

func judgeAny(v *Verdict, a *AnyAssert, ev *Evidence) {
	files := matching(a.DiffFiles, ev.DiffFiles)
	if len(files) == 0 {
		v.Status = StatusFail
		v.Reason = fmt.Sprintf("no file of %d in diff.files matches %q", len(ev.DiffFiles), a.DiffFiles)
		return
	}
	v.Status, v.Files = StatusPass, files
	v.Reason = fmt.Sprintf("%d file(s) in diff.files match %q", len(files), a.DiffFiles)
}

// judgeBefore compares first edits: edit order, not commit order (a commit
// event carries no paths).
func judgeBefore(v *Verdict, a *BeforeAssert, ev *Evidence) {
	first, hasFirst := firstEdit(a.Before, ev.Events)
	then, hasThen := firstEdit(a.After, ev.Events)
	switch {
	case !hasFirst && !hasThen:
		v.Status = StatusFail
		v.Reason = fmt.Sprintf("edit order: neither %q nor %q was edited", a.Before, a.After)
		return
	case !hasFirst:
		v.Status, v.Evidence = StatusFail, []Event{then}
		v.Reason = fmt.Sprintf("edit order: %q was never edited (%q was, at seq %d)", a.Before, a.After, then.Seq)
		return
	case !hasThen:
		v.Status, v.Evidence = StatusFail, []Event{first}
		v.Reason = fmt.Sprintf("edit order: %q was never edited (%q was, at seq %d)", a.After, a.Before, first.Seq)
		return
	}
	v.Evidence = []Event{first, then}
	if first.Seq < then.Seq {
		v.Status = StatusPass
		v.Reason = fmt.Sprintf("edit order: the first edit of %q (seq %d) precedes that of %q (seq %d)", a.Before, first.Seq, a.After, then.Seq)
		return
	}
	v.Status = StatusFail
	v.Reason = fmt.Sprintf("edit order: the first edit of %q (seq %d) does not precede that of %q (seq %d)", a.Before, first.Seq, a.After, then.Seq)
}

func judgeArtifact(v *Verdict, a *ArtifactAssert, ev *Evidence) {
	var edits []Event
	var changed []string
	for _, e := range ev.Events {
		if e.Kind == EventEdit && matchGlob(a.Expect, e.Path) {
			edits = append(edits, e)
			changed = append(changed, cleanName(e.Path))
		}
	}
	files := dedupe(append(changed, matching(a.Expect, ev.DiffFiles)...))
	if len(files) == 0 {
		v.Status = StatusFail
		v.Reason = fmt.Sprintf("no changed or delivered file matches %q", a.Expect)
		return
	}
	v.Status, v.Evidence, v.Files = StatusPass, edits, files
	v.Reason = fmt.Sprintf("%d changed or delivered file(s) match %q", len(files), a.Expect)
}

// firstEdit is the edit event with the lowest Seq whose path matches
// pattern; for "event:KIND" (event:question, say), the first event of that
// kind.
func firstEdit(pattern string, events []Event) (Event, bool) {
	var best Event
	found := false
	kind, byKind := strings.CutPrefix(pattern, eventPrefix)
	for _, e := range events {
		match := e.Kind == EventEdit && matchGlob(pattern, e.Path)
		if byKind {
			match = e.Kind == kind
		}
		if match && (!found || e.Seq < best.Seq) {
			best, found = e, true
		}
	}
	return best, found
}

// matching returns the cleaned names that match pattern, sorted, once each.
func matching(pattern string, names []string) []string {
	var out []string
	for _, n := range names {
		if matchGlob(pattern, n) {
			out = append(out, cleanName(n))
		}
	}
	return dedupe(out)
}

func dedupe(names []string) []string {
	sort.Strings(names)
	out := names[:0]
	for i, n := range names {
		if i == 0 || n != names[i-1] {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// String is a one-line account of the verdict, for logs and reports.
func (v Verdict) String() string {
	return strings.TrimSpace(fmt.Sprintf("%s %s: %s", v.SpecID, v.Status, v.Reason))
}
