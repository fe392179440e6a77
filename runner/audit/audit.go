// Package audit judges a task from what `flightdeck task verify` ran and
// read: the oracle's rewards over K runs, nop's, the oracle graded from a
// snapshot, the phases' times against the task's timeouts, files of tests/
// and solution/ where the agent works, and its Dockerfile. Each check gives
// a status with its evidence; a failed check fails the task.
package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/atomicfile"
	"github.com/flightdeck/flightdeck/internal/text"
	"github.com/flightdeck/flightdeck/runner/results"
)

// Status is how a check ended.
type Status string

// The statuses: a warning does not fail the task.
const (
	OK      Status = "ok"
	Warn    Status = "warn"
	Fail    Status = "FAIL"
	Skipped Status = "skipped"
)

// The checks, in the order they are reported.
const (
	CheckOracle   = "oracle"   // the oracle scores 1 on every run
	CheckNop      = "nop"      // nop scores below 1 (else the tests are weak)
	CheckBase     = "base"     // the oracle ran on the base images the task names, not a stand-in
	CheckFlaky    = "flaky"    // the oracle's runs agree
	CheckLive     = "live"     // the oracle passes graded from a snapshot too
	CheckStart    = "start"    // the oracle's reward holds without the wait for the entrypoint to settle
	CheckEnv      = "env"      // the oracle's reward holds under another TZ, locale and hash seed
	CheckNetwork  = "network"  // the oracle's reward holds with the verifier offline
	CheckPatch    = "patch"    // solution/reference.patch, applied as the oracle, scores 1
	CheckLeaks    = "leaks"    // no file of tests/ or solution/ where the agent works
	CheckAttacks  = "attacks"  // no reward hack played in place of the agent scores above nop
	CheckHeadroom = "headroom" // the oracle's phases within half their timeouts
	CheckRepro    = "repro"    // the Dockerfile pins what it installs
)

// CheckText says in a line what each check asks of a task (task verify's
// help lists them).
var CheckText = map[string]string{
	CheckOracle:   "the oracle (solution/) scores 1 on every run",
	CheckNop:      "an empty attempt scores below 1 (else the tests are weak)",
	CheckBase:     "the oracle ran on the base images the task names, not a stand-in",
	CheckFlaky:    "the oracle's runs agree",
	CheckLive:     "the oracle passes graded from a snapshot of its container too",
	CheckStart:    "the oracle's reward holds without the wait for the image's entrypoint to settle",
	CheckEnv:      "the oracle's reward holds under another time zone, locale and hash seed",
	CheckNetwork:  "the oracle's reward holds with the verifier offline",
	CheckPatch:    "solution/reference.patch, applied as the oracle, scores 1",
	CheckLeaks:    "no test, and no answer (byte for byte, or in another form the verdict is compared with), where the agent can read it",
	CheckAttacks:  "no reward hack played in place of the agent (a planted reward, conftest.py or Python start-up hook, a rewritten checker, a copied answer) scores above the empty attempt",
	CheckHeadroom: "the oracle's phases take less than half their timeouts",
	CheckRepro:    "the Dockerfile pins its base and what it installs",
}

// Checks are every check's name; each can be skipped.
var Checks = []string{CheckOracle, CheckNop, CheckBase, CheckFlaky, CheckLive, CheckStart, CheckEnv, CheckNetwork, CheckPatch, CheckLeaks, CheckAttacks, CheckHeadroom, CheckRepro}

// Check is one check's verdict.
type Check struct {
	Name     string `json:"name"`
	Status   Status `json:"status"`
	Evidence string `json:"evidence,omitempty"`
	// Hacks are the attacks check's verdict per hack.
	Hacks []Hack `json:"hacks,omitempty"`
}

// Task is one task's audit.
type Task struct {
	Task   string  `json:"task"`
	Dir    string  `json:"dir"`
	Checks []Check `json:"checks"`
	// Infra are the task's trials the machine failed ("trial: error"):
	// the checks that read them prove nothing, and the task is not judged.
	Infra []string `json:"infra_errors,omitempty"`
	// ImageFailed: the task's image did not build, so nothing that runs
	// in it was verified (the task's own defect).
	ImageFailed bool `json:"image_failed,omitempty"`
	// VerifierFailed: every run of the oracle ended task_error (the
	// verifier's own defect: no reward, or one that does not parse).
	VerifierFailed bool `json:"verifier_failed,omitempty"`
}

