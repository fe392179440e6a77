package suite

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/flightdeck/flightdeck/internal/hostpath"
	"github.com/flightdeck/flightdeck/internal/text"
	"github.com/flightdeck/flightdeck/runner/imagecache"
	"github.com/flightdeck/flightdeck/runner/secrets"
	"go.yaml.in/yaml/v3"
)

// CommandLine is the file name of a suite made from the command line
// (--path): in messages, "<cwd>/(command line):".
const CommandLine = "(command line)"

// FromFile reports whether a suite file names a real file, where a
// suite's keys (images:, say) can be set; not one made from the command
// line.
func FromFile(file string) bool {
	base := filepath.Base(file)
	return file != "" && base != CommandLine && base != VerifyFile && base != ShellFile
}

// VerifyFile and ShellFile are the file names of the suites task verify
// and task shell make: in messages, "<cwd>/task verify:".
const (
	VerifyFile = "task verify"
	ShellFile  = "task shell"
)

// DefaultSuiteFile is the suite `flightdeck run` reads when given none.
const DefaultSuiteFile = "local.yaml"

// Agent kinds a variant can name.
const (
	AgentOracle        = "oracle"
	AgentNop           = "nop"
	AgentDeterministic = "deterministic"
	AgentCommand       = "command"
	// AgentShell is `task shell`'s person at a terminal; no suite names
	// it.
	AgentShell = "shell"
	// AgentAttack is task verify's adversary: an empty attempt that plays
	// the variant's Attack, one reward hack; no suite names it.
	AgentAttack = "attack"
)

// Expectations a variant can hold its trials to.
const (
	ExpectPassed = "passed"
	ExpectFailed = "failed"
)

// Suite is a suite file, parsed and checked, with paths still as written.
type Suite struct {
	Name              string
	File              string // absolute path of the suite file ("" when built in code)
	Dir               string // paths are relative to this directory
	Tasks             []string
	Include           []string
	Exclude           []string
	Variants          []Variant // in the file's order
	Attempts          int
	Concurrency       int // 0: the number of CPUs
	Retries           int
	TimeoutMultiplier Multipliers
	Images            map[string]string
	Specs             []string
	Results           string
	// Registry is a Harbor registry.json (relative to the suite's
	// directory) and Dataset the name@version in it whose tasks run beside
	// the tasks: entries; git tasks are fetched into the task cache.
	Registry string
	Dataset  string
	// RewardKey names the key of reward.json that decides each trial's
	// reward; "": the "reward" key, else the lowest of the keys.
	RewardKey string
	// ImageBudget bounds the cached task images' size (bytes; 0: no
	// bound): enforced at the end of each run, least recently used first.
	ImageBudget int64
	// Tamper is what a trial the tamper inspector flags becomes, for the
	// variants that do not say: "flag" (the default: recorded, reward
	// kept) or "fail".
	Tamper string
	// NoSubstitute (substitute: false) forbids any image standing in for
	// one a task names: no image map, and no offline base for a missing
	// official image.
	NoSubstitute bool

	taskLines map[int]int // index in Tasks → line in the file, for messages
	dsLine    int         // the dataset: key's line, for messages
}

