package grader

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/tasks"
)

// Paths inside a grading container.
const (
	// NativeTaskDir holds the pristine task copy of a native grade; the
	// grader command runs here, with the tests at NativeTaskDir/tests.
	NativeTaskDir = "/flightdeck/task"
	// NativeRewardDir is FLIGHTDECK_REWARD_DIR, the fresh reward directory.
	NativeRewardDir = "/flightdeck/reward"
	// HarborTestsDir is where a Harbor task's tests/ are copied.
	HarborTestsDir = "/tests"
	// HarborVerifierDir is Harbor's reward directory, fresh for each grade.
	HarborVerifierDir = "/logs/verifier"
	// HarborTestStdout is test.sh's output, in HarborVerifierDir.
	HarborTestStdout = "test-stdout.txt"
)

// Files and directories a grade creates in Request.TrialDir.
const (
	LogFile   = "grader.log" // the grader's output
	RewardDir = "verifier"   // the fresh reward directory, bind-mounted in the container
)

// cleanupTimeout bounds removing the grading container, which runs on a
// context the caller's cancellation does not reach.
const cleanupTimeout = 60 * time.Second

// maxLogCopy caps how much of Harbor's test-stdout.txt is copied into grader.log.
const maxLogCopy = 16 << 20

// Request is one grade to run: what every grade has. Harbor, when set,
// says how Harbor's verifier is run; nil grades a flightdeck-native task
// with its [flightdeck.grader] command (a Harbor-format task is graded by
// Harbor's verifier either way, with the zero HarborVerifier when nil).
type Request struct {
	// Mask masks the run's secrets in grader.log as it is written; nil:
	// none to mask.
	Mask             sandbox.OutputFilter
	Task             *tasks.Task
	Image            string        // native: the pristine task image; Harbor: the snapshot of the agent's container
	WorkDir          string        // host path of the agent's work dir (native: mounted read-only; Harbor: read-write when set)
	ContainerWorkDir string        // the work dir's path in the container
	TrialDir         string        // host dir: grader.log, and the fresh reward dir TrialDir/verifier
	RunID, TrialID   string        // carried in the container's labels
	Timeout          time.Duration // verifier timeout × multiplier; 0: none
	Env              []string      // resolved [verifier].env (Harbor) / extra env
	User             string        // the grader's user; "": the image's
	NanoCPUs         int64
	MemoryBytes      int64
	Owner            sandbox.Owner // files of the reward dir (and a Harbor work dir) are handed back to this uid:gid
	// Service, for a grade of a multi-container task in a fresh container
	// (a native grade or a Harbor snapshot), is main's place among the
	// trial's services: their network, under main's name, and main's
	// entrypoint and command.
	Service *sandbox.ServiceSpec
	// Harbor grades with Harbor's verifier, even a task that has a
	// [flightdeck.grader] command (a variant's grading: harbor).
	Harbor *HarborVerifier
	// Trace, when set, is the host path of flightdeck's executable: the
	// grader's command runs under its tracer, which records what the
	// verifier executes and opens in TrialDir/TraceFile.
	Trace string
	// Empty are files the grade empties, as root, where they exist, before
	// the verifier runs: task verify's probe of what a verdict is compared
	// with.
	Empty []string
}

// HarborVerifier is what a grade with Harbor's verifier (test.sh in
// /tests, the reward in /logs/verifier) needs beyond a Request: a native
// grade has none of it (no network, the work dir read-only, the tests at
// NativeTaskDir).
type HarborVerifier struct {
	Network bool // the verifier's network, as [verifier] decides
	// NetworkOf, for a grade in a fresh container, joins the network
	// namespace of the trial's egress gateway, which enforces the
	// verifier's allowlist: it overrides Network and Service's network.
	NetworkOf string
	// KeepEntrypoint starts the grading container with its image's
	// entrypoint (the keep-alive as its command, no init), as Harbor's
	// model starts the agent's: a snapshot grade then has the services the
	// image's entrypoint starts, and none the agent left.
	KeepEntrypoint bool
	// WorkDirUser is the agent's user (a name, a uid or user:group; "" is
	// root). When Owner is not root (so the runner handed the work dir
	// back to Owner), the work dir is given to this user before test.sh
	// runs, so the verifier sees the agent's files owned as the agent left
	// them, and handed back to Owner afterwards.
	WorkDirUser string
	// TestsDirs, for a live grade, are the host dirs copied into /tests in
	// order (a later one's files over an earlier one's): a step's tests
	// over the task's. Empty: the task's tests/.
	TestsDirs []string
	// Mounts are more host directories for the grading container:
	// Harbor's /logs/artifacts, which the verifier sees as the agent left it.
	Mounts []sandbox.Mount
	// ImageTests, for a grade in a fresh container, says the image owns
	// /tests (a separate verifier's image, built from tests/): nothing is
	// removed there or copied in, as Harbor skips the tests upload.
	ImageTests bool
	// Uploads are copied into a fresh grading container before the
	// verifier runs: a separate verifier gets the agent's artifacts at the
	// paths they had in the agent's container.
	Uploads []Upload
}

