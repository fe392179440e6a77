package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
)

// scriptVersion is the deterministic.json format version this runner reads.
const scriptVersion = 1

// Limits on a deterministic script.
const (
	maxScriptBytes = 4 << 20
	maxScriptSteps = 10000
)

// Script is a deterministic.json: the ordered steps the oracle (when the task
// has one) or a deterministic variant replays in the agent's work dir.
type Script struct {
	Version int
	Steps   []Step
	File    string // where it was read from, for messages
}

// Step is one step: exactly one of Write, Run and Commit is set.
type Step struct {
	Write  *WriteStep  `json:"write,omitempty"`
	Run    *RunStep    `json:"run,omitempty"`
	Commit *CommitStep `json:"commit,omitempty"`
	Ask    *AskStep    `json:"ask,omitempty"`
}

// AskStep asks Question through the question channel, from inside the
// agent's container as any agent would (AskScript), and checks that the
// reply contains Expect (ignoring case; "" takes any reply).
type AskStep struct {
	Question string `json:"question"`
	Expect   string `json:"expect,omitempty"`
}

// WriteStep writes a file in the work dir, from inline content or from a file
// under the task's solution/.
type WriteStep struct {
	Path    string  `json:"path"`
	From    string  `json:"from,omitempty"`
	Content *string `json:"content,omitempty"`
	Mode    string  `json:"mode,omitempty"` // octal, default "0644"
}

// RunStep runs a command with `bash -c` in the work dir, in the agent's
// container; a different exit code than ExpectExit fails the agent phase.
type RunStep struct {
	Command    string `json:"command"`
	ExpectExit *int   `json:"expect_exit,omitempty"`
}

// CommitStep commits everything in the work dir: git add -A && git commit -m.
type CommitStep struct {
	Message string `json:"message"`
}

// Kind names the step's kind.
func (s Step) Kind() string {
	switch {
	case s.Write != nil:
		return "write"
	case s.Run != nil:
		return "run"
	case s.Commit != nil:
		return "commit"
	case s.Ask != nil:
		return "ask"
	}
	return ""
}

// Expected is the exit code a run step expects.
func (r RunStep) Expected() int {
	if r.ExpectExit == nil {
		return 0
	}
	return *r.ExpectExit
}

// FileMode is the write step's mode (0644 when not given).
func (w WriteStep) FileMode() os.FileMode {
	if w.Mode == "" {
		return 0o644
	}
	m, _ := strconv.ParseUint(w.Mode, 8, 32) // checked by ParseScript
	return os.FileMode(m)
}

// LoadScript reads and checks a deterministic.json.
func LoadScript(file string) (*Script, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("read deterministic script: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxScriptBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read deterministic script %s: %w", file, err)
	}
	return parseScript(data, file)
}

// parseScript parses and checks a deterministic script; errors name the
// file, the step's index and the field.
func parseScript(data []byte, file string) (*Script, error) {
	errf := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s", file, fmt.Sprintf(format, args...))
	}
	if len(data) > maxScriptBytes {
		return nil, errf("larger than %d bytes", maxScriptBytes)
	}
	var top struct {
		Version *int              `json:"version"`
		Steps   []json.RawMessage `json:"steps"`
	}
	if err := strictJSON(data, &top); err != nil {
		return nil, errf("%v", err)
	}
	if top.Version == nil {
		return nil, errf("version is missing (want %d)", scriptVersion)
	}
	if *top.Version != scriptVersion {
		return nil, errf("version %d is not supported (want %d)", *top.Version, scriptVersion)
	}
	if top.Steps == nil {
		return nil, errf("steps is missing (a list of write, run and commit steps)")
	}
	if len(top.Steps) > maxScriptSteps {
		return nil, errf("%d steps: at most %d", len(top.Steps), maxScriptSteps)
	}
	s := &Script{Version: *top.Version, File: file}
	for i, raw := range top.Steps {
		st, err := parseStep(raw)
		if err != nil {
			return nil, errf("steps[%d]%v", i, err)
		}
		s.Steps = append(s.Steps, st)
	}
	return s, nil
}

