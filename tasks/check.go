package tasks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// hangar's limits, checked before a task is submitted.
const (
	MaxInstructionChars = 64000
	MaxGraderFiles      = 64
	MaxGraderBytes      = 1000000 // tests/ in all
	MaxReferencePatch   = 1000000 // solution/reference.patch
	MinVerifierTimeout  = 30.0    // seconds
	MaxVerifierTimeout  = 3600.0  // seconds
)

const (
	referencePatchFile    = "solution/reference.patch"
	testScript            = "tests/test.sh"
	environmentDockerfile = "environment/Dockerfile"
)

// Finding is one problem Check found: the path it is about, a short rule
// name, what was found, and its severity (SeverityError or SeverityWarning).
type Finding struct {
	Path     string `json:"path"`
	Rule     string `json:"rule"`
	Message  string `json:"message"`
	Severity string `json:"severity"`
	// Line is the 1-based line of Path the finding is about (the message
	// names it too); 0 when it is about the whole file.
	Line int `json:"line,omitempty"`
}

var baseSHARE = regexp.MustCompile(`^[0-9a-f]{40}$`)

// Check reports every finding in the task directory dir, not just the first:
// everything Load refuses for a local run (a sealed task is only a warning
// here, since Check is not a local run; what the local runner cannot run,
// such as GPUs, allowlisted networks or a Compose environment, is an error), the layout (task.toml, instruction.md, environment/
// with a Dockerfile or [environment].docker_image, tests/test.sh), and
// hangar's limits (the id, instruction.md's length, tests/'s files, the
// reference patch's size, [verifier].timeout_sec, [flightdeck.source].base_sha),
// and the task author's slips that nothing else would catch before a run:
// unknown keys in task.toml (an error in flightdeck's own tables, a warning
// in Harbor's, which Harbor ignores), scripts bash cannot parse, an empty
// instruction, and placeholders of the template left behind.
func Check(dir string) []Finding {
	v := validate(dir, LoadOptions{check: true})
	isTask := len(v.issues) == 0 || v.issues[0].rule != "task-dir"
	if isTask {
		v.checkLayout(dir)
		v.checkHangar(dir)
	}
	out := make([]Finding, 0, len(v.issues))
	for _, is := range v.issues {
		msg := is.message
		if is.field != "" {
			msg = is.field + ": " + msg
		}
		out = append(out, Finding{Path: is.path(dir), Rule: is.rule, Message: msg, Severity: is.severity})
	}
	if isTask {
		out = append(out, authorSlips(dir)...)
		out = append(out, checkPlaceholders(dir)...)
		out = append(out, checkBaseNames(dir)...)
		out = append(out, checkDockerfileInstructions(dir)...)
		out = append(out, checkVerifierIsolation(dir, v.parsed && v.cfg.Flightdeck.Grader != nil)...)
	}
	return out
}

// authorSlips are the findings of the author's slips that Load refuses
// too when they are errors: unknown keys, scripts bash cannot parse, an
// empty instruction.
func authorSlips(dir string) []Finding {
	out := UnknownKeys(dir)
	out = append(out, checkScripts(dir)...)
	return append(out, checkInstructions(dir)...)
}

// checkLayout reports the files a task must have.
func (v *validation) checkLayout(dir string) {
	if !v.has("windows") && !v.multiStep() && !isRegularFile(filepath.Join(dir, filepath.FromSlash(testScript))) {
		v.errorf(testScript, "", "layout.tests", "missing: tests/test.sh writes the reward")
	}
	if !isRegularFile(filepath.Join(dir, filepath.FromSlash(environmentDockerfile))) && (!v.parsed || v.cfg.Environment.DockerImage == "") {
		v.errorf(EnvironmentDir, "", "layout.environment", "missing: environment/Dockerfile, or [environment].docker_image in task.toml")
	}
}

func isRegularFile(p string) bool {
	info, err := os.Lstat(p)
	return err == nil && info.Mode().IsRegular()
}