// native reports whether req runs a native task's own grader.
func (req Request) native() bool { return req.Task.Native() && req.Harbor == nil }

// harbor is the request's Harbor verifier, the zero one when unset.
func (req Request) harbor() HarborVerifier {
	if req.Harbor == nil {
		return HarborVerifier{}
	}
	return *req.Harbor
}

// Upload is a host file or directory copied into the grading container.
type Upload struct {
	HostPath      string
	ContainerPath string // absolute; a directory's contents land in it
}

// Grade is how a grade ended. A Grade is meaningful only when Run returns
// no error.
type Grade struct {
	Reward          *Reward       `json:"reward,omitempty"`     // nil when none could be read
	Summary         *Summary      `json:"summary,omitempty"`    // the parsed RESULT line, if any
	ExitCode        int           `json:"exit_code"`            // the grader command's (ignored for Harbor rewards)
	TimedOut        bool          `json:"timed_out,omitempty"`  // the command ran past Timeout and its container was killed
	OOMKilled       bool          `json:"oom_killed,omitempty"` // the engine reported an out-of-memory kill
	RewardErr       error         `json:"-"`                    // why no reward (a *RewardError); nil when Reward != nil
	LogPath         string        `json:"log_path"`             // TrialDir/grader.log
	Duration        time.Duration `json:"duration"`             // the whole grade: start to removal
	CommandDuration time.Duration `json:"command_duration"`     // the grader command alone
	Warnings        []string      `json:"warnings,omitempty"`   // cleanup that failed without spoiling the grade
	// Tampered, for a live grade, names what a process the
	// agent left changed in /tests or the reward dir while the verifier's
	// processes were stopped (RunLiveGuarded).
	Tampered string `json:"tampered,omitempty"`
}

// Run grades in a fresh container started from req.Image, reading the reward
// from TrialDir/verifier, a directory created fresh (empty) for this grade
// and mounted only into this container. A flightdeck-native task runs its
// [flightdeck.grader] command with no network; any other task gets Harbor's
// verifier. The container is removed before Run returns, whatever happens.
//
// A non-nil error is an infrastructure error: the engine failed, or the
// container stopped or vanished while the grader ran. A grader that times
// out, exits non-zero or writes no valid reward is not an error: see
// Grade.TimedOut and Grade.RewardErr, and Grade.Outcome.
func Run(ctx context.Context, eng sandbox.Engine, req Request) (Grade, error) {
	start := time.Now()
	p, err := newPlan(req)
	if err != nil {
		return Grade{}, err
	}
	g := Grade{LogPath: p.logPath}
	if err := freshDir(p.rewardDir); err != nil {
		return g, err
	}
	err = p.run(ctx, eng, &g)
	if rerr := p.reclaim(); rerr != nil && err == nil {
		err = rerr
	}
	return p.finish(&g, start, err)
}

// finish reads the reward a grade left in the host's reward dir, unless the
// grade failed (err) or did not finish.
func (p *plan) finish(g *Grade, start time.Time, err error) (Grade, error) {
	// The grader's output went to grader.log as it came; logs are text.
	if cerr := cleanLog(p.logPath); cerr != nil {
		g.Warnings = append(g.Warnings, cerr.Error())
	}
	if err != nil {
		g.Duration = time.Since(start)
		return *g, err
	}
	if g.RewardErr != nil {
		// The grader did not finish: whatever its reward dir holds is not
		// its verdict.
		g.Duration = time.Since(start)
		return *g, nil
	}
	if g.Tampered != "" {
		// Another process writes where the verifier's verdict goes: what the
		// reward dir holds may be that process's, not the verifier's.
		g.RewardErr = &RewardError{Kind: RewardTampered, File: p.rewardDir, Detail: g.Tampered}
		g.Duration = time.Since(start)
		return *g, nil
	}
	if p.trace != "" {
		if err := p.keepTrace(); err != nil {
			g.Warnings = append(g.Warnings, "trace: "+err.Error())
		}
	}
	if !p.native {
		if err := appendTestStdout(p.rewardDir, p.logPath); err != nil {
			g.Warnings = append(g.Warnings, err.Error())
		}
	}
	reward, err := readReward(p.rewardDir)
	if err != nil {
		g.RewardErr = err
	} else {
		g.Reward = &reward
	}
	if out, err := readLog(p.logPath); err == nil {
		g.Summary, _ = parseResult(out)
	}
	g.Duration = time.Since(start)
	return *g, nil
}

