package hangar

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/flightdeck/flightdeck/tasks"
)

// entry is one task read for export: its hangar form, its command and its
// tests, keyed tests/<path>.
type entry struct {
	task    *tasks.Task
	id      string // hangar id: the task id, or its short form
	command string // [flightdeck.grader].command
	spec    Task
	files   map[string]string
	bytes   int64
}

// harborGrader explains why a task without a grader command is refused.
const harborGrader = "missing: without it the task is graded the Harbor way (tests/test.sh in the agent's container, " +
	"the reward read from /logs/verifier), which hangar cannot do: hangar runs one command from the task's pristine " +
	"tests and reads its exit code. Set command = \"bash tests/test.sh\" once test.sh also writes its reward to " +
	"$HANGAR_GRADE_OUT and exits non-zero when the reward is 0 (docs/hangar.md)"

var hexSHA = regexp.MustCompile(`^[0-9a-f]{40}$`)

// collect reads t and checks everything hangar limits about one task alone.
// It returns nil and the violations when the task cannot be exported.
func collect(t *tasks.Task, sh shower) (*entry, []Violation) {
	var vs []Violation
	bad := func(file, field, format string, args ...any) {
		vs = append(vs, Violation{Task: t.ID, File: sh.show(file), Field: field, Rule: fmt.Sprintf(format, args...)})
	}
	toml := t.Path("task.toml")
	fd := t.Config.Flightdeck
	e := &entry{task: t, id: t.ID, files: map[string]string{}}
	if !tasks.ValidHangarID(t.ID) {
		e.id = tasks.ShortID(t.ID)
	}

	if fd.Sealed {
		bad(toml, "[flightdeck].sealed", "sealed tasks never leave this repository; hangar export refuses them")
	}
	if tr := t.Path(tasks.TrajectoryFile); fileExists(tr) {
		bad(tr, "seed trajectory", "a seed trajectory for the agent: hangar gives an agent the instruction alone, so the task would run without it; remove it, or keep the task out of the export")
	}
	steps := len(t.Config.Steps) > 0
	switch {
	case steps:
		// A step's instruction and tests live under steps/<name>/, and
		// the top-level ones may be absent: reading them would only say
		// "missing", and a grader command would not help.
		bad(toml, "[[steps]]", "a multi-step task (%d steps): hangar runs one instruction and one grader per task, "+
			"so it cannot run steps in order; export each step as a task of its own", len(t.Config.Steps))
	case t.Native():
		e.command = t.GraderCommand()
	default:
		bad(toml, "[flightdeck.grader].command", harborGrader)
	}
	src := fd.Source
	if src == nil {
		src = &tasks.Source{}
	}
	if strings.TrimSpace(src.Repo) == "" {
		bad(toml, "[flightdeck.source].repo", "missing: hangar applies and grades a trial's patch only on a repository")
	}
	switch {
	case strings.TrimSpace(src.BaseSHA) == "":
		bad(toml, "[flightdeck.source].base_sha", "missing: hangar checks the repository out at this commit")
	case !hexSHA.MatchString(src.BaseSHA):
		bad(toml, "[flightdeck.source].base_sha", "must be 40 lowercase hex digits, found %q", src.BaseSHA)
	}
	verifier := t.VerifierTimeout().Seconds()
	if verifier < tasks.MinVerifierTimeout || verifier > tasks.MaxVerifierTimeout {
		bad(toml, "[verifier].timeout_sec", "%g s is outside hangar's %g..%g s", verifier, tasks.MinVerifierTimeout, tasks.MaxVerifierTimeout)
	}

	e.spec = Task{
		ID:          e.id,
		Source:      Source{Repo: src.Repo, BaseSHA: src.BaseSHA, BaseBranch: src.BaseBranch, Issue: src.Issue, Verify: src.Verify},
		Environment: fd.Environment,
		Timeouts:    Timeouts{VerifierSec: verifier},
	}
	if t.Config.Task != nil {
		e.spec.Title = t.Config.Task.Description
	}
	if d, ok := t.AgentTimeout(); ok {
		s := d.Seconds()
		e.spec.Timeouts.AgentSec = &s
	}

	if steps {
		return nil, vs
	}
	vs = append(vs, collectInstruction(t, e, sh)...)
	vs = append(vs, collectPatch(t, e, sh)...)
	vs = append(vs, collectTests(t, e, sh)...)
	if len(vs) > 0 {
		return nil, vs
	}
	return e, nil
}

