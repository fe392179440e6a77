package agent

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/sandbox"
)

// Stdio is where a shell's streams go: the person's terminal, or pipes.
type Stdio = sandbox.Stdio

// Shell is a person at a terminal (`flightdeck task shell`): what it was
// asked to add goes into the agent's container, one paragraph says where
// the person is, and a shell (or Cmd) runs attached to their terminal or
// pipes, as the agent's user, in the work dir, with the agent's
// environment. It has no timeout.
type Shell struct {
	Stdio *Stdio
	// Cmd runs instead of a shell (bash where the image has it, else sh).
	Cmd []string
	// WithSolution copies solution/ where the oracle gets it; WithTests
	// copies tests/ to /tests and makes /logs/verifier, where a test.sh
	// writes its reward.
	WithSolution, WithTests bool
	// Patch, when set, is a trial's diff.patch (a host file): it is
	// applied to the work dir, as the shell's user, before the shell
	// starts, to rebuild the work dir as that trial's agent left it.
	Patch string
	// TestsFlag is the option that adds the tests (for the paragraph);
	// default --with-tests.
	TestsFlag string
	// Say prints the paragraph before the prompt.
	Say func(string)
	// Raw, when set, puts the person's terminal in raw mode for the
	// shell; what it returns restores it.
	Raw func() (restore func())
	// Kept says the container is one a run kept (trial shell after
	// --keep): it stays when the shell exits.
	Kept bool
	// Ran says the shell ran; ExitCode is its exit code.
	Ran      bool
	ExitCode int
	// testsAt and rewardsAt are where tests/ and the reward dir were put
	// (ShellTestsDirs, unless elsewhere says why not).
	testsAt, rewardsAt, elsewhere string
}

// TestsDir is where `task shell --with-tests` puts the task's tests/.
const TestsDir = "/tests"

// VerifierLogs is where a test.sh writes its reward in a shell.
const VerifierLogs = "/logs/verifier"

// ShellCommand is the command that starts bash where the image has it,
// else sh.
func ShellCommand() []string {
	return []string{"sh", "-c", "if command -v bash >/dev/null 2>&1; then exec bash; fi; exec sh"}
}

// Run adds what was asked, says where the person is, and runs the shell.
func (sh *Shell) Run(ctx context.Context, s *Session, _ string) (Result, error) {
	var added []string
	env := append([]string(nil), s.Env...)
	if sh.WithSolution {
		if err := s.Engine.CopyIn(ctx, s.Container, s.solutionDir(), solutionMount, sandbox.Owner{}); err != nil {
			return Result{}, fmt.Errorf("copy solution/ into the container: %w", err)
		}
		added = append(added, fmt.Sprintf("solution/ at %s (the oracle runs `bash %s/solve.sh`)", solutionMount, solutionMount))
	}
	if sh.WithTests {
		// Where the task's grader finds them: Harbor's /tests and
		// /logs/verifier, or a native grader's task and reward dirs.
		tests, rewards := ShellTestsDirs(s.Trial)
		err := s.Engine.CopyIn(ctx, s.Container, s.Trial.Task.Path("tests"), tests, sandbox.Owner{})
		if err != nil && !s.Trial.Harbor() {
			// A kept command agent's container has its instruction
			// mounted read-only at /flightdeck: Harbor's places then.
			sh.elsewhere = fmt.Sprintf("the grader's %s cannot be written here (%v), so they are at Harbor's places", tests, err)
			tests, rewards = TestsDir, VerifierLogs
			err = s.Engine.CopyIn(ctx, s.Container, s.Trial.Task.Path("tests"), tests, sandbox.Owner{})
		}
		if err != nil {
			return Result{}, fmt.Errorf("copy tests/ into the container: %w", err)
		}
		sh.testsAt, sh.rewardsAt = tests, rewards
		res, err := s.Engine.Exec(ctx, s.Container, sandbox.ExecSpec{
			Cmd: []string{"sh", "-c", "mkdir -p " + rewards + " && chmod 777 " + rewards}, User: "0"})
		if err != nil || res.ExitCode != 0 {
			return Result{}, fmt.Errorf("make %s in the container: exit %d: %v", rewards, res.ExitCode, err)
		}
		added = append(added, "tests/ at "+tests)
		if !s.Trial.Harbor() {
			env = append(env, "FLIGHTDECK_WORKDIR="+s.Workdir, "FLIGHTDECK_REWARD_DIR="+rewards)
		}
	}
	if err := s.give(ctx); err != nil {
		return Result{}, err
	}
	patched := ""
	if sh.Patch != "" {
		var err error
		if patched, err = sh.applyPatch(ctx, s); err != nil {
			return Result{}, err
		}
	}
	if sh.Say != nil {
		sh.Say(sh.paragraph(s, added, patched))
	}
	cmd := sh.Cmd
	if len(cmd) == 0 {
		cmd = ShellCommand()
	}
	restore := func() {}
	if sh.Raw != nil {
		restore = sh.Raw()
	}
	res, err := s.Engine.Exec(ctx, s.Container, sandbox.ExecSpec{
		Cmd: cmd, Env: env, User: s.User, Workdir: s.Workdir, Stdio: sh.Stdio,
	})
	restore()
	if err != nil {
		return Result{}, err
	}
	sh.Ran, sh.ExitCode = true, res.ExitCode
	return Result{ExitCode: &sh.ExitCode}, nil
}