// Variant is one way of attempting every task: an agent and its options.
type Variant struct {
	Name    string            `json:"name"`
	Agent   string            `json:"agent"`
	Command string            `json:"command,omitempty"` // agent "command"
	Script  string            `json:"script,omitempty"`  // agent "deterministic": absolute path
	Attack  string            `json:"attack,omitempty"`  // agent "attack": the reward hack it plays
	Env     map[string]string `json:"env,omitempty"`     // extra environment of the agent
	Expect  string            `json:"expect,omitempty"`  // "passed", "failed" or ""
	// Grading forces how every task is graded: "harbor" runs it in
	// Harbor's container model and grades with Harbor's verifier
	// (tests/test.sh in the agent's live container) even a task with
	// [flightdeck.grader]; "snapshot" does the same from a fresh container
	// made from a snapshot of the agent's stopped one; "" grades each task
	// its own way (Harbor's, live, for a task without [flightdeck.grader]).
	Grading string `json:"grading,omitempty"`
	// Tamper is what a trial the tamper inspector flags becomes: "flag"
	// or "" (recorded, reward kept) or "fail" (a failure whose outcome
	// class is workflow-violation); "off" runs no inspector (about a
	// second less per Harbor-model trial).
	Tamper string `json:"tamper,omitempty"`
	Line   int    `json:"-"` // where it is defined, 0 when not from a file
	// HarborOnly runs the variant on tasks graded Harbor's way only (task
	// verify's snapshot run of the oracle); suite files cannot set it.
	HarborOnly bool `json:"-"`
	// OracleOnly runs the variant on tasks that have an oracle only (task
	// verify's runs of the oracle: a task without solution/ has nothing to
	// run, and its oracle checks say so rather than fail); suite files
	// cannot set it.
	OracleOnly bool `json:"-"`
	// VerifierOffline grades a Harbor task with no network in the
	// verifier's phase, whatever the task says (task verify's check of a
	// verifier that needs the network); suite files cannot set it.
	VerifierOffline bool `json:"verifier_offline,omitempty"`
	// Trace grades under flightdeck's tracer, which records what the
	// verifier executes and opens (task verify's traced oracle, whose
	// record the attack that rewrites the verifier's files reads); suite
	// files cannot set it.
	Trace bool `json:"trace,omitempty"`
	// NoSettle starts a Harbor task's agent as soon as its container
	// runs, without waiting for an entrypoint of its own to settle (task
	// verify's check of an oracle that needs the wait); suite files cannot
	// set it.
	NoSettle bool `json:"no_settle,omitempty"`
	// HideAnswers runs the oracle with each file of the image that holds
	// the bytes of an output of the traced oracle's moved away, and put
	// back before the grade (task verify's check of a reference that
	// copies the answer); suite files cannot set it.
	HideAnswers bool `json:"hide_answers,omitempty"`
	// Patch makes the oracle apply solution/reference.patch whatever else
	// the task's solution has (task verify's check of the patch); suite
	// files cannot set it.
	Patch bool `json:"patch,omitempty"`
	// Memory records the agent container's peak memory (task verify's
	// oracle, for its headroom check: reading it costs the engine a stats
	// call); suite files cannot set it.
	Memory bool `json:"-"`
	// Regrade is the dir of a finished run whose trials of this variant
	// are graded anew (flightdeck regrade): nothing of the agent runs, the
	// trial of the same id there is the recorded work; suite files cannot
	// set it.
	Regrade string `json:"regrade,omitempty"`
	// Attempts, when set, replaces the suite's attempts for this variant
	// (task verify runs the oracle K times, nop once); suite files cannot
	// set it.
	Attempts int `json:"-"`
}

// Grading modes a variant can ask for (Variant.Grading).
const (
	// GradingHarbor grades every task with Harbor's verifier in the
	// agent's live container, even one with a [flightdeck.grader] command.
	GradingHarbor = "harbor"
	// GradingSnapshot grades with Harbor's verifier in a fresh container
	// from a snapshot of the agent's stopped container: no process the
	// agent left runs while test.sh does.
	GradingSnapshot = "snapshot"
)

// What a flagged trial becomes (Variant.Tamper); "off" runs no inspector.
const (
	TamperFlag = "flag"
	TamperFail = "fail"
	TamperOff  = "off"
)

// Multipliers scale each task's timeouts.
type Multipliers struct {
	Agent    float64 `json:"agent"`
	Verifier float64 `json:"verifier"`
	Build    float64 `json:"build"`
}

// builtinAgent reports whether name is an agent that needs no options, so
// that a variant of that name can be added from the command line.
func builtinAgent(name string) bool { return name == AgentOracle || name == AgentNop }

// BuiltinVariant is the variant a built-in agent's name adds where no suite
// defines it (--variant, --path, -t DIR): the oracle is expected to pass and
// the empty attempt to fail, so that a run without a suite file still fails
// when a task's oracle does.
func BuiltinVariant(agent string) Variant {
	v := Variant{Name: agent, Agent: agent}
	switch agent {
	case AgentOracle:
		v.Expect = ExpectPassed
	case AgentNop:
		v.Expect = ExpectFailed
	}
	return v
}

