package trial

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/flightdeck/flightdeck/internal/text"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/tasks"
)

// An image whose ENTRYPOINT starts a service in the background and then
// execs its command (`server & exec "$@"`) is ready only once the service
// listens. Harbor gives it no explicit wait: `docker compose up --wait`
// returns as soon as the container runs, but before the agent's first
// command Harbor runs two more `docker compose` processes (a root exec
// that makes the log dirs, then the copy of the solution), each a second
// or so on a loaded machine, and a service that starts at once is up by
// then. flightdeck's direct engine calls leave no such gap, so when the
// image (or main's compose service) has an entrypoint of its own and the
// task no healthcheck, the trial waits until the container has settled:
// for settleQuiet on end, none of its processes runs or waits on the disk,
// none starts, ends or uses CPU time, and no socket starts or stops
// listening — until its processes have used settleCPU of CPU time, and at
// most settleMost. An image without an entrypoint of its own runs only the
// keep-alive: nothing to wait for, no wait.

const (
	settleQuiet = 300 * time.Millisecond
	// settleCPU bounds the wait by the work the container does: once its
	// processes have used this much CPU time since the wait began, it is
	// not settling (a daemon busy for good) and the agent starts. A busy
	// machine starts a service more slowly, and gets as long as it needs.
	settleCPU = 5 * time.Second
	// settleMost bounds it in any case.
	settleMost = 60 * time.Second
)

// needsSettle reports whether the trial's container is waited for after
// it starts: it has an entrypoint of its own, and the task no healthcheck
// (which says when it is ready better than any wait).
func (h *sharedTrial) needsSettle() bool {
	if h.a.t.Variant.NoSettle {
		return false
	}
	if hc := h.a.t.Task.Config.Environment.Healthcheck; hc != nil && hc.Command != "" {
		return false
	}
	if c := h.net.ComposeFile; c != nil && c.Main.Entrypoint != nil {
		return len(c.Main.Entrypoint) > 0
	}
	return len(h.info.Entrypoint) > 0
}

// settle waits, in the run's inspector, until the trial's container has
// settled, and records the wait in result.json's start_wait. What fails is
// noted and never the trial's failure: the agent then starts at once, as
// it would with no entrypoint of its own.
func (h *sharedTrial) settle(ctx context.Context) {
	if !h.needsSettle() {
		if h.a.t.Variant.NoSettle {
			h.a.res.StartWait = &results.StartWait{Note: "not waited for: this run checks the oracle without the wait"}
		}
		return
	}
	start := time.Now()
	w := &results.StartWait{}
	h.a.res.StartWait = w
	err := func() error {
		st, err := h.a.s.Engine.State(ctx, h.container)
		if err != nil {
			return err
		}
		if !st.Running || st.Pid <= 0 {
			return fmt.Errorf("the task's container is not running")
		}
		inspector, err := h.a.s.Inspector.container(ctx)
		if err != nil {
			return err
		}
		out, err := h.runInspector(ctx, inspector, nil, strconv.Itoa(st.Pid), "settle", strconv.FormatInt(settleQuiet.Milliseconds(), 10),
			strconv.FormatInt(settleCPU.Milliseconds(), 10), strconv.FormatInt(settleMost.Milliseconds(), 10))
		if err != nil {
			return err
		}
		return parseSettle(string(out), w)
	}()
	w.WaitedMS = time.Since(start).Milliseconds()
	if err != nil {
		w.Note = "not waited for: " + err.Error()
		h.a.s.Report.Note(h.a.t, "the entrypoint's start: "+w.Note)
		return
	}
	if !w.Settled {
		h.a.s.Report.Note(h.a.t, fmt.Sprintf("the entrypoint's processes were still busy after %s of CPU time or %s (%s); the agent starts anyway",
			settleCPU, settleMost, strings.Join(w.StillBusy, ", ")))
	}
}

// parseSettle reads inspect.sh settle's output into w.
func parseSettle(out string, w *results.StartWait) error {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	first := strings.Fields(lines[0])
	if len(first) != 2 || (first[0] != "settled" && first[0] != "unsettled") {
		return fmt.Errorf("inspect.sh settle: unexpected output %q", text.LastLines(out, 3))
	}
	w.Settled = first[0] == "settled"
	for _, l := range lines[1:] {
		if rest, ok := strings.CutPrefix(l, "busy "); ok {
			w.StillBusy = append(w.StillBusy, rest)
		} else if l == "sockets changed" {
			w.StillBusy = append(w.StillBusy, "a socket began or stopped listening")
		}
	}
	return nil
}

// MayRace reports whether a task's oracle may depend on its entrypoint's
// background start, as far as the task's files tell (task verify runs its
// oracle once without the wait): a Harbor task with no healthcheck whose
// Dockerfile sets an ENTRYPOINT, whose compose file gives main one, or
// that runs a prebuilt image (whose entrypoint only the engine knows).
func MayRace(t *tasks.Task) bool {
	if t.Native() {
		return false
	}
	if hc := t.Config.Environment.Healthcheck; hc != nil && hc.Command != "" {
		return false
	}
	if t.Config.Environment.DockerImage != "" {
		return true
	}
	if t.ComposePath() != "" {
		// Read without the run's env: a file it cannot read so may
		// still give main an entrypoint.
		if c, err := t.LoadCompose(nil); err != nil || len(c.Main.Entrypoint) > 0 {
			return true
		}
	}
	data, err := os.ReadFile(t.Path(tasks.EnvironmentDir, "Dockerfile"))
	if err != nil {
		return false
	}
	ins, err := sandbox.DockerfileInstructions(data)
	if err != nil {
		return false
	}
	for _, in := range ins {
		if strings.EqualFold(in.Cmd, "entrypoint") {
			return true
		}
	}
	return false
}
