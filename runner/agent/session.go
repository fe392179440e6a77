package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/atomicfile"
	"github.com/flightdeck/flightdeck/internal/hostenv"
	"github.com/flightdeck/flightdeck/internal/hostgit"
	"github.com/flightdeck/flightdeck/internal/text"
	"github.com/flightdeck/flightdeck/runner/harbor"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/sandbox"
)

// Paths and variables the command agent gets. A real coding agent is wired
// in as a command variant: it finds the instruction in a file and in the
// environment, and works in FLIGHTDECK_WORKDIR (also its working directory).
const (
	instructionDir  = "/flightdeck"
	InstructionPath = "/flightdeck/instruction.md"
	envInstruction  = "FLIGHTDECK_INSTRUCTION"      // the instruction's text
	envInstrFile    = "FLIGHTDECK_INSTRUCTION_FILE" // InstructionPath
	envWorkdir      = "FLIGHTDECK_WORKDIR"          // the work dir's path in the container
	solutionMount   = "/solution"                   // the oracle's copy of solution/
)

// Session is one run of a trial's agent: its container, its work dir,
// its log and its deadline.
type Session struct {
	Engine    sandbox.Engine
	Trial     *suite.Trial
	Container string   // the agent's container; "" when none was started
	Host      string   // the work dir on the host; "" when the trial has none
	Workdir   string   // the work dir in the container
	Env       []string // every exec's environment beyond the container's (the question channel, max_turns)
	User      string
	LogPath   string // agent.log
	Scratch   string // for per-exec output before it joins agent.log
	OutputDir string // host dir mounted at /logs/agent (Harbor); "" otherwise
	Timeout   time.Duration
	Owner     sandbox.Owner
	deadline  time.Time
	Dirty     bool // the container wrote into the work dir since the last hand-back
	execs     int
	Harbor    bool // graded Harbor's way: solve.sh's exit code is Harbor's, not a failure
	// WorkdirUser is the agent's user when it is not root: the work dir is
	// given to it before the agent's commands run (given records that it
	// still has it), so it can write the bind-mounted host directory.
	WorkdirUser string
	given       bool
	// InstructionPath is where a command agent finds the instruction
	// (InstructionPath when empty).
	InstructionPath string
	// SolutionDir is the oracle's solution dir on the host: a step's
	// steps/<name>/solution of a multi-step task; the task's solution/
	// when empty.
	SolutionDir string
	// Mask, when set, masks the run's secrets in what the session writes,
	// before the first byte reaches the disk: each command's output file
	// and agent.log.
	Mask sandbox.OutputFilter
	// Image is the agent's container's image, as the trial got it, and
	// ImageUser its USER.
	Image, ImageUser string
	// Tracer is flightdeck's executable, which the oracle-hidden run
	// copies in to watch what the oracle opens ("": not copied, and the
	// probe that needs it not run).
	Tracer string
	// wrap, while set, goes before each command the agent runs: the
	// watcher of opens.
	wrap []string
	// Agent, when set, runs instead of the variant's (task shell's
	// person at a terminal).
	Agent Agent
}

// solutionDir is the host dir the oracle replays or runs.
func (a *Session) solutionDir() string {
	if a.SolutionDir != "" {
		return a.SolutionDir
	}
	return a.Trial.Task.Path("solution")
}

// Result is how the agent phase ended. A non-nil error from Run is an
// infrastructure error; everything here is the agent's own doing.
type Result struct {
	ExitCode *int
	TimedOut bool
	Failed   string
	Steps    int
	Events   []grader.Event // the events of a replayed script
	Replayed bool
	// Note, when set, says what the agent's run was instead of the work it
	// stands for (the oracle-hidden run that had nothing to hide): the
	// trial's cause.
	Note string
	// EmptyAtGrade are files the grade empties, as root, before its
	// verifier runs: the oracle-hidden run's probe of what the verdict is
	// compared with (alterData).
	EmptyAtGrade []string
}

