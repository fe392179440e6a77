package trial

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/text"
	"github.com/flightdeck/flightdeck/runner/harbor"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/sandbox"
)

// Processes the agent left running in a live-graded container run while
// the verifier does (Harbor's semantics: a server the agent started is
// what its tests may query), but never at the same time as the verifier's
// own: flightdeck's inspector stops them before /tests and /logs/verifier
// are made anew, then lets them and the verifier's processes take turns,
// and watches both directories. A change made in the agent's turn is the
// agent's, whatever its timing, and voids the grade (leftovers.py;
// docs/security.md).

// leftoverState is what is known of the agent's processes left running in
// a trial's container.
type leftoverState int

const (
	leftoversUnknown leftoverState = iota // not inspected since the agent ran: perhaps some
	leftoversNone                         // none ran when the inspector looked, so none can later
	leftoversSome
)

// leftoverGuard is the guard of a live grade, nil when nothing of the
// agent's can be running: after nop, which runs nothing, or when the
// inspection after the agent found none of its processes left.
func (h *sharedTrial) leftoverGuard(timeout time.Duration) *leftoverGuard {
	if h.a.t.Variant.Agent == suite.AgentNop || h.insp.leftovers == leftoversNone {
		return nil
	}
	return &leftoverGuard{h: h, timeout: timeout}
}

// ownMargin is how long after the listing of the container's own
// processes one of them may seem to have started: process start times
// are in clock ticks (10 ms), the engine's clock is known to a few
// milliseconds. A process of the agent's that took the PID of one of
// them would have to start that soon after the listing, before the agent.
const ownMargin = 250 * time.Millisecond

// ownCutoff is, on the engine's clock, when the container's own processes
// (h.insp.before) had all started.
func (h *sharedTrial) ownCutoff() time.Time {
	return h.insp.beforeAt.Add(h.a.s.ClockOffset + ownMargin)
}

//go:embed leftovers.py
var leftoversScript string

// leftoverSlack is how long past the verifier's timeout the inspector
// keeps the agent's processes, should flightdeck never release them.
const leftoverSlack = 5 * time.Minute

// leftoverGuard is a grader.LiveGuard over the processes the agent left in
// a Harbor trial's container, run by the run's inspector.
type leftoverGuard struct {
	h         *sharedTrial
	timeout   time.Duration // the verifier's; 0: none
	inspector string
	dir       string   // the inspector's state for this grade
	held      []string // the command lines of the agent's processes, stopped
	// pending is true from a Hold that left a daemon until its Release.
	pending bool
}

// guardReply is what leftovers.py prints.
type guardReply struct {
	Held     []string `json:"held"`
	Tampered string   `json:"tampered"`
	Error    string   `json:"error"`
}

// Hold stops the processes of the container that its own (h.insp.before,
// listed at h.insp.beforeAt) are not.
func (g *leftoverGuard) Hold(ctx context.Context) error {
	h := g.h
	s := h.a.s
	st, err := s.Engine.State(ctx, h.container)
	if err != nil {
		return err
	}
	if !st.Running || st.Pid <= 0 {
		return fmt.Errorf("the task's container is not running")
	}
	if g.inspector, err = s.Inspector.container(ctx); err != nil {
		return err
	}
	g.dir = "/tmp/flightdeck-leftovers/" + h.a.t.ID + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	lifetime := g.timeout + leftoverSlack
	if g.timeout <= 0 {
		lifetime = 24 * time.Hour
	}
	cutoff := h.ownCutoff()
	args := []string{"hold", g.dir, strconv.Itoa(st.Pid),
		strconv.FormatFloat(float64(cutoff.UnixNano())/1e9, 'f', 3, 64),
		strconv.FormatFloat(lifetime.Seconds(), 'f', 0, 64),
		harbor.VerifierLogs, grader.HarborTestsDir, "--"}
	for _, p := range h.insp.before {
		args = append(args, strconv.Itoa(p.PID))
	}
	reply, err := g.run(ctx, args...)
	if reply != nil {
		g.held = reply.Held
		g.pending = len(reply.Held) > 0
	}
	if err != nil {
		return err
	}
	if reply.Error != "" {
		return fmt.Errorf("%s", reply.Error)
	}
	return nil
}

// Arm starts the turns.
func (g *leftoverGuard) Arm(ctx context.Context) error {
	if !g.pending {
		return nil
	}
	_, err := g.run(ctx, "arm", g.dir)
	return err
}

// Release ends the turns and returns the verdict.
func (g *leftoverGuard) Release(ctx context.Context) (string, error) {
	if !g.pending {
		return "", nil
	}
	g.pending = false
	reply, err := g.run(ctx, "release", g.dir)
	if err != nil {
		return "", err
	}
	if reply.Error != "" {
		return reply.Tampered, fmt.Errorf("%s", reply.Error)
	}
	return reply.Tampered, nil
}

// run runs leftovers.py with args in the inspector and reads its reply.
func (g *leftoverGuard) run(ctx context.Context, args ...string) (*guardReply, error) {
	h := g.h
	outPath := filepath.Join(h.a.scratch, "leftovers.out")
	errPath := filepath.Join(h.a.scratch, "leftovers.err")
	cmd := append([]string{"python3", "-I", "-c", leftoversScript}, args...)
	res, err := h.a.s.Engine.Exec(ctx, g.inspector, sandbox.ExecSpec{Cmd: cmd, User: "0", StdoutPath: outPath, StderrPath: errPath,
		MaxOutput: 1 << 20, Timeout: inspectTimeout})
	if err == nil && (res.TimedOut || res.ExitCode != 0) {
		msg, _ := os.ReadFile(errPath)
		err = fmt.Errorf("leftovers.py %s: exit %d: %s", args[0], res.ExitCode, text.LastLines(string(msg), 3))
	}
	if err != nil {
		return nil, err
	}
	out, err := os.ReadFile(outPath)
	if err != nil {
		return nil, err
	}
	var reply guardReply
	if err := json.Unmarshal(out, &reply); err != nil {
		return nil, fmt.Errorf("leftovers.py %s: %w: %q", args[0], err, text.LastLines(string(out), 3))
	}
	return &reply, nil
}