// checkHangar reports what hangar would refuse.
func (v *validation) checkHangar(dir string) {
	if !ValidHangarID(v.id) {
		if len(v.id) > maxHangarIDLen && ValidHangarID(v.id[:maxHangarIDLen]) {
			v.add(SeverityWarning, TaskFile, "", "hangar.id",
				"task id %q is longer than %d characters; on hangar it becomes %q", v.id, maxHangarIDLen, ShortID(v.id))
		} else {
			v.errorf(TaskFile, "", "hangar.id",
				"task id %q does not match ^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$ (its short form would be %q)", v.id, ShortID(v.id))
		}
	}
	if b, err := readRegular(filepath.Join(dir, InstructionFile)); err == nil {
		switch {
		case !utf8.Valid(b):
			v.errorf(InstructionFile, "", "hangar.instruction", "is not UTF-8 text")
		case utf8.RuneCount(b) > MaxInstructionChars:
			v.errorf(InstructionFile, "", "hangar.instruction", "has %d characters; hangar takes at most %d", utf8.RuneCount(b), MaxInstructionChars)
		}
	}
	v.checkGraderFiles(dir)
	if info, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(referencePatchFile))); err == nil && info.Size() > MaxReferencePatch {
		v.errorf(referencePatchFile, "", "hangar.reference-patch", "is %d bytes; hangar takes at most %d", info.Size(), MaxReferencePatch)
	}
	if !v.parsed {
		return
	}
	if t := v.cfg.Verifier.TimeoutSec; t != nil && (*t < MinVerifierTimeout || *t > MaxVerifierTimeout) {
		v.errorf(TaskFile, "[verifier].timeout_sec", "verifier.timeout", "is %v; hangar's grader timeout must be within %v..%v seconds", *t, MinVerifierTimeout, MaxVerifierTimeout)
	}
	if src := v.cfg.Flightdeck.Source; src != nil && src.BaseSHA != "" && !baseSHARE.MatchString(src.BaseSHA) {
		v.errorf(TaskFile, "[flightdeck.source].base_sha", "source.base-sha", "must be a full commit id, 40 lowercase hex digits (found %q)", src.BaseSHA)
	}
}

// checkGraderFiles applies hangar's limits to tests/, the grader's files:
// at most 64 files and 1 MB in all, text only.
func (v *validation) checkGraderFiles(dir string) {
	root := filepath.Join(dir, TestsDir)
	if _, err := os.Lstat(root); err != nil {
		return
	}
	count, total := 0, int64(0)
	err := walkTree(root, func(rel string, d fs.DirEntry) error {
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return err
		}
		count++
		total += int64(len(b))
		if !isText(b) {
			v.errorf(TestsDir+"/"+rel, "", "hangar.tests-text", "is not text (a NUL byte or invalid UTF-8); hangar's grader files are text only")
		}
		return nil
	})
	if err != nil {
		return // a symlink or unreadable file: reported by the digest checks
	}
	if count > MaxGraderFiles {
		v.errorf(TestsDir, "", "hangar.tests-count", "has %d files; hangar takes at most %d", count, MaxGraderFiles)
	}
	if total > MaxGraderBytes {
		v.errorf(TestsDir, "", "hangar.tests-size", "has %d bytes in all; hangar takes at most %d", total, MaxGraderBytes)
	}
}

// Finding rules of the author's slips.
const (
	ruleUnknownKey   = "toml.unknown-key"
	ruleScriptSyntax = "script.syntax"
	ruleInstruction  = "instruction.empty"
	rulePlaceholder  = "template.placeholder"
)

// finding makes a Finding about line of file (relative, "/"-separated) in
// dir; the message starts with the line when there is one.
func finding(dir, file string, line int, sev, rule, format string, args ...any) Finding {
	msg := fmt.Sprintf(format, args...)
	if line > 0 {
		msg = fmt.Sprintf("line %d: %s", line, msg)
	}
	return Finding{Path: filepath.Join(dir, filepath.FromSlash(file)), Rule: rule, Message: msg, Severity: sev, Line: line}
}

// UnknownKeys reports the keys of task.toml that neither Harbor nor
// flightdeck knows: errors in flightdeck's tables, where nothing else reads
// a key, warnings elsewhere, since Harbor ignores them and a Harbor task
// must still run (a run says them, since a misspelt key's default applies).
func UnknownKeys(dir string) []Finding {
	src, err := readRegular(filepath.Join(dir, TaskFile))
	if err != nil {
		return nil // reported by the layout checks
	}
	var out []Finding
	for _, u := range unknownKeys(src) {
		sev, ignored := SeverityWarning, "Harbor and flightdeck ignore it"
		if u.flightdeck() {
			sev, ignored = SeverityError, "flightdeck reads no such key"
		}
		name, what := formatKey(u.path), "key"
		if u.table {
			name, what = "["+tableName(u.path)+"]", "table"
			if u.flightdeck() {
				ignored = "flightdeck reads no such table"
			}
		}
		msg := fmt.Sprintf("%s: unknown %s: %s", name, what, ignored)
		if u.suggest != "" {
			msg += "; did you mean " + u.suggest + "?"
		}
		out = append(out, finding(dir, TaskFile, u.line, sev, ruleUnknownKey, "%s", msg))
	}
	return out
}