// Run runs the trial's agent under the session's timeout, its output in
// a fresh agent.log.
func (a *Session) Run(ctx context.Context, instruction string) (Result, error) {
	if a.Timeout > 0 {
		a.deadline = time.Now().Add(a.Timeout)
	}
	if err := atomicfile.WriteFile(a.LogPath, nil); err != nil {
		return Result{}, err
	}
	ag := a.Agent
	if ag == nil {
		var err error
		if ag, err = forVariant(a.Trial.Variant); err != nil {
			return Result{}, err
		}
	}
	return ag.Run(ctx, a, instruction)
}

// remaining is the time left before the agent's timeout (0: no limit), and
// false when none is left.
func (a *Session) remaining() (time.Duration, bool) {
	if a.deadline.IsZero() {
		return 0, true
	}
	left := time.Until(a.deadline)
	return left, left > 0
}

// exec runs cmd in the agent's container under the remaining time, appends
// its output to agent.log under a header, and reports the result. A
// container stopped from within under the agent is the agent's failure (the
// second result); one killed through the engine is an error (see gone).
func (a *Session) exec(ctx context.Context, header string, cmd []string, env []string, outPath string) (sandbox.ExecResult, string, error) {
	left, ok := a.remaining()
	if !ok {
		return sandbox.ExecResult{TimedOut: true}, "", nil
	}
	if err := a.give(ctx); err != nil {
		failed, err := a.gone(ctx, err)
		if err != nil {
			return sandbox.ExecResult{}, "", err
		}
		return sandbox.ExecResult{ExitCode: -1}, failed, a.note("=== " + header + "\n=== " + failed + "\n")
	}
	a.execs++
	if outPath == "" {
		outPath = filepath.Join(a.Scratch, fmt.Sprintf("exec-%d.log", a.execs))
	}
	if a.wrap != nil {
		cmd = append(slices.Clone(a.wrap), cmd...)
	}
	res, err := a.Engine.Exec(ctx, a.Container, sandbox.ExecSpec{
		Cmd: cmd, Env: append(append([]string(nil), a.Env...), env...), User: a.User, Workdir: a.Workdir,
		StdoutPath: outPath, Timeout: left, Filter: a.Mask,
	})
	a.Dirty = true
	status := fmt.Sprintf("exit %d, %.1fs", res.ExitCode, res.Duration.Seconds())
	if res.TimedOut {
		status = fmt.Sprintf("timed out after %.1fs: the agent's container was killed", res.Duration.Seconds())
	}
	failed := ""
	if err != nil {
		if failed, err = a.gone(ctx, err); err != nil {
			// What the command printed before it was stopped stays in
			// agent.log: the reader wants to see what led up to the end.
			why := "stopped: " + err.Error()
			if ctx.Err() != nil {
				why = "stopped: the agent's phase was ended (a question that needs input, or the run was interrupted)"
			}
			a.appendLog(header, outPath, why, res.Truncated)
			return res, "", err
		}
		status = failed
	}
	if lerr := a.appendLog(header, outPath, status, res.Truncated); lerr != nil {
		return res, failed, lerr
	}
	return res, failed, nil
}

// gone judges err from running in the agent's container. A container that
// stopped or vanished because a client of the engine killed or removed it
// (docker kill, docker rm -f: not the agent, which cannot reach the engine)
// is an infrastructure error, retried. One stopped from within, by the
// agent's own processes or the kernel, is the agent's failure: the first
// result says how, and the trial is graded on what the agent left.
func (a *Session) gone(ctx context.Context, err error) (string, error) {
	if ctx.Err() != nil || !errors.Is(err, sandbox.ErrContainerGone) {
		return "", err
	}
	killed, kerr := a.Engine.Killed(ctx, a.Container)
	switch {
	case kerr != nil:
		return "", fmt.Errorf("%w (and whether it was killed through the engine is unknown: %v)", err, kerr)
	case killed:
		return "", fmt.Errorf("the agent's container was killed through the engine during the agent phase: %w", err)
	}
	return "the agent's container stopped during the agent phase: " + err.Error(), nil
}