// run starts the container, grades in it and removes it.
func (p *plan) run(ctx context.Context, eng sandbox.Engine, g *Grade) (err error) {
	c, err := eng.Start(ctx, p.container)
	if c.ID != "" {
		defer func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
			defer cancel()
			if rerr := eng.Remove(rctx, c.ID); rerr != nil {
				g.Warnings = append(g.Warnings, fmt.Sprintf("remove grading container %s: %v", c.ID, rerr))
			}
		}()
	}
	if err != nil {
		return fmt.Errorf("start grading container for %s: %w", p.what, err)
	}
	if err := p.setUp(ctx, eng, c.ID); err != nil {
		return err
	}
	return p.grade(ctx, eng, c.ID, time.Time{}, g)
}

// grade runs the grader command in the container (set up already) and
// judges how it ended; since dates the grade for telling the engine's kill
// requests from earlier ones.
func (p *plan) grade(ctx context.Context, eng sandbox.Engine, id string, since time.Time, g *Grade) error {
	c := sandbox.Container{ID: id}
	if len(p.empty) > 0 {
		cmd := append([]string{"sh", "-c", `for f; do [ -f "$f" ] && : > "$f"; done; exit 0`, "empty"}, p.empty...)
		if err := rootExec(ctx, eng, id, cmd); err != nil {
			return fmt.Errorf("empty the files the probe alters in %s: %w", p.what, err)
		}
	}
	if p.trace != "" {
		if err := p.startTrace(ctx, eng, id); err != nil {
			return err
		}
	}
	res, err := eng.Exec(ctx, c.ID, p.exec)
	g.ExitCode, g.TimedOut, g.CommandDuration = res.ExitCode, res.TimedOut, res.Duration
	if p.trace != "" && err == nil && !res.TimedOut {
		// The tracer leaves with the grade; a container a timeout stopped
		// keeps it until it is removed.
		rootExec(ctx, eng, c.ID, []string{"rm", "-rf", traceDir})
	}
	st, stErr := eng.State(ctx, c.ID)
	if err == nil && !res.TimedOut && stErr == nil && st.Running && res.ExitCode == exitKilled {
		st, stErr = settle(ctx, eng, c.ID)
	}
	if stErr == nil {
		g.OOMKilled = st.OOMKilled
	}
	gone := err != nil && ctx.Err() == nil && errors.Is(err, sandbox.ErrContainerGone)
	switch {
	case err != nil && !gone:
		return fmt.Errorf("run the grader of %s: %w", p.what, err)
	case res.TimedOut:
		// Our kill: the container is expected to be gone or stopped.
	case stErr != nil:
		return fmt.Errorf("inspect grading container of %s: %w", p.what, stErr)
	case gone || st.Missing || !st.Running:
		if err := p.stoppedUnder(ctx, eng, c.ID, st, since, g); err != nil {
			return err
		}
	}
	if p.live {
		// The reward dir is the container's own: copy it out. A stopped
		// container (timed out, or stopped under the grader) still has it.
		if err := eng.CopyOut(ctx, c.ID, p.rewardMount, p.rewardDir, liveRewardLimits); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("copy %s out of %s: %w", p.rewardMount, p.what, err)
		}
		return nil
	}
	// Files the container wrote into the reward dir become the caller's,
	// and so does a work dir it was given. For a caller who is root, Run
	// does this on the host once the container is gone (see reclaim), which
	// costs no process in the container.
	if p.owner.UID != 0 {
		if herr := eng.HandBack(ctx, c.ID, p.rewardMount, p.owner); herr != nil {
			g.Warnings = append(g.Warnings, fmt.Sprintf("hand back %s: %v", p.rewardDir, herr))
		}
	}
	if p.giveWorkDir {
		if herr := eng.HandBack(ctx, c.ID, p.workDirMount, p.owner); herr != nil {
			g.Warnings = append(g.Warnings, fmt.Sprintf("hand back the work dir %s: %v", p.workDirMount, herr))
		}
	}
	if !g.OOMKilled {
		// A process the kernel killed for the memory limit shows only once
		// the container has stopped; the grade is over, so stop it and look.
		if serr := eng.Stop(ctx, c.ID); serr == nil {
			if st, serr := eng.State(ctx, c.ID); serr == nil {
				g.OOMKilled = st.OOMKilled
			}
		}
	}
	return nil
}