// ShellTestsDirs are where a shell puts tests/ and the dir a test.sh
// writes its reward to: where the task's grader has them, Harbor's
// /tests and /logs/verifier, or a native grader's tests under its task
// dir and its reward dir.
func ShellTestsDirs(t *suite.Trial) (tests, rewards string) {
	if t.Harbor() {
		return TestsDir, VerifierLogs
	}
	return path.Join(grader.NativeTaskDir, "tests"), grader.NativeRewardDir
}

// PatchCut is the note a run ends a diff.patch with when it could not
// record the whole change (runner/trial's evidence: "[flightdeck: patch
// cut at 32 MiB]"), or "" when the patch is whole.
func PatchCut(patch []byte) string {
	i := bytes.Index(patch, []byte(patchCutMark))
	if i < 0 {
		return ""
	}
	return strings.TrimSpace(string(patch[i:]))
}

// patchCutMark starts that note.
const patchCutMark = "\n[flightdeck: "

// PatchPath is where a shell finds the trial's diff.patch.
const PatchPath = "/tmp/flightdeck-trial/diff.patch"

// applyPatch applies the trial's patch to the work dir and says how that
// went: a patch that does not apply (or one the trial cut short) is said,
// never hidden; the shell opens all the same.
func (sh *Shell) applyPatch(ctx context.Context, s *Session) (string, error) {
	data, err := os.ReadFile(sh.Patch)
	if err != nil {
		return "", fmt.Errorf("read the trial's patch: %w", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return "the trial's diff.patch is empty: the agent changed nothing in the work dir", nil
	}
	dir, name := path.Split(PatchPath)
	if err := s.Engine.WriteFiles(ctx, s.Container, dir, []sandbox.File{{Path: name, Mode: 0o644, Data: data}}, sandbox.Owner{}); err != nil {
		return "", fmt.Errorf("copy the trial's patch into the container: %w", err)
	}
	log := filepath.Join(s.Scratch, "apply-patch.log")
	script := `if command -v git >/dev/null 2>&1; then git apply --whitespace=nowarn "$1" && echo "applied with git apply"
elif command -v patch >/dev/null 2>&1; then patch -p1 --forward --silent <"$1" && echo "applied with patch -p1 (binary changes are not)"
else echo "neither git nor patch is in the image"; exit 127; fi`
	res, err := s.Engine.Exec(ctx, s.Container, sandbox.ExecSpec{
		Cmd: []string{"sh", "-c", script, "apply", PatchPath}, User: s.User, Workdir: s.Workdir, StdoutPath: log})
	if err != nil {
		return "", fmt.Errorf("apply the trial's patch: %w", err)
	}
	out, _ := os.ReadFile(log)
	said := strings.TrimSpace(string(out))
	cut := ""
	if PatchCut(data) != "" {
		cut = "; the run recorded it incomplete, so the work dir is not whole"
	}
	if res.ExitCode != 0 {
		return fmt.Sprintf("the trial's diff.patch did NOT apply, so the work dir is the image's (%s; the patch is at %s)%s",
			lastLine(said), PatchPath, cut), nil
	}
	return fmt.Sprintf("the trial's diff.patch, %s, so the work dir is as the agent left it%s", lastLine(said), cut), nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if s == "" {
		return "no output"
	}
	return s
}

// paragraph says which image, user and work dir, what was added, what
// became of the trial's patch, and how to grade.
func (sh *Shell) paragraph(s *Session, added []string, patched string) string {
	user := s.User
	switch {
	case user != "":
	case s.ImageUser != "":
		user = s.ImageUser + " (the image's USER)"
	default:
		user = "root (the image sets no USER)"
	}
	wd := s.Workdir
	if wd == "" {
		wd = "/"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: image %s, user %s, work dir %s", s.Trial.Task.ID, s.Image, user, wd)
	if len(added) > 0 {
		fmt.Fprintf(&b, "; added %s", strings.Join(added, ", "))
	}
	if patched != "" {
		b.WriteString("; " + patched)
	}
	b.WriteString(". ")
	flag := sh.TestsFlag
	if flag == "" {
		flag = "--with-tests"
	}
	b.WriteString(sh.gradeHint(s, flag))
	if sh.Kept {
		b.WriteString(" The container stays when the shell exits.")
	} else {
		b.WriteString(" Everything is removed when the shell exits.")
	}
	return b.String()
}

// gradeHint says how the trial would be graded, and how to do it here.
func (sh *Shell) gradeHint(s *Session, flag string) string {
	withTests := sh.WithTests
	t := s.Trial.Task
	if s.Trial.Harbor() {
		if !withTests {
			return "Harbor's verifier runs tests/test.sh at /tests after the agent (" + flag + " adds them here)."
		}
		who := ""
		if u := t.Config.Verifier.User; u != "" && u != s.User {
			who = fmt.Sprintf(" (the verifier runs it as %s)", u)
		}
		return fmt.Sprintf("To grade as Harbor does%s: `bash %s/test.sh > %s/test-stdout.txt 2>&1; cat %s/reward.*`.",
			who, TestsDir, VerifierLogs, VerifierLogs)
	}
	command := ""
	if g := t.Config.Flightdeck.Grader; g != nil {
		command = g.Command
	}
	tests, rewards := ShellTestsDirs(s.Trial)
	if !withTests {
		return fmt.Sprintf("flightdeck grades in a fresh container of the image: `%s` from %s, with the work dir at %s read-only (%s adds tests/ at %s here).",
			command, grader.NativeTaskDir, s.Workdir, flag, tests)
	}
	if sh.elsewhere != "" {
		return fmt.Sprintf("flightdeck grades in a fresh container of the image, running `%s` from %s with tests/ there and the reward dir at %s; %s: `cd / && %s; cat %s/reward.*` (FLIGHTDECK_WORKDIR and FLIGHTDECK_REWARD_DIR=%s are set).",
			command, grader.NativeTaskDir, rewards, sh.elsewhere, command, sh.rewardsAt, sh.rewardsAt)
	}
	return fmt.Sprintf("flightdeck grades in a fresh container of the image, running `%s` from %s with tests/ and the reward dir where they are here: `cd %s && %s; cat %s/reward.*` (FLIGHTDECK_WORKDIR and FLIGHTDECK_REWARD_DIR=%s are set, as the grader's).",
		command, grader.NativeTaskDir, grader.NativeTaskDir, command, rewards, rewards)
}
