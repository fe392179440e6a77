package tasks

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// LoadOptions says what a task is loaded for.
type LoadOptions struct {
	// Local: loading for a local run, so a task with sealed = true is
	// refused, and so is what the local runner cannot run (see Load).
	Local bool

	check bool // Check: report what the local runner cannot run as errors
}

// LoadError is a task Load refuses: the file, the field (may be empty when
// the whole file is meant) and the rule it breaks.
type LoadError struct {
	File  string
	Field string
	Rule  string
	// TaskID is the id the task would have had (see Task.ID): a run
	// records the refused task under it. The directory's name when
	// task.toml does not parse or names no valid [task].name.
	TaskID string
}

// Error prints "file: field: rule", leaving out an empty field.
func (e *LoadError) Error() string {
	if e.Field == "" {
		return e.File + ": " + e.Rule
	}
	return e.File + ": " + e.Field + ": " + e.Rule
}

// Load reads and validates the task directory dir. Every refusal is a
// *LoadError naming the file, the field and the rule: everything Check
// reports as an error but hangar's limits (an unknown key in flightdeck's
// tables, a script bash cannot parse, an empty instruction), sealed tasks
// when opts.Local, symlinks, a files_digest that does not match tests/ (or
// is missing while [flightdeck.grader] is present), memory and memory_mb
// that disagree, an invalid [task].name, a missing task.toml or
// instruction.md, and task.toml that does not parse or has a key of the
// wrong type. With opts.Local it also refuses what the local runner cannot
// run as Harbor would (checkSupport): gpus > 0, a tpu, Windows, an empty
// tests/, and a docker-compose.yaml it cannot run.
func Load(dir string, opts LoadOptions) (*Task, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("load task %s: %w", dir, err)
	}
	v := validate(dir, opts)
	for _, is := range v.issues {
		if is.severity == SeverityError {
			le := is.loadError(dir)
			le.TaskID = v.id
			return nil, le
		}
	}
	// What task check calls an author's slip and an error is refused here
	// too, so that no command runs a task task check fails: a misspelt key
	// of flightdeck's own tables (a misspelt [flightdeck.grader] command
	// would otherwise grade the task Harbor's way), a script bash cannot
	// parse, an empty instruction.
	for _, f := range authorSlips(dir) {
		if f.Severity == SeverityError {
			return nil, &LoadError{File: f.Path, Rule: f.Message, TaskID: v.id}
		}
	}
	return &Task{
		ID:          v.id,
		Dir:         abs,
		Config:      v.cfg,
		Doc:         v.doc,
		Digest:      v.taskDigest,
		FilesDigest: v.filesDigest,
	}, nil
}

// Finding severities.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
)

// issue is one problem found in a task directory; Load turns the first error
// into a LoadError, Check reports them all as Findings.
type issue struct {
	file     string // relative to the task directory, "/"-separated; "" for the directory
	field    string
	rule     string // a short identifier (Finding.Rule)
	message  string // what was found and what the rule is
	severity string
}

func (is issue) path(dir string) string {
	if is.file == "" {
		return filepath.Clean(dir)
	}
	return filepath.Join(dir, filepath.FromSlash(is.file))
}

func (is issue) loadError(dir string) *LoadError {
	return &LoadError{File: is.path(dir), Field: is.field, Rule: is.message}
}

// validation is what validate found out about a task directory.
type validation struct {
	issues []issue
	cfg    Config
	doc    map[string]any
	id     string
	parsed bool // task.toml parsed into doc and cfg
	// sidecars are the compose file's services besides main, once it
	// loaded; nil for a single-container task or a file that did not load.
	sidecars    []string
	taskDigest  string
	filesDigest string
}

func (v *validation) add(sev, file, field, rule, format string, args ...any) {
	v.issues = append(v.issues, issue{file: file, field: field, rule: rule, message: fmt.Sprintf(format, args...), severity: sev})
}