// reclaim, for a caller who is root, gives the reward dir's files to the
// caller and clears their set-id bits on the host, as a hand-back would in
// the container: what the grader's user wrote stays neither writable by
// that user's uid nor set-id in the results. It runs once the container is
// removed, when nothing can change the directory under the walk.
func (p *plan) reclaim() error {
	if p.owner.UID != 0 {
		return nil
	}
	if err := reclaimTree(p.rewardDir, p.owner.UID, p.owner.GID); err != nil {
		return fmt.Errorf("give %s to %d:%d: %w", p.rewardDir, p.owner.UID, p.owner.GID, err)
	}
	return nil
}

// stoppedUnder judges a grading container that stopped or vanished while
// the grader ran. Stopped through the engine (docker kill, stop, rm -f) it
// is an infrastructure error, retried. Stopped from within, by the code
// under test or by the kernel, it is the grade's failure: otherwise the
// agent's code could turn any failing grade into a retried, uncounted one.
func (p *plan) stoppedUnder(ctx context.Context, eng sandbox.Engine, id string, st sandbox.State, since time.Time, g *Grade) error {
	killed, err := eng.KilledSince(ctx, id, since)
	switch {
	case err != nil:
		return fmt.Errorf("grade %s: the grading container stopped while the grader ran, and its events cannot be read: %w", p.what, err)
	case st.Missing:
		return fmt.Errorf("grade %s: %w: the grading container was removed while the grader ran", p.what, sandbox.ErrContainerGone)
	case killed:
		return fmt.Errorf("grade %s: %w: the grading container was killed through the engine while the grader ran (exit code %d)",
			p.what, sandbox.ErrContainerGone, st.ExitCode)
	}
	g.RewardErr = &RewardError{Kind: RewardUnfinished, File: p.rewardDir,
		Detail: fmt.Sprintf("the grading container stopped while the grader ran, stopped from within (exit code %d, out of memory: %t)",
			st.ExitCode, st.OOMKilled)}
	return nil
}

// exitKilled is the exit code of a process killed by SIGKILL: by the
// kernel's OOM killer, or because the container's init died.
const exitKilled = 128 + 9

// settleTime is how long a SIGKILLed grader's container is watched for
// stopping: when the container's init dies, its processes are killed
// before the engine reports the container stopped.
const settleTime = 3 * time.Second

// settle polls the container's state until it stops or settleTime passes.
func settle(ctx context.Context, eng sandbox.Engine, id string) (sandbox.State, error) {
	deadline := time.Now().Add(settleTime)
	delay := 50 * time.Millisecond
	for {
		st, err := eng.State(ctx, id)
		if err != nil || st.Missing || !st.Running || time.Now().After(deadline) {
			return st, err
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 500*time.Millisecond)
	}
}