// LoadSuite reads and checks a suite file. Unknown keys, wrong types and bad
// values are errors naming the file and the line.
func LoadSuite(path string) (*Suite, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("suite %s: %w", path, err)
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return nil, fmt.Errorf("read suite: %w", err)
	}
	s, err := ParseSuite(data, abs)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// ParseSuite parses suite YAML; file names the suite in messages and anchors
// relative paths (its directory).
func ParseSuite(data []byte, file string) (*Suite, error) {
	p := suiteParser{file: file}
	s := &Suite{File: file, Dir: filepath.Dir(file), Attempts: 1, Retries: 1,
		TimeoutMultiplier: Multipliers{1, 1, 1}, Results: "results", taskLines: map[int]int{}}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: the suite is empty", file)
		}
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return nil, p.errf(root, "the suite must be a mapping of keys (name, tasks, variants, ...)")
	}
	if err := p.fields(root, "suite", func(key string, k, v *yaml.Node) error {
		return p.suiteKey(s, key, v)
	}); err != nil {
		return nil, err
	}
	if len(s.Variants) == 0 {
		return nil, p.errf(root, "the suite has no variants (add e.g. variants: {oracle: {agent: oracle}})")
	}
	if (s.Registry == "") != (s.Dataset == "") {
		return nil, p.errf(root, "registry: and dataset: go together (a Harbor registry.json and the name@version of a dataset in it)")
	}
	// The suite's tamper: is each variant's own unless it says: a
	// variant's definition (its cache key) holds what its trials become.
	for i := range s.Variants {
		if s.Variants[i].Tamper == "" && s.Tamper != TamperFlag {
			s.Variants[i].Tamper = s.Tamper
		}
	}
	return s, nil
}

type suiteParser struct{ file string }

func (p suiteParser) errf(n *yaml.Node, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", p.file, n.Line, fmt.Sprintf(format, args...))
}

// fields walks a mapping node, refusing duplicate keys and non-string keys.
func (p suiteParser) fields(m *yaml.Node, what string, f func(key string, k, v *yaml.Node) error) error {
	if m.Kind != yaml.MappingNode {
		return p.errf(m, "%s must be a mapping", what)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return p.errf(k, "%s: keys must be strings", what)
		}
		if seen[k.Value] {
			return p.errf(k, "%s: key %q appears twice", what, k.Value)
		}
		seen[k.Value] = true
		if err := f(k.Value, k, v); err != nil {
			return err
		}
	}
	return nil
}

var suiteKeys = []string{"name", "tasks", "include", "exclude", "variants", "attempts", "concurrency",
	"retries", "timeout_multiplier", "images", "specs", "results", "registry", "dataset", "reward_key", "tamper", "image_budget", "substitute"}

func (p suiteParser) suiteKey(s *Suite, key string, v *yaml.Node) error {
	switch key {
	case "name":
		return p.str(v, "name", &s.Name)
	case "tasks":
		if err := p.strs(v, "tasks", &s.Tasks); err != nil {
			return err
		}
		for i, n := range v.Content {
			s.taskLines[i] = n.Line
		}
		return nil
	case "include":
		return p.globs(v, "include", &s.Include)
	case "exclude":
		return p.globs(v, "exclude", &s.Exclude)
	case "variants":
		return p.variants(s, v)
	case "attempts":
		return p.count(v, "attempts", 1, &s.Attempts)
	case "concurrency":
		return p.count(v, "concurrency", 1, &s.Concurrency)
	case "retries":
		return p.count(v, "retries", 0, &s.Retries)
	case "timeout_multiplier":
		return p.multipliers(v, &s.TimeoutMultiplier)
	case "images":
		return p.images(v, &s.Images)
	case "specs":
		return p.strs(v, "specs", &s.Specs)
	case "results":
		return p.str(v, "results", &s.Results)
	case "registry":
		return p.str(v, "registry", &s.Registry)
	case "dataset":
		s.dsLine = v.Line
		return p.str(v, "dataset", &s.Dataset)
	case "tamper":
		if err := p.str(v, "tamper", &s.Tamper); err != nil {
			return err
		}
		if s.Tamper != TamperFlag && s.Tamper != TamperFail && s.Tamper != TamperOff {
			return p.errf(v, "tamper: want %q, %q or %q, not %q", TamperFlag, TamperFail, TamperOff, s.Tamper)
		}
		return nil
	case "substitute":
		if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" {
			return p.errf(v, "substitute must be true or false")
		}
		s.NoSubstitute = v.Value == "false"
		return nil
	case "image_budget":
		var size string
		if err := p.str(v, "image_budget", &size); err != nil {
			return err
		}
		n, err := imagecache.ParseSize(size)
		if err != nil || n == 0 {
			return p.errf(v, "image_budget: %q is not a size above 0 (for example 20GB, 500MiB)", size)
		}
		s.ImageBudget = n
		return nil
	case "reward_key":
		if err := p.str(v, "reward_key", &s.RewardKey); err != nil {
			return err
		}
		if !validRewardKey(s.RewardKey) {
			return p.errf(v, "reward_key: %q is not a key name: use letters, digits, '.', '_' and '-' (at most 64)", s.RewardKey)
		}
		return nil
	}
	return p.errf(v, "unknown key %q in the suite (known: %s)", key, strings.Join(suiteKeys, ", "))
}