// multiStep reports whether task.toml has [[steps]]: its instructions,
// tests and solutions may then live only under steps/<name>/.
func (v *validation) multiStep() bool { return v.parsed && len(v.cfg.Steps) > 0 }

func (v *validation) errorf(file, field, rule, format string, args ...any) {
	v.add(SeverityError, file, field, rule, format, args...)
}

// taskNameRE is Harbor's org/name.
var taskNameRE = regexp.MustCompile(`^[^/\s]+/[^/\s]+$`)

// NameID is the task id a [task].name gives: its part after the /.
func NameID(name string) string { return name[strings.LastIndex(name, "/")+1:] }

// validate runs every check Load makes, collecting all the issues.
func validate(dir string, opts LoadOptions) *validation {
	v := &validation{}
	info, err := os.Stat(dir)
	if err != nil || !info.IsDir() {
		v.errorf("", "", "task-dir", "is not a task directory (%s)", describeStatErr(err))
		return v
	}
	v.id = filepath.Base(mustAbs(dir))
	v.parseConfig(dir)
	if v.parsed {
		v.checkConfig(opts)
	}
	v.checkSupport(dir, opts)
	if v.parsed {
		v.checkSteps(dir)
	}
	v.checkFiles(dir)
	if v.parsed {
		v.checkDigests(dir)
	}
	return v
}

func describeStatErr(err error) string {
	switch {
	case err == nil:
		return "not a directory"
	case errors.Is(err, fs.ErrNotExist):
		return "does not exist"
	}
	return err.Error()
}

func mustAbs(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	return abs
}

func (v *validation) parseConfig(dir string) {
	src, err := readRegular(filepath.Join(dir, TaskFile))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			v.errorf(TaskFile, "", "layout.task-toml", "missing: a task directory needs task.toml")
		} else {
			v.errorf(TaskFile, "", "layout.task-toml", "cannot read: %v", err)
		}
		return
	}
	doc, err := parseDoc(src)
	if err != nil {
		field, msg := describeDecodeError(err)
		v.errorf(TaskFile, field, "toml.syntax", "not valid TOML: %s", msg)
		return
	}
	var cfg Config
	if err := toml.Unmarshal(crlfToLF(src), &cfg); err != nil {
		field, msg := describeDecodeError(err)
		v.errorf(TaskFile, field, "toml.type", "wrong type: %s", msg)
		return
	}
	v.doc, v.cfg, v.parsed = doc, cfg, true
}

// typeErrRE picks the TOML and Go types out of go-toml's type mismatch message.
var typeErrRE = regexp.MustCompile(`cannot decode TOML (\w+) into .* of type (\S+)`)

// describeDecodeError turns a go-toml error into a field (the key's path,
// as "[table].key") and a message with the line and column.
func describeDecodeError(err error) (field, msg string) {
	var de *toml.DecodeError
	if !errors.As(err, &de) {
		return "", strings.TrimPrefix(err.Error(), "toml: ")
	}
	row, col := de.Position()
	msg = strings.TrimPrefix(de.Error(), "toml: ")
	if m := typeErrRE.FindStringSubmatch(msg); m != nil {
		msg = fmt.Sprintf("%s where %s is expected", tomlKind(m[1]), goKind(strings.TrimPrefix(m[2], "*")))
	}
	return formatKey(de.Key()), fmt.Sprintf("%s (line %d, column %d)", msg, row, col)
}

// tomlKind says what a TOML value is in a task author's words.
func tomlKind(t string) string {
	switch t {
	case "string":
		return "a string (in quotes)"
	case "integer", "float":
		return "a number"
	case "boolean", "bool":
		return "true or false"
	case "array":
		return "a list ([...])"
	case "table", "inline-table":
		return "a table"
	}
	return "a TOML " + t
}

// goKind says what a Go field holds in a task author's words.
func goKind(t string) string {
	switch {
	case strings.HasPrefix(t, "float"), strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "a number"
	case t == "string":
		return "a string (in quotes)"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "[]"):
		return "a list ([...])"
	case strings.HasPrefix(t, "map["), strings.Contains(t, "."):
		return "a table"
	}
	return t
}