// setUp copies the pristine tests in from the host task dir and gives them
// to the grader's user. On the Harbor path whatever the agent left at
// /tests is removed first, so the tests are exactly the task's, and the
// work dir is given back to the agent's user.
func (p *plan) setUp(ctx context.Context, eng sandbox.Engine, id string) error {
	for _, u := range p.uploads {
		if err := upload(ctx, eng, id, u); err != nil {
			return fmt.Errorf("copy %s into the grading container at %s: %w", u.HostPath, u.ContainerPath, err)
		}
	}
	if p.imageTests {
		return nil
	}
	if !p.native {
		if err := rootExec(ctx, eng, id, []string{"rm", "-rf", "--", p.testsMount}); err != nil {
			return fmt.Errorf("clear %s in the grading container: %w", p.testsMount, err)
		}
	}
	if p.giveWorkDir {
		if err := rootExec(ctx, eng, id, ChownCommand(p.workDirUser, p.workDirMount)); err != nil {
			return fmt.Errorf("give the work dir %s to the agent's user %q: %w", p.workDirMount, p.workDirUser, err)
		}
	}
	if err := eng.CopyIn(ctx, id, p.testsHost, p.testsMount, sandbox.Owner{}); err != nil {
		return fmt.Errorf("copy %s into the grading container at %s: %w", p.testsHost, p.testsMount, err)
	}
	user, err := p.graderUser(ctx, eng)
	if err != nil || sandbox.IsRootUser(user) {
		return err
	}
	res, err := eng.Exec(ctx, id, sandbox.ExecSpec{
		Cmd:  []string{"chown", "-R", "--", user, p.ownedDir},
		User: "0",
	})
	if err != nil {
		return fmt.Errorf("give %s to user %s: %w", p.ownedDir, user, err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("give %s to user %s: chown exited %d", p.ownedDir, user, res.ExitCode)
	}
	return nil
}

// upload copies a host directory's contents into a container directory, or
// a host file to a container path (staged as a link in a directory of its
// own, so that only it is sent).
func upload(ctx context.Context, eng sandbox.Engine, id string, u Upload) error {
	info, err := os.Stat(u.HostPath)
	if err != nil {
		return err
	}
	if info.IsDir() {
		return eng.CopyIn(ctx, id, u.HostPath, u.ContainerPath, sandbox.Owner{})
	}
	stage, err := os.MkdirTemp("", "flightdeck-upload-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	staged := filepath.Join(stage, path.Base(u.ContainerPath))
	if err := os.Link(u.HostPath, staged); err != nil {
		data, rerr := os.ReadFile(u.HostPath)
		if rerr != nil {
			return rerr
		}
		if err := os.WriteFile(staged, data, info.Mode().Perm()); err != nil {
			return err
		}
	}
	return eng.CopyIn(ctx, id, stage, path.Dir(u.ContainerPath), sandbox.Owner{})
}

// rootExec runs cmd as root in the container and wants exit 0.
func rootExec(ctx context.Context, eng sandbox.Engine, id string, cmd []string) error {
	res, err := eng.Exec(ctx, id, sandbox.ExecSpec{Cmd: cmd, User: "0", Timeout: setUpTimeout})
	if err != nil {
		return err
	}
	if res.TimedOut {
		return fmt.Errorf("%s timed out", cmd[0])
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("%s exited %d", cmd[0], res.ExitCode)
	}
	return nil
}

// setUpTimeout bounds each set-up command of a grade.
const setUpTimeout = 5 * time.Minute

// chownScript gives $2 and everything under it to the user $1 ("" is root):
// a name or uid that the container's user database knows takes its uid and
// primary group, anything else is passed to chown as it is. Links are
// changed themselves, never followed.
const chownScript = `u=${1:-0}; d=$2
case "$u" in
*:*) spec=$u ;;
*) if uid=$(id -u -- "$u" 2>/dev/null) && gid=$(id -g -- "$u" 2>/dev/null); then spec=$uid:$gid; else spec=$u; fi ;;
esac
exec chown -R -h -- "$spec" "$d"`

// ChownCommand is the command that, run as root in a container, gives dir
// and everything under it to user (a name, a uid or user:group; "" is
// root), resolving a name in the container's own user database.
func ChownCommand(user, dir string) []string {
	return []string{"sh", "-c", chownScript, "sh", user, dir}
}

// freshDir creates dir empty. An existing empty directory is accepted;
// anything else there (a file, a symlink, a directory with content) is an
// error, since a reward must never come from an earlier grade. The mode
// lets a grader running as any user write its reward.
func freshDir(dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("create trial dir: %w", err)
	}
	err := os.Mkdir(dir, 0o777)
	if errors.Is(err, os.ErrExist) {
		fi, lerr := os.Lstat(dir)
		if lerr != nil || !fi.IsDir() {
			return fmt.Errorf("reward dir %s exists and is not a directory: it must be created fresh for each grade", dir)
		}
		entries, rerr := os.ReadDir(dir)
		if rerr != nil {
			return fmt.Errorf("reward dir %s: %w", dir, rerr)
		}
		if len(entries) > 0 {
			return fmt.Errorf("reward dir %s already holds %d entries: it must be fresh for each grade", dir, len(entries))
		}
	} else if err != nil {
		return fmt.Errorf("create reward dir: %w", err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		return fmt.Errorf("open reward dir %s to the grader's user: %w", dir, err)
	}
	return nil
}