// tableName writes a table's path as in its header, without the brackets.
func tableName(path []string) string {
	parts := make([]string, len(path))
	for i, k := range path {
		parts[i] = quoteKey(k)
	}
	return strings.Join(parts, ".")
}

// bashCheckTimeout bounds one `bash -n`.
const bashCheckTimeout = 5 * time.Second

// shellScripts lists the task's scripts that are run with bash, relative
// and "/"-separated: tests/test.sh, solution/solve.sh and, for each step,
// its test.sh, solve.sh and workdir/setup.sh. Only those that exist.
func shellScripts(dir string) []string {
	candidates := []string{testScript, "solution/solve.sh"}
	if steps, err := os.ReadDir(filepath.Join(dir, StepsDir)); err == nil {
		for _, st := range steps {
			if !st.IsDir() {
				continue
			}
			base := StepsDir + "/" + st.Name() + "/"
			candidates = append(candidates, base+testScript, base+"solution/solve.sh", base+"workdir/setup.sh")
		}
	}
	var out []string
	for _, rel := range candidates {
		if isRegularFile(filepath.Join(dir, filepath.FromSlash(rel))) {
			out = append(out, rel)
		}
	}
	return out
}

// checkScripts runs `bash -n` on each of the task's shell scripts and
// reports bash's own message for one that does not parse. Without bash on
// PATH there is nothing to run it with, and nothing is reported.
func checkScripts(dir string) []Finding {
	bash, err := exec.LookPath("bash")
	if err != nil {
		return nil
	}
	var out []Finding
	for _, rel := range shellScripts(dir) {
		if !bashScript(filepath.Join(dir, filepath.FromSlash(rel))) {
			continue
		}
		if f, bad := bashSyntax(bash, dir, rel); bad {
			out = append(out, f)
		}
	}
	return out
}

// shellInterpreters are the #! interpreters whose scripts bash parses.
var shellInterpreters = map[string]bool{"bash": true, "sh": true, "dash": true, "ash": true}

// bashScript reports whether the script at p is one bash can parse: it has
// no #! line, or one naming a POSIX shell or bash (directly or through env).
func bashScript(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 256)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	if !bytes.HasPrefix(head, []byte("#!")) {
		return true
	}
	line, _, _ := bytes.Cut(head[2:], []byte("\n"))
	fields := strings.Fields(strings.TrimSpace(string(line)))
	if len(fields) == 0 {
		return true
	}
	interp := path.Base(fields[0])
	if interp == "env" {
		interp = ""
		for _, a := range fields[1:] {
			if !strings.HasPrefix(a, "-") && !strings.Contains(a, "=") {
				interp = path.Base(a)
				break
			}
		}
	}
	return shellInterpreters[interp]
}

// bashLineRE picks the line number out of bash's message.
var bashLineRE = regexp.MustCompile(`^line (\d+): `)

// bashSyntax runs `bash -n rel` in dir, with no environment but PATH (no
// BASH_ENV or the like runs) and a timeout, and turns a failure into a
// finding with bash's own message.
func bashSyntax(bash, dir, rel string) (Finding, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), bashCheckTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "-n", filepath.FromSlash(rel))
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	cmd.WaitDelay = time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err == nil {
		return Finding{}, false
	}
	if ctx.Err() != nil {
		return finding(dir, rel, 0, SeverityWarning, ruleScriptSyntax,
			"bash -n did not finish within %v: the script's syntax is unchecked", bashCheckTimeout), true
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return Finding{}, false // bash did not run: nothing is known of the script
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		l = strings.TrimPrefix(strings.TrimSpace(l), filepath.FromSlash(rel)+": ")
		if l != "" && len(lines) < 5 {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return finding(dir, rel, 0, SeverityError, ruleScriptSyntax, "bash -n exited %d", exit.ExitCode()), true
	}
	line := 0
	if m := bashLineRE.FindStringSubmatch(lines[0]); m != nil {
		line, _ = strconv.Atoi(m[1])
	}
	// The message starts with bash's "line N: " already.
	return Finding{Path: filepath.Join(dir, filepath.FromSlash(rel)), Rule: ruleScriptSyntax,
		Message: strings.Join(lines, "; "), Severity: SeverityError, Line: line}, true
}

// checkInstructions reports an instruction.md (the task's, or a step's)
// that holds nothing but white space: the agent would be told nothing.
func checkInstructions(dir string) []Finding {
	files := []string{InstructionFile}
	if steps, err := os.ReadDir(filepath.Join(dir, StepsDir)); err == nil {
		for _, st := range steps {
			if st.IsDir() {
				files = append(files, StepsDir+"/"+st.Name()+"/"+InstructionFile)
			}
		}
	}
	var out []Finding
	for _, rel := range files {
		b, err := readRegular(filepath.Join(dir, filepath.FromSlash(rel)))
		if err == nil && strings.TrimSpace(string(b)) == "" {
			out = append(out, finding(dir, rel, 0, SeverityError, ruleInstruction,
				"is empty: the agent would be given no instruction"))
		}
	}
	return out
}