// formatKey prints a key path as "[a.b].c", or "c" for a top-level key.
func formatKey(key []string) string {
	if len(key) == 0 {
		return ""
	}
	parts := make([]string, len(key))
	for i, k := range key {
		parts[i] = quoteKey(k)
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "[" + strings.Join(parts[:len(parts)-1], ".") + "]." + parts[len(parts)-1]
}

var bareKeyRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// quoteKey writes a TOML key part, quoting it unless it is a bare key.
func quoteKey(k string) string {
	if bareKeyRE.MatchString(k) {
		return k
	}
	return QuoteTOMLString(k)
}

// checkConfig applies the rules on task.toml's values.
func (v *validation) checkConfig(opts LoadOptions) {
	c := &v.cfg
	if c.Task != nil {
		if !taskNameRE.MatchString(c.Task.Name) {
			v.errorf(TaskFile, "[task].name", "task.name", "must be org/name (found %q)", c.Task.Name)
		} else {
			v.id = NameID(c.Task.Name)
		}
	}
	if _, err := parseArtifacts(c.RawArtifacts); err != nil {
		v.errorf(TaskFile, "artifacts", "artifacts", "%v", err)
	}
	if c.Flightdeck.Sealed {
		sev := SeverityWarning
		if opts.Local {
			sev = SeverityError
		}
		v.add(sev, TaskFile, "[flightdeck].sealed", "sealed",
			"sealed tasks never run locally and never live in this repository (sealed = true)")
	}
	env := c.Environment
	if env.Memory != "" {
		mb, err := parseSizeMB(env.Memory)
		switch {
		case err != nil:
			v.errorf(TaskFile, "[environment].memory", "memory", "%v", err)
		case env.MemoryMB != 0 && mb != env.MemoryMB:
			v.errorf(TaskFile, "[environment].memory", "memory",
				"memory = %q (%d MB) disagrees with memory_mb = %d; keep one of them", env.Memory, mb, env.MemoryMB)
		}
	}
	if env.MemoryMB < 0 {
		v.errorf(TaskFile, "[environment].memory_mb", "memory", "must not be negative (found %d)", env.MemoryMB)
	}
	if env.CPUs < 0 {
		v.errorf(TaskFile, "[environment].cpus", "cpus", "must not be negative (found %v)", env.CPUs)
	}
	v.checkAnswers()
}

// checkAnswers applies the question channel's rules: answers need a match
// and a reply, max_turns is not negative, and only a flightdeck-native
// task may have answers (the channel is a mount of flightdeck's in the
// agent's container, which a task graded Harbor's way never holds).
func (v *validation) checkAnswers() {
	fd := v.cfg.Flightdeck
	if fd.MaxTurns < 0 {
		v.errorf(TaskFile, "[flightdeck].max_turns", "max-turns", "must not be negative (found %d)", fd.MaxTurns)
	}
	if fd.Agent == nil {
		return
	}
	for i, a := range fd.Agent.Answers {
		if strings.TrimSpace(a.Match) == "" {
			v.errorf(TaskFile, fmt.Sprintf("[flightdeck.agent].answers[%d].match", i), "answers", "must not be empty: an empty match would answer every question")
		}
		if a.Reply == "" {
			v.errorf(TaskFile, fmt.Sprintf("[flightdeck.agent].answers[%d].reply", i), "answers", "must not be empty")
		}
	}
	if len(fd.Agent.Answers) > 0 && fd.Grader == nil {
		v.errorf(TaskFile, "[flightdeck.agent].answers", "answers",
			"only a flightdeck-native task (one with [flightdeck.grader]) can answer an agent's questions: the question channel is a "+
				"directory of flightdeck's mounted in the agent's container, and a task graded Harbor's way holds nothing of flightdeck's; "+
				"add a [flightdeck.grader] command or remove answers")
	}
}

// checkFiles applies the rules on the directory's files.
func (v *validation) checkFiles(dir string) {
	if fileExists(filepath.Join(dir, TestsDir, "test.bat")) && !fileExists(filepath.Join(dir, TestsDir, "test.sh")) {
		v.errorf("tests/test.bat", "", "windows", "Windows tasks (tests/test.bat without tests/test.sh) are not supported yet")
	}
	for _, l := range findSymlinks(dir) {
		v.errorf(l, "", "symlink", "is a symlink; task directories may not hold symlinks")
	}
	// A multi-step task's instructions are its steps' (checkSteps).
	if _, err := os.Lstat(filepath.Join(dir, InstructionFile)); errors.Is(err, fs.ErrNotExist) && !v.multiStep() {
		v.errorf(InstructionFile, "", "layout.instruction", "missing: a task directory needs instruction.md")
	}
	if b, err := readRegular(filepath.Join(dir, TrajectoryFile)); err == nil && !json.Valid(b) {
		var x any
		err := json.Unmarshal(b, &x)
		v.errorf(TrajectoryFile, "", "layout.trajectory", "is not JSON (%v): a task's seed trajectory, given to a command agent, is a JSON file (an ATIF trajectory, as Harbor writes one)", err)
	}
}

// checkDigests computes both digests and compares files_digest.
func (v *validation) checkDigests(dir string) {
	fd, err := FilesDigest(dir)
	if err != nil {
		v.digestError(TestsDir, "files_digest", err)
		return
	}
	v.filesDigest = fd
	recorded := recordedFilesDigest(v.doc)
	switch {
	case recorded != "" && recorded != fd:
		v.errorf(TaskFile, "[flightdeck.grader].files_digest", "files-digest",
			"does not match tests/: recorded %s, computed %s (if the change to tests/ is deliberate: flightdeck task digest --write %s)",
			recorded, fd, dir)
	case recorded == "" && v.cfg.Flightdeck.Grader != nil:
		v.errorf(TaskFile, "[flightdeck.grader].files_digest", "files-digest",
			"missing: a task with [flightdeck.grader] records the digest of tests/ (flightdeck task digest --write %s; computed %s)", dir, fd)
	}
	if v.has("layout.instruction") {
		return
	}
	td, err := taskDigest(dir, v.doc)
	if err != nil {
		v.digestError("", "task_digest", err)
		return
	}
	v.taskDigest = td
}

func (v *validation) digestError(file, what string, err error) {
	if v.has("symlink") {
		return // the cause is reported already
	}
	v.errorf(file, "", "digest", "cannot compute %s: %v", what, err)
}

func (v *validation) has(rule string) bool {
	for _, is := range v.issues {
		if is.rule == rule {
			return true
		}
	}
	return false
}

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// findSymlinks lists every symlink under dir, "/"-separated and relative.
func findSymlinks(dir string) []string {
	// Walk the directory itself even when dir is a symlink to it.
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil
	}
	var links []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable parts are reported by the checks that read them
		}
		if d.Type()&fs.ModeSymlink != 0 && p != root {
			rel, _ := filepath.Rel(root, p)
			links = append(links, filepath.ToSlash(rel))
		}
		return nil
	})
	return links
}

