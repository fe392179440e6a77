package grader

import (
	"context"
	"fmt"
	"time"

	"github.com/flightdeck/flightdeck/sandbox"
)

// liveRewardLimits caps what is copied out of a live container's
// /logs/verifier: a reward and the verifier's logs, not an agent's dump.
var liveRewardLimits = sandbox.CopyLimits{MaxBytes: 256 << 20, MaxEntries: 10000}

// liveSetUp clears what the agent may have left where the verifier reads
// (Harbor leaves both as the agent left them): /tests and /logs/verifier
// are removed and made anew, /logs/verifier owned by the verifier's user and
// writable by no one else, so an agent's process running as another user
// cannot write a reward into it, and a reward planted earlier is gone.
const liveSetUp = `set -e
rm -rf -- "$1" "$2"
mkdir -p -- "$1" "$2"
chmod 0755 -- "$1" "$2"`

// RunLive grades in the agent's own container, still running, as Harbor's
// shared mode does: processes the image's entrypoint or the agent started
// are there when test.sh runs. Right before test.sh, /tests is made anew
// from the task's tests/ and /logs/verifier emptied and made anew, so the
// reward is only what the verify phase wrote; it is copied out to
// TrialDir/verifier and read there. The container is left for the caller
// (running, or stopped when the grader timed out: a timeout kills it).
//
// Errors are as for Run: infrastructure only.
func RunLive(ctx context.Context, eng sandbox.Engine, containerID string, req Request) (Grade, error) {
	return RunLiveGuarded(ctx, eng, containerID, req, nil)
}

// LiveGuard keeps the processes an agent left running in a live grade's
// container from writing the verifier's verdict: Hold stops them before
// /tests and /logs/verifier are made anew, Arm lets them run again, in
// turns with the verifier's processes, once both exist anew, and Release,
// once the reward has been copied out, ends the turns, resumes every
// process and says what of the agent's changed /tests or /logs/verifier
// ("" for nothing). Release is called whenever Hold was, whatever failed
// in between.
type LiveGuard interface {
	Hold(ctx context.Context) error
	Arm(ctx context.Context) error
	Release(ctx context.Context) (tampered string, err error)
}

// releaseTimeout bounds a guard's Release, which runs even when the grade's
// context is done (it resumes the container's processes).
const releaseTimeout = 2 * time.Minute

// RunLiveGuarded is RunLive with guard (nil: none) around the verifier: a
// grade whose guard saw the agent's processes change /tests or
// /logs/verifier has no reward (RewardTampered).
func RunLiveGuarded(ctx context.Context, eng sandbox.Engine, containerID string, req Request, guard LiveGuard) (Grade, error) {
	start := time.Now()
	if req.Harbor == nil {
		req.Harbor = &HarborVerifier{}
	}
	p, err := newPlan(req)
	if err != nil {
		return Grade{}, err
	}
	p.live = true
	g := Grade{LogPath: p.logPath}
	if err := freshDir(p.rewardDir); err != nil {
		return g, err
	}
	if guard != nil {
		if err = guard.Hold(ctx); err != nil {
			err = fmt.Errorf("stop the processes the agent left in %s: %w", p.what, err)
		}
	}
	if err == nil {
		err = p.setUpLive(ctx, eng, containerID)
	}
	if err == nil && guard != nil {
		if err = guard.Arm(ctx); err != nil {
			err = fmt.Errorf("watch the processes the agent left in %s: %w", p.what, err)
		}
	}
	if err == nil {
		err = p.grade(ctx, eng, containerID, start, &g)
	}
	if guard != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		tampered, rerr := guard.Release(rctx)
		cancel()
		if err == nil && rerr != nil {
			err = fmt.Errorf("judge the processes the agent left in %s: %w", p.what, rerr)
		}
		if tampered != "" && g.Tampered == "" {
			g.Tampered = fmt.Sprintf("a process the agent left changed what the verifier reads or writes while the verifier's processes were stopped (%s); the reward is not the verifier's alone", tampered)
		}
	}
	return p.finish(&g, start, err)
}

// setUpLive makes /tests and /logs/verifier anew, copies the tests in and
// gives both to the grader's user.
func (p *plan) setUpLive(ctx context.Context, eng sandbox.Engine, id string) error {
	if err := rootExec(ctx, eng, id, []string{"sh", "-c", liveSetUp, "sh", p.testsMount, p.rewardMount}); err != nil {
		return fmt.Errorf("make %s and %s anew in %s: %w", p.testsMount, p.rewardMount, p.what, err)
	}
	dirs := p.testsDirs
	if len(dirs) == 0 {
		dirs = []string{p.testsHost}
	}
	for _, d := range dirs {
		if err := eng.CopyIn(ctx, id, d, p.testsMount, sandbox.Owner{}); err != nil {
			return fmt.Errorf("copy %s into %s at %s: %w", d, p.what, p.testsMount, err)
		}
	}
	user, err := p.graderUser(ctx, eng)
	if err != nil || sandbox.IsRootUser(user) {
		return err
	}
	for _, dir := range []string{p.testsMount, p.rewardMount} {
		if err := rootExec(ctx, eng, id, ChownCommand(user, dir)); err != nil {
			return fmt.Errorf("give %s to the verifier's user %q: %w", dir, user, err)
		}
	}
	return nil
}

// graderUser is the user the grader command runs as: the request's, else
// the image's (the container's own user).
func (p *plan) graderUser(ctx context.Context, eng sandbox.Engine) (string, error) {
	if p.exec.User != "" {
		return p.exec.User, nil
	}
	info, err := eng.InspectImage(ctx, p.container.Image)
	if err != nil {
		return "", fmt.Errorf("inspect %s for its user: %w", p.container.Image, err)
	}
	return info.User, nil
}