// placeholder is a part of the template (tasks/template) that a task's
// author replaces: a file and the template's words that mark it unreplaced.
type placeholder struct {
	file    string   // relative, "/"-separated
	markers []string // any of them left means the placeholder is
	advice  string
}

// templatePlaceholders are the template's placeholders, as `task new`
// writes them; [task].description's is templateDescription.
var templatePlaceholders = []placeholder{
	{InstructionFile, []string{"# TODO: the task's title", "Say what the agent is to build or fix, where the code lives"},
		"write what the agent is to do"},
	{"solution/solve.sh", []string{`"""TODO: the reference solution."""`},
		"replace it with the reference solution"},
	{"tests/test_hidden.py", []string{"placeholder hidden test: replace tests/test_hidden.py"},
		"replace it with the task's hidden tests (the placeholder always fails)"},
}

const templateDescription = "TODO: a one-line title"

// placeholderState is what became of a placeholder.
type placeholderState int

const (
	placeholderAbsent   placeholderState = iota // no file, and nothing in its place
	placeholderLeft                             // still the template's
	placeholderReplaced                         // changed, or another file in its place
)

// checkPlaceholders warns of each of the template's placeholders left in a
// task: what is still to write. A task just made by `task new` holds all of
// them; warnings do not fail task check, so it passes at once with its
// to-do list (its placeholder hidden test fails `task verify`).
func checkPlaceholders(dir string) []Finding {
	type left struct {
		file, field, advice, marker string
		line                        int
	}
	var lefts []left
	for _, p := range templatePlaceholders {
		if state, marker, line := p.state(dir); state == placeholderLeft {
			lefts = append(lefts, left{file: p.file, advice: p.advice, marker: marker, line: line})
		}
	}
	if src, err := readRegular(filepath.Join(dir, TaskFile)); err == nil {
		if doc, err := parseDoc(src); err == nil {
			task, _ := doc["task"].(map[string]any)
			desc, _ := task["description"].(string)
			switch strings.TrimSpace(desc) {
			case "":
			case templateDescription:
				lefts = append(lefts, left{file: TaskFile, field: "[task].description", marker: templateDescription,
					advice: "give the task its one-line title", line: statementLine(src, []string{"task", "description"})})
			}
		}
	}
	var out []Finding
	for _, l := range lefts {
		msg := fmt.Sprintf("still the template's placeholder `%s`: %s", l.marker, l.advice)
		if l.field != "" {
			msg = l.field + ": " + msg
		}
		out = append(out, finding(dir, l.file, l.line, SeverityWarning, rulePlaceholder, "%s", msg))
	}
	return out
}

// state tells whether the placeholder is left (with the marker found and
// its line), replaced (its file changed, or gone with a file the template
// does not have beside it, such as tests of the author's own), or absent.
func (p placeholder) state(dir string) (placeholderState, string, int) {
	b, err := readRegular(filepath.Join(dir, filepath.FromSlash(p.file)))
	if err == nil {
		for _, m := range p.markers {
			if i := bytes.Index(b, []byte(m)); i >= 0 {
				return placeholderLeft, m, 1 + bytes.Count(b[:i], []byte("\n"))
			}
		}
		return placeholderReplaced, "", 0
	}
	if !errors.Is(err, fs.ErrNotExist) || path.Dir(p.file) == "." {
		return placeholderAbsent, "", 0
	}
	own, err := fs.ReadDir(templateFS, path.Join(templateRoot, path.Dir(p.file)))
	if err != nil {
		return placeholderAbsent, "", 0
	}
	theirs, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(path.Dir(p.file))))
	if err != nil {
		return placeholderAbsent, "", 0
	}
	for _, e := range theirs {
		if !slices.ContainsFunc(own, func(o fs.DirEntry) bool { return o.Name() == e.Name() }) {
			return placeholderReplaced, "", 0
		}
	}
	return placeholderAbsent, "", 0
}

// statementLine is the line of the statement of task.toml (src) whose key
// is path, or 0.
func statementLine(src []byte, path []string) int {
	stmts, err := scanTOML(src)
	if err != nil {
		return 0
	}
	for _, st := range stmts {
		if slices.Equal(st.fullPath(), path) {
			return 1 + bytes.Count(src[:st.lineStart], []byte("\n"))
		}
	}
	return 0
}