// The network modes Harbor knows; flightdeck runs the first two.
const (
	networkPublic    = "public"
	networkNone      = "no-network"
	networkAllowlist = "allowlist"
)

// composeFile is the file that makes a Harbor task multi-container: Harbor's
// Docker environment looks for this name only. A docker-compose.yml beside
// a Dockerfile is the application's own file, copied into the image like
// any other, and the task is a single-container task.
const (
	composeFile    = "docker-compose.yaml"
	composeFileYML = "docker-compose.yml"
)

// checkSupport reports what the local runner cannot run as Harbor would:
// errors for a local run or for Check, warnings otherwise (a task loaded to
// be exported may run elsewhere).
func (v *validation) checkSupport(dir string, opts LoadOptions) {
	sev := SeverityWarning
	if opts.Local || opts.check {
		sev = SeverityError
	}
	if opts.Local && !v.multiStep() && !hasRegularFile(filepath.Join(dir, TestsDir)) {
		v.errorf(TestsDir, "", "layout.tests",
			"empty: a trial is graded by the hidden tests in tests/, and there are none")
	}
	if p := filepath.Join(dir, EnvironmentDir, composeFile); fileExists(p) {
		v.checkCompose(dir, p, sev)
	} else if opts.check && fileExists(filepath.Join(dir, EnvironmentDir, composeFileYML)) &&
		fileExists(filepath.Join(dir, EnvironmentDir, "Dockerfile")) {
		v.add(SeverityWarning, EnvironmentDir+"/"+composeFileYML, "", "compose.yml",
			"a single-container task: Harbor makes a multi-container task only of environment/"+composeFile+
				" (.yaml); this file is the application's own, built into the image like any other")
	}
	if !v.parsed {
		return
	}
	c := &v.cfg
	env := c.Environment
	if env.GPUs > 0 {
		v.add(sev, TaskFile, "[environment].gpus", "gpus",
			"GPUs are not supported: flightdeck runs tasks on local engines without GPUs (found %d)", env.GPUs)
	}
	if env.GPUs < 0 {
		v.errorf(TaskFile, "[environment].gpus", "gpus", "must not be negative (found %d)", env.GPUs)
	}
	if tpuSet(env.TPU) {
		v.add(sev, TaskFile, "[environment].tpu", "tpu", "TPUs are not supported: flightdeck runs tasks on local engines without TPUs")
	}
	if strings.EqualFold(strings.TrimSpace(env.OS), "windows") {
		v.add(sev, TaskFile, "[environment].os", "windows",
			"Windows tasks are not supported yet: flightdeck runs Linux containers (found %q)", env.OS)
	}
	v.checkVerifierMode(dir, sev)
	v.checkCollect(dir)
	for _, is := range networkIssues(c) {
		v.add(sev, TaskFile, is.field, is.rule, "%s", is.message)
	}
	v.checkNativeHarborOnly(dir, sev)
}