// Incomplete reports whether a trial of the task ended infra_error.
func (t Task) Incomplete() bool { return len(t.Infra) > 0 }

// Failed reports whether a check failed.
func (t Task) Failed() bool {
	return slices.ContainsFunc(t.Checks, func(c Check) bool { return c.Status == Fail })
}

// Report is a verify run's audit.
type Report struct {
	RunID   string   `json:"run_id"`
	Repeat  int      `json:"repeat"`
	Skipped []string `json:"skipped,omitempty"`
	Tasks   []Task   `json:"tasks"`
	// NotRun are trials with no result (the run was interrupted).
	NotRun []string `json:"not_run,omitempty"`
}

// OK reports whether every task passed every check it ran.
func (r *Report) OK() bool {
	return len(r.NotRun) == 0 && !r.Incomplete() && !slices.ContainsFunc(r.Tasks, Task.Failed)
}

// Incomplete reports whether the machine failed a trial of some task.
func (r *Report) Incomplete() bool {
	return slices.ContainsFunc(r.Tasks, Task.Incomplete)
}

// OnlyDefects reports whether every task that failed failed for a
// defect of its own (its image did not build, its verifier fails on the
// oracle) and one did: the task's own defect, as run says (exit 4).
func (r *Report) OnlyDefects() bool {
	defect := false
	for _, t := range r.Tasks {
		d := t.ImageFailed || t.VerifierFailed
		switch {
		case t.Failed() && !d:
			return false
		case d:
			defect = true
		}
	}
	return defect
}

// Input is what one task's audit reads.
type Input struct {
	Task, Dir string
	// RunDir is the verify run's dir, which holds each trial's dir.
	RunDir   string
	Oracle   []*results.Result // the oracle's runs, in order
	Nop      *results.Result
	Snapshot *results.Result // the oracle graded from a snapshot; nil for a native task
	// Unsettled is a Harbor task's oracle started as soon as its container
	// ran, without the wait for an entrypoint of its own to settle; nil
	// when the task has none or a healthcheck.
	Unsettled *results.Result
	// EnvRun is the oracle run under another time zone, locale and hash
	// seed (EnvVars).
	EnvRun  *results.Result
	EnvVars map[string]string
	// Offline is a Harbor task's oracle graded with no network in the
	// verifier's phase.
	Offline *results.Result
	// HasPatch: the task has solution/reference.patch; Patch is the
	// oracle that applied it, when the task has another solution too.
	HasPatch bool
	Patch    *results.Result
	// Leaks are where files of tests/ or solution/ were found (the
	// environment, the Dockerfile, the image); LeakErr why they could not
	// all be looked for.
	Leaks   []string
	LeakErr error
	// LeakInputs are files of tests/ found where the agent can read them
	// that the oracle's grading shows to be inputs: not leaks.
	LeakInputs []string
	// Repro are the Dockerfile's reproducibility warnings; ReproErr why it
	// could not be read.
	Repro    []string
	ReproErr error
	Skip     map[string]bool
	// Attacks are the reward hacks played in place of the agent.
	Attacks []AttackRun
	// Hidden is the oracle run with the image's copies of its outputs
	// moved away (nil when it did not run), and HiddenFiles the files it
	// moved.
	Hidden      *results.Result
	HiddenFiles []string
	// HiddenAltered are the files that run had its grade empty, when it
	// hid nothing: files the traced verifier read as data that the agent
	// can read and the oracle does not (agent.alterData).
	HiddenAltered []string
	// HiddenWritable are those of the probed files the agent's user could
	// overwrite, and HiddenShared says the run was graded in the agent's
	// container (live or from a snapshot of it), where an overwrite
	// reaches the verifier.
	HiddenWritable []string
	HiddenShared   bool
	// VerifierCode are the files of code outside the system's and the
	// tests the traced verifier ran (vtrace.Targets): code that may read
	// a file as its own input.
	VerifierCode []string
	// NoOracle: the task has no solution/ to run as the oracle; the
	// checks that read the oracle's runs are not run.
	NoOracle bool
}

// NoOracleText is the oracle check's evidence for a task without
// solution/.
const NoOracleText = "no oracle: the task has no solution/ (solve.sh, deterministic.json or reference.patch)"