// parseStep returns errors that start with the field (".write.path: ...").
func parseStep(raw json.RawMessage) (Step, error) {
	var kinds map[string]json.RawMessage
	if err := strictJSON(raw, &kinds); err != nil || kinds == nil {
		return Step{}, fmt.Errorf(": a step must be an object with one of write, run, commit, ask")
	}
	if len(kinds) != 1 {
		return Step{}, fmt.Errorf(": a step has exactly one of write, run, commit, ask (found %s)", strings.Join(slices.Sorted(maps.Keys(kinds)), ", "))
	}
	var st Step
	for kind, body := range kinds {
		var err error
		switch kind {
		case "write":
			st.Write = &WriteStep{}
			err = strictJSON(body, st.Write)
			if err == nil {
				err = checkWrite(st.Write)
			}
		case "run":
			st.Run = &RunStep{}
			err = strictJSON(body, st.Run)
			if err == nil {
				err = checkRun(st.Run)
			}
		case "commit":
			st.Commit = &CommitStep{}
			err = strictJSON(body, st.Commit)
			if err == nil && strings.TrimSpace(st.Commit.Message) == "" {
				err = fmt.Errorf(".message: a commit needs a non-empty message")
			}
		case "ask":
			st.Ask = &AskStep{}
			err = strictJSON(body, st.Ask)
			if err == nil && strings.TrimSpace(st.Ask.Question) == "" {
				err = fmt.Errorf(".question: an ask step needs a non-empty question")
			}
			if err == nil && len(st.Ask.Question) > MaxQuestionBytes {
				err = fmt.Errorf(".question: %d bytes; a question holds at most %d", len(st.Ask.Question), MaxQuestionBytes)
			}
		default:
			return Step{}, fmt.Errorf(": unknown step kind %q (one of write, run, commit, ask)", kind)
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), ".") {
				err = fmt.Errorf(": %v", err)
			}
			return Step{}, fmt.Errorf(".%s%v", kind, err)
		}
	}
	return st, nil
}

func checkWrite(w *WriteStep) error {
	if err := checkWorkPath(w.Path); err != nil {
		return fmt.Errorf(".path: %v", err)
	}
	switch {
	case w.From != "" && w.Content != nil:
		return fmt.Errorf("give from or content, not both")
	case w.From == "" && w.Content == nil:
		return fmt.Errorf("give from (a file under solution/) or content")
	case w.From != "":
		if err := checkSolutionPath(w.From); err != nil {
			return fmt.Errorf(".from: %v", err)
		}
	}
	if w.Mode != "" {
		m, err := strconv.ParseUint(w.Mode, 8, 32)
		if err != nil || m > 0o777 {
			return fmt.Errorf(".mode: %q is not an octal file mode like \"0644\"", w.Mode)
		}
	}
	return nil
}

func checkRun(r *RunStep) error {
	if strings.TrimSpace(r.Command) == "" {
		return fmt.Errorf(".command: a run step needs a command")
	}
	if r.ExpectExit != nil && (*r.ExpectExit < 0 || *r.ExpectExit > 255) {
		return fmt.Errorf(".expect_exit: %d is not an exit code (0..255)", *r.ExpectExit)
	}
	return nil
}

// checkWorkPath checks a path relative to the work dir.
func checkWorkPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("the path is empty")
	case strings.ContainsRune(p, 0) || strings.Contains(p, `\`):
		return fmt.Errorf("%q: no NUL or backslash", p)
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("%q must be relative to the work dir, not absolute", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return fmt.Errorf("%q must stay in the work dir (no \"..\")", p)
		}
	}
	clean := path.Clean(p)
	if clean == "." {
		return fmt.Errorf("%q names the work dir itself, not a file", p)
	}
	if clean == ".git" || strings.HasPrefix(clean, ".git/") {
		return fmt.Errorf("%q is inside .git; use a commit step", p)
	}
	return nil
}

// checkSolutionPath checks a `from` path: relative to the task dir and under
// solution/.
func checkSolutionPath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || strings.ContainsRune(p, 0) || strings.Contains(p, `\`) {
		return fmt.Errorf("%q must be a relative path under solution/", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return fmt.Errorf("%q must stay under solution/ (no \"..\")", p)
		}
	}
	if clean := path.Clean(p); !strings.HasPrefix(clean, "solution/") {
		return fmt.Errorf("%q must be under solution/", p)
	}
	return nil
}

// strictJSON decodes one JSON value, refusing unknown fields and trailing data.
func strictJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the JSON value")
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); err != io.EOF {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}