// checkCompose loads a multi-container task's compose file as a run
// would, with the task's env values as written (a run resolves them), and
// reports what does not load and what flightdeck refuses in it.
func (v *validation) checkCompose(dir, path, sev string) {
	env := map[string]string{}
	if v.parsed {
		for k, val := range v.cfg.Environment.Env {
			env[k] = val
		}
	}
	c, issues, err := loadCompose(dir, path, env, nil)
	if err != nil {
		v.add(sev, EnvironmentDir+"/"+composeFile, "", "compose", "%v", err)
		return
	}
	v.sidecars = []string{}
	for _, svc := range c.Services {
		v.sidecars = append(v.sidecars, svc.Name)
	}
	for _, is := range issues {
		v.add(sev, is.file, is.field, is.rule, "%s", is.message)
	}
}

// checkVerifierMode checks the verifier's environment mode as Harbor
// resolves it: an explicit mode wins, a [verifier.environment] table alone
// makes it separate, and a separate verifier needs an image: its
// docker_image, else tests/Dockerfile (tests/ is its build context).
func (v *validation) checkVerifierMode(dir, sev string) {
	c := &v.cfg
	switch c.Verifier.EnvironmentMode {
	case "", "separate":
	case "shared":
		if c.Verifier.Environment != nil {
			v.errorf(TaskFile, "[verifier.environment]", "verifier.separate",
				"a verifier environment makes no sense with environment_mode = \"shared\" (the verifier runs in the agent's container): remove one")
		}
		return
	default:
		v.errorf(TaskFile, "[verifier].environment_mode", "verifier.separate", "want \"shared\" or \"separate\", found %q", c.Verifier.EnvironmentMode)
		return
	}
	v.checkVerifierCompose(dir, sev)
	if !separateVerifier(c) {
		return
	}
	if len(c.Steps) > 0 {
		// Each step resolves its own mode and build context (checkSteps).
		return
	}
	env := effectiveVerifierEnv(c)
	if env.DockerImage == "" && !fileExists(filepath.Join(dir, TestsDir, "Dockerfile")) {
		v.add(sev, TaskFile, "[verifier].environment_mode", "verifier.separate",
			"a separate verifier needs an image: tests/Dockerfile (built with tests/ as its context, owning /tests) or [verifier.environment].docker_image")
	}
	if env.GPUs > 0 {
		v.add(sev, TaskFile, "[verifier.environment].gpus", "gpus",
			"GPUs are not supported: flightdeck runs tasks on local engines without GPUs (found %d)", env.GPUs)
	}
}