// oracleChecks are the checks that read the oracle's runs.
var oracleChecks = map[string]bool{CheckOracle: true, CheckFlaky: true, CheckLive: true, CheckStart: true,
	CheckEnv: true, CheckNetwork: true, CheckHeadroom: true}

// needsImage are the checks that read what ran in the task's image: when it
// did not build, they are skipped and say so.
var needsImage = map[string]bool{CheckNop: true, CheckBase: true, CheckFlaky: true, CheckLive: true, CheckStart: true, CheckEnv: true,
	CheckNetwork: true, CheckPatch: true, CheckHeadroom: true, CheckAttacks: true}

// Audit runs every check not skipped over one task's input.
func Audit(in Input) Task {
	out := Task{Task: in.Task, Dir: in.Dir}
	ran := in.Oracle
	if in.NoOracle && in.Nop != nil {
		// Without an oracle, the empty attempt is what ran in the image.
		ran = []*results.Result{in.Nop}
	}
	noImage := imageFailed(ran)
	out.ImageFailed = noImage
	out.VerifierFailed = !noImage && len(in.Oracle) > 0 && !slices.ContainsFunc(in.Oracle, func(r *results.Result) bool {
		return r == nil || r.Outcome != grader.OutcomeTaskError
	})
	noTrial := len(in.Oracle) == 0 && in.Nop == nil
	for _, name := range Checks {
		c := Check{Name: name, Status: Skipped}
		switch {
		case in.Skip[name]:
		case in.NoOracle && name == CheckOracle:
			// Nothing shows the task can be solved: said, not failed
			// (Harbor's solution/ is optional).
			c.Status, c.Evidence = Warn, NoOracleText+": nothing shows the task can be solved; add one"
		case in.NoOracle && oracleChecks[name]:
			c.Evidence = "no oracle to run"
		case noImage && needsImage[name]:
			c.Evidence = "the image did not build"
		case (noImage || noTrial) && name == CheckLeaks && in.LeakErr != nil:
			// What the build context and the Dockerfile hold was read;
			// the image was not there to search.
			why := "the image did not build"
			if !noImage {
				why = "no trial ran, so the image was not searched"
			}
			c.Status, c.Evidence = listCheck(in.Leaks, nil, Fail, "no file of tests/ or solution/ in the environment or the Dockerfile")
			if c.Status == OK {
				c.Status, c.Evidence = Skipped, why+" (the environment and the Dockerfile hold no file of tests/ or solution/)"
			}
		case name == CheckAttacks && !in.NoOracle && !oracleBeatsNop(in.Oracle, in.Nop):
			// Every hack "holds" against a verifier nothing passes.
			c.Evidence = "not judged: the oracle scores no more than nop, so a hack that holds proves nothing; fix the oracle (see oracle) and run task verify again"
		case name == CheckAttacks:
			c.Status, c.Evidence, c.Hacks = attacksCheck(in.Attacks, in.Nop)
		default:
			c.Status, c.Evidence = check(name, in)
		}
		out.Checks = append(out.Checks, c)
	}
	return out
}

func check(name string, in Input) (Status, string) {
	switch name {
	case CheckOracle:
		return oracleCheck(in.Oracle, in.RunDir)
	case CheckNop:
		return nopCheck(in.Nop)
	case CheckBase:
		ran := in.Oracle
		if in.Nop != nil {
			ran = append(slices.Clone(ran), in.Nop)
		}
		return baseCheck(ran)
	case CheckFlaky:
		return flakyCheck(in.Oracle)
	case CheckLive:
		return liveCheck(in.Oracle, in.Snapshot)
	case CheckStart:
		return startCheck(in.Oracle, in.Unsettled)
	case CheckEnv:
		return envCheck(in.Oracle, in.EnvRun, in.EnvVars)
	case CheckNetwork:
		return networkCheck(in.Oracle, in.Offline)
	case CheckPatch:
		return patchCheck(in.HasPatch, in.Patch)
	case CheckLeaks:
		leaks, copied := copiedAnswers(in.Leaks, in)
		inputs := append(slices.Clone(in.LeakInputs), copied...)
		altSt, altered := alteredAnswer(in)
		if altered != "" && in.LeakErr == nil {
			leaks = append(leaks, altered)
		}
		st, ev := listCheck(leaks, in.LeakErr, Fail, "no file of tests/ or solution/ in the environment, the Dockerfile or the image")
		if altered != "" && len(leaks) == 1 {
			// The probe's finding alone: its own severity.
			st = altSt
		}
		if len(inputs) > 0 && in.LeakErr == nil {
			ev += "; not leaks, inputs the agent is given too: " + strings.Join(inputs, "; ")
			if st == OK {
				ev = "no answer or test where the agent can read it; inputs the agent is given too: " + strings.Join(inputs, "; ")
			}
		}
		return st, ev
	case CheckHeadroom:
		return headroomCheck(in.Oracle)
	case CheckRepro:
		return listCheck(in.Repro, in.ReproErr, Warn, "the Dockerfile pins its base and what it installs")
	}
	return Skipped, ""
}