// appendLog adds one command's output to agent.log, without escape
// sequences: the log is text, read in files, JSON and HTML, and a command
// that colours its output would carry them there. Each command's output
// is stripped on its own, so a sequence it leaves open ends with it. The
// secrets are masked after the stripping: a sequence inside a secret
// would hide it from a mask that came first.
func (a *Session) appendLog(header, outPath, status string, truncated bool) error {
	f, err := os.OpenFile(a.LogPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("agent log: %w", err)
	}
	defer f.Close()
	w := a.masked(f)
	fmt.Fprintf(w, "=== %s\n", text.StripANSI(header))
	if out, err := os.Open(outPath); err == nil {
		io.Copy(text.NewANSIStripper(w), out)
		out.Close()
	}
	if truncated {
		fmt.Fprintf(w, "\n[flightdeck: output truncated]\n")
	}
	fmt.Fprintf(w, "=== %s\n", text.StripANSI(status))
	if err := w.Close(); err != nil {
		return fmt.Errorf("agent log: %w", err)
	}
	return nil
}

func (a *Session) note(s string) error {
	f, err := os.OpenFile(a.LogPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("agent log: %w", err)
	}
	defer f.Close()
	w := a.masked(f)
	if _, err := io.WriteString(w, text.StripANSI(s)); err != nil {
		return err
	}
	return w.Close()
}