// checkVerifierCompose refuses a separate verifier's own services: Harbor
// builds a separate verifier's environment from its tests/ dir, so a
// tests/docker-compose.yaml there starts sidecars beside the verifier.
// flightdeck runs the verifier alone, and would grade without them.
func (v *validation) checkVerifierCompose(dir, sev string) {
	c := &v.cfg
	var ctxs []string
	if len(c.Steps) == 0 {
		if separateVerifier(c) {
			ctxs = append(ctxs, TestsDir)
		}
	} else {
		for i := range c.Steps {
			if !stepSeparate(c, &c.Steps[i]) {
				continue
			}
			d := StepsDir + "/" + c.Steps[i].Name + "/" + TestsDir
			if !dirExists(filepath.Join(dir, filepath.FromSlash(d))) {
				d = TestsDir
			}
			if !slices.Contains(ctxs, d) {
				ctxs = append(ctxs, d)
			}
		}
	}
	for _, d := range ctxs {
		if fileExists(filepath.Join(dir, filepath.FromSlash(d), composeFile)) {
			v.add(sev, d+"/"+composeFile, "", "verifier.compose",
				"a separate verifier's own services are not supported yet: Harbor starts them beside the verifier (its environment is built from %s/), "+
					"flightdeck would grade without them; move the services to environment/%s, or grade in the agent's container", d, composeFile)
		}
	}
}

// checkNativeHarborOnly refuses, in a flightdeck-native task, a separate
// verifier: the native grader already runs apart from the agent, in a
// fresh container from the pristine image, and has no second image.
// Services (compose) and allowlists are the native model's too.
func (v *validation) checkNativeHarborOnly(dir, sev string) {
	c := &v.cfg
	if c.Flightdeck.Grader == nil || c.Flightdeck.Grader.Command == "" {
		return
	}
	if separateVerifier(c) {
		v.add(sev, TaskFile, "[verifier].environment_mode", "verifier.separate",
			"a separate verifier runs only in Harbor's container model: a flightdeck-native task (with [flightdeck.grader]) is graded in a fresh container from its own image already")
	}
}

// phaseNetwork is a phase's network mode, the key it comes from, and the
// phase's own allowed_hosts.
type phaseNetwork struct {
	table, key, mode string
	hosts            []string
}

// phaseNetworks decides each phase's network mode as Harbor does: the
// phase's own network_mode, else allowed_hosts there meaning an allowlist,
// else the task's baseline: [environment].network_mode, else
// allow_internet = false meaning no-network, else allowed_hosts meaning an
// allowlist, else public.
func phaseNetworks(c *Config) []phaseNetwork {
	env := c.Environment
	baseKey, baseMode := "[environment].network_mode", networkPublic
	switch {
	case env.NetworkMode != "":
		baseMode = env.NetworkMode
	case env.AllowInternet != nil && !*env.AllowInternet:
		baseKey, baseMode = "[environment].allow_internet", networkNone
	case len(env.AllowedHosts) > 0:
		baseKey, baseMode = "[environment].allowed_hosts", networkAllowlist
	}
	out := []phaseNetwork{
		{table: "[agent]", key: baseKey, mode: baseMode, hosts: c.Agent.AllowedHosts},
		{table: "[verifier]", key: baseKey, mode: baseMode, hosts: c.Verifier.AllowedHosts},
	}
	for i, own := range []string{c.Agent.NetworkMode, c.Verifier.NetworkMode} {
		switch {
		case own != "":
			out[i].key, out[i].mode = out[i].table+".network_mode", own
		case len(out[i].hosts) > 0:
			out[i].key, out[i].mode = out[i].table+".allowed_hosts", networkAllowlist
		}
	}
	return out
}