func (p suiteParser) str(v *yaml.Node, field string, out *string) error {
	if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
		return p.errf(v, "%s must be a string", field)
	}
	*out = v.Value
	return nil
}

func (p suiteParser) strs(v *yaml.Node, field string, out *[]string) error {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		*out = nil
		return nil
	}
	if v.Kind != yaml.SequenceNode {
		return p.errf(v, "%s must be a list of strings", field)
	}
	*out = nil
	for i, n := range v.Content {
		if n.Kind != yaml.ScalarNode || n.Tag == "!!null" || n.Value == "" {
			return p.errf(n, "%s[%d] must be a non-empty string", field, i)
		}
		*out = append(*out, n.Value)
	}
	return nil
}

func (p suiteParser) globs(v *yaml.Node, field string, out *[]string) error {
	if err := p.strs(v, field, out); err != nil {
		return err
	}
	for i, g := range *out {
		if _, err := filepath.Match(g, ""); err != nil {
			return p.errf(v.Content[i], "%s[%d]: %q is not a valid glob", field, i, g)
		}
	}
	return nil
}

func (p suiteParser) count(v *yaml.Node, field string, min int, out *int) error {
	var n int
	if v.Kind != yaml.ScalarNode || v.Tag != "!!int" || v.Decode(&n) != nil {
		return p.errf(v, "%s must be a whole number", field)
	}
	if n < min {
		return p.errf(v, "%s must be at least %d, not %d", field, min, n)
	}
	if n > 10000 {
		return p.errf(v, "%s must be at most 10000, not %d", field, n)
	}
	*out = n
	return nil
}

func (p suiteParser) factor(v *yaml.Node, field string, out *float64) error {
	var f float64
	if v.Kind != yaml.ScalarNode || (v.Tag != "!!int" && v.Tag != "!!float") || v.Decode(&f) != nil {
		return p.errf(v, "%s must be a number", field)
	}
	if !(f > 0 && f <= 1000) {
		return p.errf(v, "%s must be above 0 and at most 1000, not %v", field, v.Value)
	}
	*out = f
	return nil
}

// multipliers accepts one number for all three or a mapping.
func (p suiteParser) multipliers(v *yaml.Node, m *Multipliers) error {
	if v.Kind == yaml.ScalarNode {
		var f float64
		if err := p.factor(v, "timeout_multiplier", &f); err != nil {
			return err
		}
		*m = Multipliers{f, f, f}
		return nil
	}
	return p.fields(v, "timeout_multiplier", func(key string, _, val *yaml.Node) error {
		switch key {
		case "agent":
			return p.factor(val, "timeout_multiplier.agent", &m.Agent)
		case "verifier":
			return p.factor(val, "timeout_multiplier.verifier", &m.Verifier)
		case "build":
			return p.factor(val, "timeout_multiplier.build", &m.Build)
		}
		return p.errf(val, "unknown key %q in timeout_multiplier (known: agent, verifier, build)", key)
	})
}

func (p suiteParser) images(v *yaml.Node, out *map[string]string) error {
	*out = map[string]string{}
	return p.fields(v, "images", func(key string, k, val *yaml.Node) error {
		var to string
		if err := p.str(val, "images."+key, &to); err != nil {
			return err
		}
		if key == "" || to == "" || strings.ContainsAny(key+to, " \t\n=,") {
			return p.errf(k, "images: %q → %q: image references must be non-empty, without spaces, '=' or ','", key, to)
		}
		(*out)[key] = to
		return nil
	})
}