func oracleCheck(runs []*results.Result, runDir string) (Status, string) {
	if len(runs) == 0 {
		return Fail, "the oracle did not run"
	}
	passed := 0
	for _, r := range runs {
		if r.Outcome == grader.OutcomePassed && r.Reward != nil && *r.Reward >= 1 {
			passed++
		}
	}
	ev := fmt.Sprintf("passed %d of %d runs: %s", passed, len(runs), rewardsText(runs))
	if !slices.ContainsFunc(runs, func(r *results.Result) bool { return r.Reward != nil }) {
		ev = fmt.Sprintf("passed 0 of %d runs", len(runs))
	}
	if passed < len(runs) {
		if e := firstError(runs); e != "" {
			ev += "; " + e
		}
		return Fail, ev
	}
	if w := oracleExits(runs, runDir); w != "" {
		return Warn, ev + "; " + w
	}
	return OK, ev
}

// oracleExits says when the oracle exited non-zero in runs it passed: the
// reward holds (Harbor ignores solve.sh's exit code too), but a reference
// that fails half way may pass by luck, or hide the step that failed.
func oracleExits(runs []*results.Result, runDir string) string {
	n, code, log := 0, 0, ""
	for _, r := range runs {
		if ec := r.AgentPhase.ExitCode; ec != nil && *ec != 0 {
			if n == 0 {
				code, log = *ec, filepath.Join(runDir, r.Trial, results.AgentLog)
			}
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("but the oracle (solution/) exited %d in %d of %d runs: its reward holds (Harbor ignores the exit code), "+
		"yet a step of it failed; make it exit 0 (%s)", code, n, len(runs), log)
}

func nopCheck(r *results.Result) (Status, string) {
	switch {
	case r == nil:
		return Fail, "nop did not run"
	case r.Outcome.Ungraded():
		return Fail, "nop was not graded: " + text.OneLine(r.Error, 300)
	case r.Reward == nil:
		// Below 1 only because nothing was read: the grader is broken.
		return Fail, "the empty attempt got no reward: " + text.OneLine(r.Error, 300)
	case *r.Reward >= 1:
		return Fail, fmt.Sprintf("weak tests: the empty attempt scores %g", *r.Reward)
	}
	return OK, "the empty attempt scores " + rewardsText([]*results.Result{r})
}

// flakyCheck fails when the oracle's graded runs do not agree: their
// rewards, and the grader's counts where its RESULT line gave them.
func flakyCheck(runs []*results.Result) (Status, string) {
	var graded []*results.Result
	for _, r := range runs {
		if !r.Outcome.Ungraded() {
			graded = append(graded, r)
		}
	}
	switch {
	case len(runs) < 2:
		return Skipped, "one run: --repeat 2 or more tells"
	case len(graded) < 2:
		return Skipped, fmt.Sprintf("%d of the oracle's %d runs graded: two graded runs tell", len(graded), len(runs))
	}
	same := true
	for _, r := range graded[1:] {
		same = same && rewardText(r) == rewardText(graded[0]) && r.Outcome == graded[0].Outcome
	}
	if same {
		return OK, fmt.Sprintf("%d runs agree: %s", len(graded), rewardText(graded[0]))
	}
	var parts []string
	for _, r := range graded {
		s := rewardText(r)
		if r.Summary != nil && r.Summary.Total > 0 {
			s += fmt.Sprintf(" (%d/%d)", r.Summary.Passed, r.Summary.Total)
		}
		parts = append(parts, s)
	}
	return Fail, "flaky: the oracle's runs differ: " + strings.Join(parts, ", ")
}

func liveCheck(runs []*results.Result, snap *results.Result) (Status, string) {
	if snap == nil {
		return Skipped, "graded in a fresh container already (native)"
	}
	if len(runs) == 0 || runs[0].Outcome != grader.OutcomePassed {
		return Skipped, "the oracle does not pass live"
	}
	if snap.Outcome == grader.OutcomePassed {
		return OK, "the oracle passes graded from a snapshot too"
	}
	ev := "needs live grading: the oracle passes live, and from a snapshot " + rewardsText([]*results.Result{snap})
	if p := runs[0].GradePhase.AgentProcesses; len(p) > 0 {
		ev += "; processes it left running for the verifier: " + text.OneLine(strings.Join(p, "; "), 200)
	}
	return Warn, ev
}

// startCheck warns when a Harbor task's oracle scores otherwise started
// at once than after its image's entrypoint settled: it races the
// entrypoint's background start, which only a healthcheck makes sure of.
func startCheck(runs []*results.Result, unsettled *results.Result) (Status, string) {
	switch {
	case unsettled == nil:
		return Skipped, "no entrypoint of the image's own to wait for (or the task has a healthcheck)"
	case len(runs) == 0 || unsettled.Outcome.Ungraded() || runs[0].Outcome.Ungraded():
		return Skipped, "a run was not graded"
	case rewardText(unsettled) == rewardText(runs[0]):
		return OK, "the same reward when the agent starts at once, without waiting for the entrypoint"
	}
	waited := ""
	if w := runs[0].StartWait; w != nil && w.WaitedMS > 0 {
		waited = fmt.Sprintf(" (flightdeck waited %d ms for it to settle)", w.WaitedMS)
	}
	return Warn, fmt.Sprintf("the oracle depends on the entrypoint's background start: started at once it scores %s, after the entrypoint settled %s%s; "+
		"add [environment.healthcheck] with a command that succeeds once the service is ready", rewardText(unsettled), rewardText(runs[0]), waited)
}

// envCheck fails when the oracle's reward under another environment
// differs from its first run's.
func envCheck(runs []*results.Result, env *results.Result, vars map[string]string) (Status, string) {
	if env == nil || len(runs) == 0 {
		return Skipped, "the oracle did not run under another environment"
	}
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		kv = append(kv, k+"="+vars[k])
	}
	under := strings.Join(kv, " ")
	if env.Outcome.Ungraded() || runs[0].Outcome.Ungraded() {
		return Skipped, "a run was not graded"
	}
	if rewardText(env) == rewardText(runs[0]) {
		return OK, "the same reward under " + under
	}
	return Fail, fmt.Sprintf("environment sensitivity: under %s the oracle scores %s, otherwise %s", under, rewardText(env), rewardText(runs[0]))
}

// networkCheck warns when a Harbor task's oracle scores otherwise with the
// verifier offline: its verifier needs the network (Harbor's may have it;
// a task graded offline would fail).
func networkCheck(runs []*results.Result, offline *results.Result) (Status, string) {
	switch {
	case offline == nil:
		return Skipped, "graded without a network already (native)"
	case len(runs) == 0 || offline.Outcome.Ungraded() || runs[0].Outcome.Ungraded():
		return Skipped, "a run was not graded"
	case rewardText(offline) == rewardText(runs[0]):
		return OK, "the same reward with the verifier offline"
	}
	return Warn, fmt.Sprintf("needs network to grade: with the verifier offline the oracle scores %s, otherwise %s", rewardText(offline), rewardText(runs[0]))
}

// patchCheck fails when the reference patch, applied to the work dir as
// the oracle, scores below 1 (the unpatched base is nop's check).
func patchCheck(has bool, r *results.Result) (Status, string) {
	switch {
	case !has:
		return Skipped, "no solution/reference.patch"
	case r == nil:
		return OK, "the oracle is the reference patch (see oracle)"
	case r.Outcome == grader.OutcomePassed && r.Reward != nil && *r.Reward >= 1:
		return OK, "the reference patch scores " + rewardText(r)
	}
	ev := "the reference patch scores " + rewardText(r)
	if r.Error != "" {
		ev += ": " + text.OneLine(r.Error, 160)
	} else if r.AgentPhase.Failed != "" {
		ev += ": " + text.OneLine(r.AgentPhase.Failed, 160)
	}
	return Fail, ev
}

// headroomCheck warns when the oracle's agent phase or grade used more
// than half its timeout, or its container more than half its memory limit
// (the slowest and largest run count).
func headroomCheck(runs []*results.Result) (Status, string) {
	if len(runs) == 0 {
		return Skipped, "the oracle did not run"
	}
	if !slices.ContainsFunc(runs, func(r *results.Result) bool { return !r.Outcome.Ungraded() }) {
		return Skipped, "the oracle was not graded: " + firstError(runs)
	}
	var agentMax, gradeMax, agentTO, gradeTO float64
	var peak, limit int64
	for _, r := range runs {
		agentTO, gradeTO = r.AgentPhase.Timeout, r.GradePhase.Timeout
		peak, limit = max(peak, r.AgentPhase.PeakMemory), r.AgentPhase.MemoryLimit
		for _, p := range r.Phases {
			switch p.Name {
			case "agent":
				agentMax = max(agentMax, p.Seconds)
			case "grade":
				gradeMax = max(gradeMax, p.Seconds)
			}
		}
	}
	var warn []string
	ev := []string{tookText("agent", agentMax, agentTO), tookText("verifier", gradeMax, gradeTO)}
	if w := overHalf("the oracle's agent phase", agentMax, agentTO); w != "" {
		warn = append(warn, w)
	}
	if w := overHalf("the verifier", gradeMax, gradeTO); w != "" {
		warn = append(warn, w)
	}
	switch {
	case peak == 0:
		ev = append(ev, "memory not reported by the engine")
	case limit > 0:
		ev = append(ev, fmt.Sprintf("memory %d MiB of %d MiB", peak>>20, limit>>20))
		if peak > limit/2 {
			warn = append(warn, "the oracle used more than half its memory")
		}
	default:
		ev = append(ev, fmt.Sprintf("memory %d MiB, no limit", peak>>20))
	}
	s := strings.Join(ev, ", ")
	if len(warn) > 0 {
		return Warn, strings.Join(warn, "; ") + ": " + s
	}
	return OK, s
}

// tookText is how long a phase took against its timeout; one that ran
// into it says so (its time counts from its container's start, so it can
// read a little past the timeout).
func tookText(who string, took, timeout float64) string {
	if timeout > 0 && took >= timeout {
		return fmt.Sprintf("%s stopped by its %s timeout (%.1fs from its container's start)", who, limitText(timeout), took)
	}
	return fmt.Sprintf("%s %.1fs of %s", who, took, limitText(timeout))
}

// overHalf says that who took more than half its timeout, or all of it
// (the phase's time counts from its container's start, so a phase the
// timeout ended can read a little past it); "" when it took less.
func overHalf(who string, took, timeout float64) string {
	switch {
	case timeout <= 0 || took <= timeout/2:
		return ""
	case took >= timeout:
		return who + " ran into its timeout"
	}
	return who + " used more than half its timeout"
}

// baseCheck warns when the oracle ran on an image standing in for one the
// task names (the image map, or the offline base for a missing official
// image): its verdict holds for the stand-in.
func baseCheck(runs []*results.Result) (Status, string) {
	if len(runs) == 0 {
		return Skipped, "no trial ran"
	}
	var pairs []string
	for _, r := range runs {
		for _, p := range r.MappedImages {
			if !slices.Contains(pairs, p) {
				pairs = append(pairs, p)
			}
		}
	}
	if len(pairs) == 0 {
		return OK, "built from the base images it names"
	}
	var parts []string
	for _, p := range pairs {
		from, to, _ := strings.Cut(p, "=")
		parts = append(parts, fmt.Sprintf("the verdict holds for %s, not for %s", to, from))
	}
	return Warn, "ran on a substitute base: " + strings.Join(parts, "; ")
}

// imageFailed reports whether the task's image did not build: no run got
// one.
func imageFailed(runs []*results.Result) bool {
	if len(runs) == 0 {
		return false
	}
	for _, r := range runs {
		if r.Image != "" || !r.Outcome.Ungraded() {
			return false
		}
		failed := false
		for _, p := range r.Phases {
			failed = failed || p.Name == "image" && p.Error != ""
		}
		if !failed {
			return false
		}
	}
	return true
}

func limitText(sec float64) string {
	if sec <= 0 {
		return "no limit"
	}
	return fmt.Sprintf("%gs", sec)
}

func listCheck(items []string, err error, bad Status, clean string) (Status, string) {
	if err != nil {
		return Fail, "not checked: " + err.Error()
	}
	if len(items) == 0 {
		return OK, clean
	}
	return bad, strings.Join(items, "; ")
}

func rewardText(r *results.Result) string {
	if r.Reward == nil {
		return "no reward"
	}
	return fmt.Sprintf("%g", *r.Reward)
}

func rewardsText(runs []*results.Result) string {
	var parts []string
	for _, r := range runs {
		parts = append(parts, rewardText(r))
	}
	return "reward " + strings.Join(parts, ", ")
}

func firstError(runs []*results.Result) string {
	for _, r := range runs {
		if r.Error != "" {
			return text.OneLine(r.Error, 500)
		}
	}
	// Graded below 1: why, as the grader said it.
	for _, r := range runs {
		if r.Cause != "" {
			return text.OneLine(r.Cause, 500)
		}
	}
	return ""
}

// Write prints the audit: per task a verdict line and one line per check,
// then, for several tasks, a table of task × check.
func Write(w io.Writer, r *Report) {
	for _, t := range r.Tasks {
		verdict := "ok"
		switch {
		case t.Incomplete():
			verdict = "INFRA"
		case t.Failed():
			verdict = "FAIL"
		}
		fmt.Fprintf(w, "%-4s %s (%s)\n", verdict, t.Task, t.Dir)
		if t.Incomplete() {
			fmt.Fprintf(w, "     not judged: %d trial(s) ended infra_error, so the checks below prove nothing (first: %s); "+
				"fix what the error names and run task verify again\n", len(t.Infra), t.Infra[0])
		}
		if t.VerifierFailed {
			fmt.Fprintln(w, "     not verified: the task's verifier fails on its own oracle (task_error: the oracle line says why); "+
				"fix tests/ and run task verify again")
		}
		if t.ImageFailed {
			fmt.Fprintln(w, "     not verified: the task's image did not build (the oracle line says why and where the build log is); "+
				"fix environment/Dockerfile and run task verify again")
		}
		for _, c := range t.Checks {
			if c.Status == Skipped && r.skipped(c.Name) {
				continue
			}
			fmt.Fprintf(w, "     %-8s %-7s %s\n", c.Name, c.Status, c.Evidence)
			for _, h := range c.Hacks {
				fmt.Fprintf(w, "       %-7s %-8s %s\n", h.Status, h.Name, h.Text)
			}
		}
	}
	for _, id := range r.NotRun {
		fmt.Fprintf(w, "FAIL %s: no result (interrupted)\n", id)
	}
	if len(r.Tasks) > 1 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "task\t%s\n", strings.Join(Checks, "\t"))
		for _, t := range r.Tasks {
			row := []string{t.Task}
			for _, c := range t.Checks {
				row = append(row, string(c.Status))
			}
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		tw.Flush()
	}
	if len(r.Skipped) > 0 {
		fmt.Fprintf(w, "skipped: %s (--skip)\n", strings.Join(r.Skipped, ", "))
	}
}

func (r *Report) skipped(name string) bool { return slices.Contains(r.Skipped, name) }

// WriteJSON prints the audit as JSON.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// File is where a verify run's audit is saved, in the run's directory:
// report.html and `flightdeck report` read it.
const File = "audit.json"

// Save writes the audit as JSON to dir/File, atomically.
func Save(dir string, r *Report) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, File), append(data, '\n')); err != nil {
		return fmt.Errorf("save the audit: %w", err)
	}
	return nil
}

// Load reads dir/File; nil and no error when the run has none (not a
// verify run, or one interrupted before its audit).
func Load(dir string) (*Report, error) {
	data, err := os.ReadFile(filepath.Join(dir, File))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, File), err)
	}
	return &r, nil
}

// oracleBeatsNop reports whether a run of the oracle scored above nop (0
// without nop's reward).
func oracleBeatsNop(oracle []*results.Result, nop *results.Result) bool {
	floor := 0.0
	if nop != nil && nop.Reward != nil {
		floor = *nop.Reward
	}
	return slices.ContainsFunc(oracle, func(r *results.Result) bool { return r != nil && r.Reward != nil && *r.Reward > floor })
}