// checkCollect checks [[verifier.collect]]: a command, a positive timeout,
// and a service that exists (main, or one of the compose file's).
func (v *validation) checkCollect(dir string) {
	compose := fileExists(filepath.Join(dir, EnvironmentDir, composeFile))
	// service checks a service an artifact or a collect command names:
	// main, or a sidecar of the compose file.
	service := func(field, rule, name string) {
		switch {
		case name == "" || name == MainService:
		case !compose:
			v.errorf(TaskFile, field, rule, "%q: a single-container task has only the service %q (a sidecar needs environment/%s)", name, MainService, composeFile)
		case v.sidecars != nil && !slices.Contains(v.sidecars, name):
			v.errorf(TaskFile, field, rule, "%q: environment/%s has no such service (its services: %s)", name, composeFile, strings.Join(append([]string{MainService}, v.sidecars...), ", "))
		}
	}
	artifacts := func(field string, raw []any) {
		as, _ := parseArtifacts(raw)
		for i, a := range as {
			service(fmt.Sprintf("%s entry %d.service", field, i+1), "artifacts", a.Service)
		}
	}
	artifacts("artifacts", v.cfg.RawArtifacts)
	for i, s := range v.cfg.Steps {
		artifacts(fmt.Sprintf("[[steps]][%d].artifacts", i), s.RawArtifacts)
		for j, h := range s.Verifier.Collect {
			service(fmt.Sprintf("[[steps]][%d].verifier.collect #%d.service", i, j+1), "verifier.collect", h.Service)
		}
	}
	for i, h := range v.cfg.Verifier.Collect {
		field := fmt.Sprintf("[[verifier.collect]] #%d", i+1)
		if strings.TrimSpace(h.Command) == "" {
			v.errorf(TaskFile, field+".command", "verifier.collect", "missing: the command to run")
		}
		if h.TimeoutSec != nil && *h.TimeoutSec <= 0 {
			v.errorf(TaskFile, field+".timeout_sec", "verifier.collect", "must be positive (found %g)", *h.TimeoutSec)
		}
		service(field+".service", "verifier.collect", h.Service)
	}
}

// separateVerifier reports whether the verifier runs in its own container.
func separateVerifier(c *Config) bool {
	switch c.Verifier.EnvironmentMode {
	case "separate":
		return true
	case "":
		return c.Verifier.Environment != nil
	}
	return false
}

// effectiveVerifierEnv is the separate verifier's environment: its own
// table, else a copy of the task's [environment], as Harbor resolves it.
func effectiveVerifierEnv(c *Config) EnvConfig {
	if c.Verifier.Environment != nil {
		return *c.Verifier.Environment
	}
	return c.Environment
}

// SeparateVerifier reports whether the task's verifier runs in a container
// of its own, and returns that container's environment. A multi-step
// task's steps resolve their own (StepSeparateVerifier).
func (t *Task) SeparateVerifier() (EnvConfig, bool) {
	if !separateVerifier(&t.Config) {
		return EnvConfig{}, false
	}
	return effectiveVerifierEnv(&t.Config), true
}

// stepSeparate resolves a step's verifier mode as Harbor does: the step's
// own environment_mode, else a [steps.verifier.environment] table meaning
// separate, else the task's.
func stepSeparate(c *Config, s *StepConfig) bool {
	switch s.Verifier.EnvironmentMode {
	case "separate":
		return true
	case "shared":
		return false
	}
	if s.Verifier.Environment != nil {
		return true
	}
	return separateVerifier(c)
}