var variantKeys = []string{"agent", "command", "script", "env", "expect", "grading", "tamper"}

func (p suiteParser) variants(s *Suite, v *yaml.Node) error {
	return p.fields(v, "variants", func(name string, k, val *yaml.Node) error {
		if !ValidName(name) {
			return p.errf(k, "variant name %q: use letters, digits, '.', '_' and '-' (at most 64)", name)
		}
		vr := Variant{Name: name, Line: k.Line}
		if val.Kind == yaml.ScalarNode && val.Tag == "!!null" {
			s.Variants = append(s.Variants, vr)
			return nil
		}
		err := p.fields(val, "variants."+name, func(key string, _, f *yaml.Node) error {
			field := "variants." + name + "." + key
			switch key {
			case "agent":
				return p.str(f, field, &vr.Agent)
			case "command":
				return p.str(f, field, &vr.Command)
			case "script":
				return p.str(f, field, &vr.Script)
			case "expect":
				return p.str(f, field, &vr.Expect)
			case "grading":
				return p.str(f, field, &vr.Grading)
			case "tamper":
				return p.str(f, field, &vr.Tamper)
			case "env":
				vr.Env = map[string]string{}
				return p.fields(f, field, func(ek string, _, ev *yaml.Node) error {
					if !secrets.ValidName(ek) {
						return p.errf(ev, "%s: %q is not a valid variable name", field, ek)
					}
					var s string
					if err := p.str(ev, field+"."+ek, &s); err != nil {
						return err
					}
					vr.Env[ek] = s
					return nil
				})
			}
			return p.errf(f, "unknown key %q in variant %s (known: %s)", key, name, strings.Join(variantKeys, ", "))
		})
		if err != nil {
			return err
		}
		if vr.Agent == AgentShell || vr.Agent == AgentAttack {
			// task shell's alone: a suite's trials run unattended.
			return p.errf(val, "variant %s: unknown agent %q (one of oracle, nop, deterministic, command)", vr.Name, vr.Agent)
		}
		if err := checkVariant(&vr, s.Dir, false); err != nil {
			return p.errf(val, "%v", err)
		}
		s.Variants = append(s.Variants, vr)
		return nil
	})
}

// checkVariant checks a variant's options against its agent. An empty
// variant (no agent) passes unless runnable is set: a suite may hold one for
// the user to fill, but it cannot run.
func checkVariant(v *Variant, dir string, runnable bool) error {
	switch v.Expect {
	case "", ExpectPassed, ExpectFailed:
	default:
		return fmt.Errorf("variant %s: expect must be %q or %q, not %q", v.Name, ExpectPassed, ExpectFailed, v.Expect)
	}
	switch v.Grading {
	case "", GradingHarbor, GradingSnapshot:
	default:
		return fmt.Errorf("variant %s: grading must be %q or %q (or left out: each task's own), not %q",
			v.Name, GradingHarbor, GradingSnapshot, v.Grading)
	}
	switch v.Tamper {
	case "", TamperFlag, TamperFail, TamperOff:
	default:
		return fmt.Errorf("variant %s: tamper must be %q, %q or %q, not %q", v.Name, TamperFlag, TamperFail, TamperOff, v.Tamper)
	}
	switch v.Agent {
	case "":
		if v.Command != "" || v.Script != "" || v.Expect != "" || len(v.Env) > 0 || v.Grading != "" || v.Tamper != "" {
			return fmt.Errorf("variant %s: agent is missing (one of oracle, nop, deterministic, command)", v.Name)
		}
		if runnable {
			return fmt.Errorf("variant %s is empty: give it an agent (oracle, nop, deterministic or command) before running it", v.Name)
		}
	case AgentOracle, AgentNop:
		if v.Command != "" || v.Script != "" {
			return fmt.Errorf("variant %s: agent %s takes neither command nor script", v.Name, v.Agent)
		}
	case AgentDeterministic:
		if v.Script == "" || v.Command != "" {
			return fmt.Errorf("variant %s: agent deterministic needs script: (a deterministic.json) and no command", v.Name)
		}
		if !filepath.IsAbs(v.Script) {
			v.Script = filepath.Join(dir, v.Script)
		}
	case AgentShell:
	case AgentAttack:
		if v.Attack == "" {
			return fmt.Errorf("variant %s: agent attack needs an attack", v.Name)
		}
	case AgentCommand:
		if strings.TrimSpace(v.Command) == "" || v.Script != "" {
			return fmt.Errorf("variant %s: agent command needs command: (a command line) and no script", v.Name)
		}
	default:
		return fmt.Errorf("variant %s: unknown agent %q (one of oracle, nop, deterministic, command)", v.Name, v.Agent)
	}
	return nil
}