// masked is w through the session's Mask (w as it is without one).
func (a *Session) masked(w io.Writer) io.WriteCloser {
	if a.Mask == nil {
		return nopCloser{w}
	}
	return a.Mask(w)
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// HandBack gives the work dir's files back to the invoking user before the
// host touches them, when the container may have written there as root.
func (a *Session) HandBack(ctx context.Context) error {
	if !a.Dirty || a.Container == "" || a.Owner.UID == 0 || a.Host == "" {
		return nil
	}
	a.Dirty = false
	a.given = false
	if err := a.Engine.HandBack(ctx, a.Container, a.Workdir, a.Owner); err != nil && !errors.Is(err, sandbox.ErrContainerGone) {
		return fmt.Errorf("hand back the work dir: %w", err)
	}
	return nil
}

// give gives the work dir to the agent's user, when that is not root and
// the work dir is not its already (the host seeded it, wrote into it or had
// it handed back), so an agent running as that user can write it.
func (a *Session) give(ctx context.Context) error {
	if a.WorkdirUser == "" || a.given || a.Host == "" || a.Container == "" {
		return nil
	}
	res, err := a.Engine.Exec(ctx, a.Container, sandbox.ExecSpec{
		Cmd: grader.ChownCommand(a.WorkdirUser, a.Workdir), User: "0", Timeout: 5 * time.Minute,
	})
	if err == nil && (res.TimedOut || res.ExitCode != 0) {
		err = fmt.Errorf("chown exited %d", res.ExitCode)
	}
	if err != nil {
		return fmt.Errorf("give the work dir %s to the agent's user %q: %w", a.Workdir, a.WorkdirUser, err)
	}
	a.given = true
	return nil
}

// solve is the oracle without a script: solution/ is copied to /solution
// and solve.sh runs in the work dir with [solution].env. A non-zero exit is
// recorded; the trial is still graded.
func (a *Session) solve(ctx context.Context) (Result, error) {
	t := a.Trial.Task
	dir := a.solutionDir()
	if _, err := os.Stat(filepath.Join(dir, "solve.sh")); err != nil {
		return Result{Failed: fmt.Sprintf("no solve.sh or deterministic.json in %s", dir)},
			a.note("oracle: the task has no solution\n")
	}
	if err := a.Engine.CopyIn(ctx, a.Container, dir, solutionMount, sandbox.Owner{}); err != nil {
		return Result{}, fmt.Errorf("copy solution/ into the agent's container: %w", err)
	}
	env, err := harbor.TaskEnv(t, "[solution].env", t.Config.Solution.Env, hostenv.Lookup)
	if err != nil {
		return Result{}, err
	}
	env = append(env, "DEBIAN_FRONTEND=noninteractive")
	// The variant's env: task verify's run of the oracle under another
	// time zone, locale and hash seed.
	v := a.Trial.Variant
	for _, k := range slices.Sorted(maps.Keys(v.Env)) {
		env = append(env, k+"="+v.Env[k])
	}
	out := ""
	if a.OutputDir != "" {
		out = filepath.Join(a.OutputDir, harbor.OracleOutput)
	}
	res, failed, err := a.exec(ctx, "oracle: bash "+solutionMount+"/solve.sh", []string{"bash", path.Join(solutionMount, "solve.sh")}, env, out)
	if err != nil {
		return Result{}, fmt.Errorf("run solve.sh: %w", err)
	}
	r := Result{ExitCode: &res.ExitCode, TimedOut: res.TimedOut, Failed: failed}
	if res.TimedOut || failed != "" || res.ExitCode == 0 {
		return r, nil
	}
	if !a.Harbor {
		r.Failed = fmt.Sprintf("solve.sh exited %d", res.ExitCode)
		return r, nil
	}
	// Harbor records a non-zero exit beside the oracle's output and grades
	// the trial as it is.
	if a.OutputDir != "" {
		code := []byte(fmt.Sprintf("%d\n", res.ExitCode))
		if err := os.WriteFile(filepath.Join(a.OutputDir, harbor.OracleExitCode), code, 0o644); err != nil {
			return r, fmt.Errorf("record solve.sh's exit code: %w", err)
		}
	}
	return r, nil
}

// applyPatch is the oracle as a patch: solution/ is copied to /solution
// and reference.patch applied in the work dir with git apply (patch -p1
// where the image has no git). A patch that does not apply is the agent's
// failure; the trial is still graded.
func (a *Session) applyPatch(ctx context.Context) (Result, error) {
	dir := a.solutionDir()
	if !exists(filepath.Join(dir, ReferencePatch)) {
		return Result{Failed: "no " + ReferencePatch + " in " + dir}, a.note("oracle: the task has no " + ReferencePatch + "\n")
	}
	if err := a.Engine.CopyIn(ctx, a.Container, dir, solutionMount, sandbox.Owner{}); err != nil {
		return Result{}, fmt.Errorf("copy solution/ into the agent's container: %w", err)
	}
	p := path.Join(solutionMount, ReferencePatch)
	script := `if command -v git >/dev/null 2>&1; then git apply --verbose --whitespace=nowarn "$1"
elif command -v patch >/dev/null 2>&1; then patch -p1 --forward <"$1"
else echo "neither git nor patch in the image" >&2; exit 127; fi`
	res, failed, err := a.exec(ctx, "oracle: apply "+p, []string{"bash", "-c", script, "apply", p}, nil, "")
	if err != nil {
		return Result{}, fmt.Errorf("apply %s: %w", ReferencePatch, err)
	}
	r := Result{ExitCode: &res.ExitCode, TimedOut: res.TimedOut, Failed: failed}
	if !res.TimedOut && failed == "" && res.ExitCode != 0 {
		r.Failed = fmt.Sprintf("%s does not apply to the work dir (exit %d; agent.log says why)", ReferencePatch, res.ExitCode)
	}
	return r, nil
}

// maxInstructionEnv is the longest instruction also given in
// FLIGHTDECK_INSTRUCTION: Linux refuses a variable over 128 KiB, and an exec
// with one fails before the agent starts. A longer one is in the file only.
const maxInstructionEnv = 64 << 10

// InstructionMount writes the instruction (and the task's seed trajectory,
// when it ships one) under scratch and returns the read-only bind mount
// that shows it at InstructionPath in the agent's container: a mount costs
// nothing at start, where copying the file in costs a round trip through
// the engine.
func InstructionMount(scratch, instruction string, trajectory []byte) (sandbox.Mount, error) {
	dir := filepath.Join(scratch, "instruction")
	err := os.MkdirAll(dir, 0o755)
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err == nil {
		err = writeReadable(dir, path.Base(InstructionPath), []byte(instruction))
	}
	if err != nil {
		return sandbox.Mount{}, fmt.Errorf("write the instruction for the agent: %w", err)
	}
	if trajectory != nil {
		if err := writeReadable(dir, SeedTrajectory, trajectory); err != nil {
			return sandbox.Mount{}, fmt.Errorf("write the seed trajectory for the agent: %w", err)
		}
	}
	return sandbox.Mount{HostPath: dir, ContainerPath: instructionDir, ReadOnly: true}, nil
}

// SeedTrajectory is the name of the task's trajectory.json beside the
// instruction a command agent gets; FLIGHTDECK_TRAJECTORY_FILE names its
// path. It is not trajectory.json there: in Harbor's model that dir is
// /logs/agent, where agents write a trajectory.json of their own.
const SeedTrajectory = "seed-trajectory.json"

// envTrajectoryFile is the path of the seed trajectory, when the task
// ships one.
const envTrajectoryFile = "FLIGHTDECK_TRAJECTORY_FILE"

// writeReadable writes dir/name (dir exists) readable by any user the
// agent runs as, whatever the umask.
func writeReadable(dir, name string, data []byte) error {
	file := filepath.Join(dir, name)
	err := os.WriteFile(file, data, 0o644)
	if err == nil {
		err = os.Chmod(file, 0o644)
	}
	return err
}

// command runs the variant's command line with the instruction at
// InstructionPath (mounted read-only, see InstructionMount) and, when it is
// not too long, in FLIGHTDECK_INSTRUCTION.
func (a *Session) command(ctx context.Context, instruction string) (Result, error) {
	v := a.Trial.Variant
	file := InstructionPath
	if a.InstructionPath != "" {
		file = a.InstructionPath
	}
	env := []string{envInstrFile + "=" + file, envWorkdir + "=" + a.Workdir}
	if tr, err := a.Trial.Task.Trajectory(); err != nil {
		return Result{}, err
	} else if tr != nil {
		env = append(env, envTrajectoryFile+"="+path.Join(path.Dir(file), SeedTrajectory))
	}
	if len(instruction) <= maxInstructionEnv {
		env = append(env, envInstruction+"="+instruction)
	}
	for _, k := range slices.Sorted(maps.Keys(v.Env)) {
		env = append(env, k+"="+v.Env[k])
	}
	res, failed, err := a.exec(ctx, "command: "+v.Command, []string{"bash", "-c", v.Command}, env, "")
	if err != nil {
		return Result{}, fmt.Errorf("run the agent's command: %w", err)
	}
	r := Result{ExitCode: &res.ExitCode, TimedOut: res.TimedOut, Failed: failed}
	if !res.TimedOut && failed == "" && res.ExitCode != 0 {
		r.Failed = fmt.Sprintf("the command exited %d", res.ExitCode)
	}
	return r, nil
}

// replay runs a deterministic script: writes on the host into the work dir
// (confined to it), run steps in the container, commits with host git. The
// first failing step ends the phase; events are recorded as the steps run.
func (a *Session) replay(ctx context.Context, file string) (Result, error) {
	script, err := LoadScript(file)
	if err != nil {
		return Result{}, err
	}
	r := Result{Replayed: true}
	for i, st := range script.Steps {
		if _, ok := a.remaining(); !ok {
			r.TimedOut = true
			a.note(fmt.Sprintf("=== steps[%d]: not run: the agent's timeout passed\n", i))
			break
		}
		if ctx.Err() != nil {
			return r, ctx.Err()
		}
		stop, err := a.replayStep(ctx, i, st, &r)
		if err != nil || stop {
			return r, err
		}
		r.Steps++
	}
	return r, nil
}

// replayStep performs step i of a script; stop ends the replay there (the
// step failed, or timed out, as r says).
func (a *Session) replayStep(ctx context.Context, i int, st Step, r *Result) (stop bool, err error) {
	switch {
	case st.Write != nil:
		if err := a.HandBack(ctx); err != nil {
			return true, err
		}
		a.given = false // the host's new files are the host's
		if err := a.write(ctx, st.Write); err != nil {
			r.Failed = fmt.Sprintf("steps[%d].write %s: %v", i, st.Write.Path, err)
			a.note("=== " + r.Failed + "\n")
			return true, nil
		}
		a.note(fmt.Sprintf("=== steps[%d]: write %s\n", i, st.Write.Path))
		addEvent(r, grader.Event{Kind: grader.EventEdit, Path: path.Clean(st.Write.Path)})
	case st.Run != nil:
		if a.Container == "" {
			return true, fmt.Errorf("steps[%d]: no agent container to run in", i)
		}
		res, failed, err := a.exec(ctx, fmt.Sprintf("steps[%d]: run: %s", i, st.Run.Command),
			[]string{"bash", "-c", st.Run.Command}, nil, "")
		if err != nil {
			return true, fmt.Errorf("steps[%d]: %w", i, err)
		}
		code := res.ExitCode
		r.ExitCode = &code
		if res.TimedOut {
			r.TimedOut = true
			return true, nil
		}
		if failed != "" {
			r.Failed = fmt.Sprintf("steps[%d].run: %s", i, failed)
			return true, nil
		}
		addEvent(r, grader.Event{Kind: grader.EventCommand, Command: st.Run.Command, ExitCode: &code})
		if code != st.Run.Expected() {
			r.Failed = fmt.Sprintf("steps[%d].run: exit %d, expected %d", i, code, st.Run.Expected())
			a.note("=== " + r.Failed + "\n")
			return true, nil
		}
	case st.Ask != nil:
		if a.Container == "" {
			return true, fmt.Errorf("steps[%d]: no agent container to ask from", i)
		}
		reply, failed, err := a.ask(ctx, i, st.Ask.Question)
		if err != nil {
			return true, fmt.Errorf("steps[%d]: %w", i, err)
		}
		if failed != "" {
			r.Failed = fmt.Sprintf("steps[%d].ask: %s", i, failed)
			return true, nil
		}
		addEvent(r, grader.Event{Kind: grader.EventQuestion, Question: st.Ask.Question})
		addEvent(r, grader.Event{Kind: grader.EventAnswer, Question: st.Ask.Question, Reply: reply})
		if !strings.Contains(strings.ToLower(reply), strings.ToLower(st.Ask.Expect)) {
			r.Failed = fmt.Sprintf("steps[%d].ask: the reply %q does not contain %q", i, text.OneLine(reply, 200), st.Ask.Expect)
			a.note("=== " + r.Failed + "\n")
			return true, nil
		}
	case st.Commit != nil:
		if err := a.HandBack(ctx); err != nil {
			return true, err
		}
		a.given = false
		if err := a.commit(ctx, st.Commit.Message); err != nil {
			r.Failed = fmt.Sprintf("steps[%d].commit: %v", i, err)
			a.note("=== " + r.Failed + "\n")
			return true, nil
		}
		a.note(fmt.Sprintf("=== steps[%d]: commit %q\n", i, st.Commit.Message))
		addEvent(r, grader.Event{Kind: grader.EventGitCommit, Message: st.Commit.Message})
	}
	return false, nil
}

// addEvent appends e to r's events, numbered.
func addEvent(r *Result, e grader.Event) {
	e.Seq = len(r.Events) + 1
	r.Events = append(r.Events, e)
}

// write performs a write step inside the work dir (os.Root keeps it there,
// whatever links the work dir holds).
func (a *Session) write(ctx context.Context, w *WriteStep) error {
	var data []byte
	if w.Content != nil {
		data = []byte(*w.Content)
	} else {
		root, err := os.OpenRoot(a.Trial.Task.Dir)
		if err != nil {
			return err
		}
		defer root.Close()
		if data, err = root.ReadFile(path.Clean(w.From)); err != nil {
			return fmt.Errorf("read %s: %w", w.From, err)
		}
	}
	if a.Host == "" {
		return a.writeInContainer(ctx, path.Clean(w.Path), data, w.FileMode())
	}
	root, err := os.OpenRoot(a.Host)
	if err != nil {
		return err
	}
	defer root.Close()
	p := path.Clean(w.Path)
	if dir := path.Dir(p); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	f, err := root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, w.FileMode())
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return root.Chmod(p, w.FileMode())
}

// commit performs a commit step with host git in the work dir's repository.
func (a *Session) commit(ctx context.Context, message string) error {
	if a.Host == "" {
		return a.commitInContainer(ctx, strings.TrimSpace(message))
	}
	if err := hostgit.RepoSafe(a.Host); err != nil {
		return err
	}
	g := hostgit.Cmd{Dir: a.Host}
	if _, err := g.Run(ctx, "add", "-A"); err != nil {
		return err
	}
	_, err := g.Run(ctx, "commit", "-q", "--allow-empty", "--no-verify", "-m", strings.TrimSpace(message))
	return err
}