// stepVerifierEnv is a separate step verifier's environment: the step's
// table, else the task's [verifier.environment], else a copy of
// [environment] (one table, never merged).
func stepVerifierEnv(c *Config, s *StepConfig) EnvConfig {
	if s.Verifier.Environment != nil {
		return *s.Verifier.Environment
	}
	return effectiveVerifierEnv(c)
}

// StepSeparateVerifier reports whether the named step's verifier runs in a
// container of its own, and returns that container's environment.
func (t *Task) StepSeparateVerifier(name string) (EnvConfig, bool) {
	for i := range t.Config.Steps {
		s := &t.Config.Steps[i]
		if s.Name == name {
			if !stepSeparate(&t.Config, s) {
				return EnvConfig{}, false
			}
			return stepVerifierEnv(&t.Config, s), true
		}
	}
	return EnvConfig{}, false
}

// VerifierContext is the build context of the verifier's image for a
// separate verifier: a step's own steps/<name>/tests/ when it has one,
// else the task's tests/ (Harbor's _verifier_env_build_context).
func (t *Task) VerifierContext(step string) string {
	if step != "" {
		if d := filepath.Join(t.StepDir(step), TestsDir); dirExists(d) {
			return d
		}
	}
	return t.Path(TestsDir)
}

// tpuSet reports whether [environment].tpu asks for a TPU: any value but
// false, 0, "" or an empty table or list.
func tpuSet(x any) bool {
	switch t := x.(type) {
	case nil:
		return false
	case bool:
		return t
	case int64:
		return t != 0
	case float64:
		return t != 0
	case string:
		return t != ""
	case []any:
		return len(t) > 0
	case map[string]any:
		return len(t) > 0
	}
	return true
}

// networkIssues reports, once each, the keys that give a phase
// (phaseNetworks) a mode the local runner cannot run: an unknown mode, or
// an allowlist without hosts or with an entry that is no host.
func networkIssues(c *Config) []issue {
	env := c.Environment
	var out []issue
	seen := map[string]bool{}
	for _, p := range phaseNetworks(c) {
		key, mode := p.key, p.mode
		if seen[key] {
			continue
		}
		switch mode {
		case networkPublic, networkNone:
			continue
		case networkAllowlist:
			hosts, hostsKey := p.hosts, p.table+".allowed_hosts"
			if len(hosts) == 0 {
				hosts, hostsKey = env.AllowedHosts, "[environment].allowed_hosts"
			}
			if len(hosts) == 0 {
				out = append(out, issue{field: key, rule: "network.allowlist", message: "an allowlist needs allowed_hosts (in the phase's table or [environment]); " +
					`without any, use "no-network"`})
			}
			for _, h := range hosts {
				if err := checkAllowedHost(h); err != nil {
					out = append(out, issue{field: hostsKey, rule: "network.allowlist", message: err.Error()})
				}
			}
		default:
			out = append(out, issue{field: key, rule: "network.mode", message: fmt.Sprintf(
				`unknown network mode %q; want "public", "no-network" or "allowlist"`, mode)})
		}
		seen[key] = true
	}
	return out
}

// checkAllowedHost checks one allowed_hosts entry: a hostname, a
// *.wildcard, an IPv4 or IPv6 address, or a CIDR.
func checkAllowedHost(h string) error {
	if _, err := netip.ParsePrefix(h); err == nil {
		return nil
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return nil
	}
	name := strings.TrimPrefix(h, "*.")
	if name == "" || len(name) > 253 || strings.Contains(name, "*") {
		return fmt.Errorf("%q: want a hostname, *.domain, an IP address or a CIDR", h)
	}
	for _, label := range strings.Split(strings.TrimSuffix(name, "."), ".") {
		if !hostLabelRE.MatchString(label) {
			return fmt.Errorf("%q: want a hostname, *.domain, an IP address or a CIDR", h)
		}
	}
	return nil
}

var hostLabelRE = regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$`)

// hasRegularFile reports whether dir holds a regular file at any depth.
func hasRegularFile(dir string) bool {
	found := false
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			found = true
			return fs.SkipAll
		}
		return nil
	})
	return found
}