// ValidName is what variant names (and trial directory parts) may be.
func ValidName(s string) bool {
	if s == "" || len(s) > 64 || s[0] == '.' || s[0] == '-' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return !strings.Contains(s, "__")
}

// validRewardKey is what a reward_key: may be: a key of reward.json as
// graders name them.
func validRewardKey(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// Variant returns the suite's variant of that name.
func (s *Suite) Variant(name string) (Variant, bool) {
	for _, v := range s.Variants {
		if v.Name == name {
			return v, true
		}
	}
	return Variant{}, false
}

// TaskLine is the line of the suite file that holds tasks[i] (0 when the
// suite is not from a file).
func (s *Suite) TaskLine(i int) int { return s.taskLines[i] }

// DatasetLine is the line of the suite file that holds dataset: (0 when
// it has none).
func (s *Suite) DatasetLine() int { return s.dsLine }

// unknownVariant is the usage error for a --variant name that is neither
// one of the suite's (has) nor a built-in agent: what can be named, and
// the nearest such name to a misspelt one.
func unknownVariant(name string, has []string) error {
	builtins := []string{AgentOracle, AgentNop}
	msg := fmt.Sprintf("--variant %s: not a built-in agent (%s)", name, strings.Join(builtins, ", "))
	if len(has) == 0 {
		msg += " and there is no suite file to define it in (docs/running.md, \"The suite file\")"
	} else {
		msg += fmt.Sprintf(", nor a variant of the suite (it has %s)", strings.Join(has, ", "))
	}
	if near := text.Nearest(name, slices.Concat(has, builtins)); near != "" {
		msg += "; did you mean " + near + "?"
	}
	return UsageErrorf("%s", msg)
}

// ChooseVariants is the variants names picks from the suite, in their
// order (all of the suite's when names is empty), each checked runnable; a
// name the suite lacks that is a built-in agent adds that agent's variant.
func (s *Suite) ChooseVariants(names []string) ([]Variant, error) {
	var out []Variant
	if len(names) == 0 {
		out = append(out, s.Variants...)
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		if v, ok := s.Variant(n); ok {
			out = append(out, v)
			continue
		}
		if builtinAgent(n) {
			out = append(out, BuiltinVariant(n))
			continue
		}
		return nil, unknownVariant(n, variantNames(s.Variants))
	}
	for i := range out {
		if err := checkVariant(&out[i], s.Dir, true); err != nil {
			if out[i].Line > 0 {
				return nil, UsageErrorf("%s:%d: %v", s.File, out[i].Line, err)
			}
			return nil, UsageErrorf("%v", err)
		}
	}
	return out, nil
}

func variantNames(vs []Variant) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Name)
	}
	return out
}

// DefaultResultsDir is where runs are when no results dir is named: the
// default suite's results dir when the working directory has one, else
// ./results.
func DefaultResultsDir(cwd string) string {
	if s, err := LoadSuite(filepath.Join(cwd, DefaultSuiteFile)); err == nil {
		return hostpath.Abs(s.Dir, s.Results)
	}
	return filepath.Join(cwd, "results")
}

// Selected reports whether the task id passes a run's task-id globs: one
// of include (when any), none of exclude, and one of filters (when any).
func Selected(id string, include, exclude, filters []string) bool {
	match := func(globs []string) bool {
		for _, g := range globs {
			if ok, _ := path.Match(g, id); ok {
				return true
			}
		}
		return false
	}
	if len(include) > 0 && !match(include) {
		return false
	}
	if match(exclude) {
		return false
	}
	return len(filters) == 0 || match(filters)
}