func collectInstruction(t *tasks.Task, e *entry, sh shower) []Violation {
	file := sh.show(t.Path("instruction.md"))
	text, err := t.Instruction()
	if err != nil {
		return []Violation{{Task: t.ID, File: file, Field: "instruction", Rule: fmt.Sprintf("cannot read: %v", err)}}
	}
	if !isText([]byte(text)) {
		return []Violation{{Task: t.ID, File: file, Field: "instruction", Rule: "not text (a NUL byte or invalid UTF-8)"}}
	}
	if n := utf8.RuneCountInString(text); n > tasks.MaxInstructionChars {
		return []Violation{{Task: t.ID, File: file, Field: "instruction",
			Rule: fmt.Sprintf("%d characters; hangar allows at most %d", n, tasks.MaxInstructionChars)}}
	}
	e.spec.Instruction = text
	return nil
}

func collectPatch(t *tasks.Task, e *entry, sh shower) []Violation {
	file := t.Path("solution", "reference.patch")
	bad := func(format string, args ...any) []Violation {
		return []Violation{{Task: t.ID, File: sh.show(file), Field: "reference_patch", Rule: fmt.Sprintf(format, args...)}}
	}
	info, err := os.Lstat(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return bad("cannot read: %v", err)
	}
	if !info.Mode().IsRegular() {
		return bad("not a regular file")
	}
	if info.Size() > tasks.MaxReferencePatch {
		return bad("%d bytes; hangar allows at most %d", info.Size(), tasks.MaxReferencePatch)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return bad("cannot read: %v", err)
	}
	if !isText(b) {
		return bad("not text (a NUL byte or invalid UTF-8)")
	}
	e.spec.ReferencePatch = string(b)
	return nil
}

// collectTests reads tests/ as the grader files, skipping what the task
// digest skips (__pycache__, *.pyc).
func collectTests(t *tasks.Task, e *entry, sh shower) []Violation {
	var vs []Violation
	bad := func(file, format string, args ...any) {
		vs = append(vs, Violation{Task: t.ID, File: sh.show(file), Field: "grader files", Rule: fmt.Sprintf(format, args...)})
	}
	root := t.Path("tests")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "__pycache__" {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".pyc") {
			return nil
		}
		if !d.Type().IsRegular() {
			bad(path, "not a regular file (symlinks and devices are refused)")
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !isText(b) {
			bad(path, "binary (a NUL byte or invalid UTF-8): hangar's grader files are text only")
			return nil
		}
		rel, err := filepath.Rel(t.Dir, path)
		if err != nil {
			return err
		}
		e.files[filepath.ToSlash(rel)] = string(b)
		e.bytes += int64(len(b))
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		bad(root, "cannot read: %v", err)
		return vs
	}
	if len(vs) > 0 {
		return vs
	}
	switch {
	case len(e.files) == 0:
		bad(root, "no files: hangar's grader would have no %s/ directory to run in", e.id)
	case len(e.files) > tasks.MaxGraderFiles || e.bytes > tasks.MaxGraderBytes:
		bad(root, "%d files, %d bytes: this task alone exceeds one experiment's %d files / %d bytes",
			len(e.files), e.bytes, tasks.MaxGraderFiles, tasks.MaxGraderBytes)
	}
	return vs
}

// isText is the task digest's test: no NUL byte and valid UTF-8.
func isText(b []byte) bool {
	return utf8.Valid(b) && bytes.IndexByte(b, 0) < 0
}

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
