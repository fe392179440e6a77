package trial

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flightdeck/flightdeck/internal/text"
	"github.com/flightdeck/flightdeck/runner/agent"
	"github.com/flightdeck/flightdeck/runner/images"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/runner/tamper"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/tasks"
)

// After the agent's phase, and before anything of the verifier's runs in
// the trial's container, flightdeck's own inspector (a container of the
// offline base image in the engine host's PID namespace, with its own
// tools, out of sight of the trial container's processes) lists what changed in that container's filesystem since the
// agent started, by the kernel's change times, which no process in the
// container can set back. Package tamper judges the list; dpkg's records,
// read by the inspector, set the package manager's installs apart.

//go:embed inspect.sh
var inspectScript string

// inspectListMax is the most changed paths the inspector lists (inspect.sh).
const inspectListMax = 100000

// inspectTimeout bounds each of the inspector's commands.
const inspectTimeout = 2 * time.Minute

// inspectAgent inspects the trial's container after an agent's phase (a
// multi-step task's step, named): not after nop's (nothing of an agent
// ran), nor for a separate verifier (its own image grades), nor when the
// container has stopped.
func (h *sharedTrial) inspectAgent(ctx context.Context, st *stepRun) {
	step := st.name
	if h.insp.agentStart.IsZero() {
		return
	}
	if h.a.t.Variant.Tamper == suite.TamperOff && inspected(h.a.t, true) {
		h.a.res.TamperCheck = &results.TamperCheck{Note: "not checked: tamper: off"}
		return
	}
	if !inspected(h.a.t, false) {
		return
	}
	if st.separate != nil {
		return // the step's own image grades it
	}
	if h.insp.agentEnd == nil {
		if st, err := h.a.s.Engine.State(ctx, h.container); err != nil || !st.Running {
			h.checked(step, nil, "the task's container stopped during the agent's phase")
			return
		}
	}
	h.inspect(ctx, step, h.insp.agentStart)
}

// inspected reports whether a Harbor-model trial's agent phase is
// inspected: not nop's (nothing of an agent ran), not a separate
// verifier's task (its own image grades), and not under tamper: off
// unless evenIfOff.
func inspected(t *suite.Trial, evenIfOff bool) bool {
	if t.Variant.Agent == suite.AgentNop || !sharedVerifier(t.Task) {
		return false
	}
	return evenIfOff || t.Variant.Tamper != suite.TamperOff
}

// sharedVerifier reports whether a verifier of the task runs in the
// agent's container: the task's, or a step's.
func sharedVerifier(t *tasks.Task) bool {
	if len(t.Config.Steps) == 0 {
		_, separate := t.SeparateVerifier()
		return !separate
	}
	for _, s := range t.Config.Steps {
		if _, separate := t.StepSeparateVerifier(s.Name); !separate {
			return true
		}
	}
	return false
}

// restartForInspect starts again a container the agent's timeout stopped,
// as the verifier would have it started, so that the inspector can read
// it; the engine's list of what changed in it is taken first.
func (h *sharedTrial) restartForInspect(ctx context.Context, ag agent.Result) error {
	h.insp.stoppedChanges = nil
	if ag.TimedOut {
		h.insp.agentEnd = nil
	}
	if !ag.TimedOut || !inspected(h.a.t, false) {
		return nil
	}
	st, err := h.a.s.Engine.State(ctx, h.container)
	if err != nil || st.Running || st.Missing {
		return err
	}
	changed, err := h.a.s.Engine.ChangedPaths(ctx, h.container)
	if err != nil {
		// Not checked (the container stays stopped), never the trial's failure.
		h.a.s.Report.Note(h.a.t, "tamper check: list the stopped container's changes: "+err.Error())
		return nil
	}
	h.insp.stoppedChanges = make(map[string]bool, len(changed))
	for _, p := range changed {
		h.insp.stoppedChanges[p] = true
	}
	return h.ready(ctx, false)
}

// inspect runs the tamper inspector over the trial's container for the
// changes made since (a time of this host's) and records what it found.
// What fails is said; it is never the trial's failure.
func (h *sharedTrial) inspect(ctx context.Context, step string, since time.Time) {
	findings, installed, err := h.tamperFindings(ctx, since)
	if err != nil {
		h.checked(step, nil, err.Error())
		h.a.s.Report.Note(h.a.t, "tamper check: not checked: "+err.Error())
		return
	}
	if step != "" {
		for i := range findings {
			findings[i].Evidence = "step " + step + ": " + findings[i].Evidence
		}
	}
	h.checked(step, installed, "")
	h.addTamper(findings...)
}

// checked records one inspection in the result's tamper check: checked
// when every inspection of the trial (one per step) was, with what kept
// each one that was not.
func (h *sharedTrial) checked(step string, installed []string, notChecked string) {
	c := h.a.res.TamperCheck
	if c == nil {
		c = &results.TamperCheck{Checked: true}
		h.a.res.TamperCheck = c
	}
	c.Installed = append(c.Installed, installed...)
	if notChecked == "" {
		return
	}
	c.Checked = false
	if step != "" {
		notChecked = "step " + step + ": " + notChecked
	}
	if c.Note == "" {
		c.Note = "not checked: " + notChecked
	} else {
		c.Note += "; " + notChecked
	}
}

// addTamper records findings in the result and the progress.
func (h *sharedTrial) addTamper(findings ...tamper.Finding) {
	for _, f := range findings {
		h.a.res.Tamper = append(h.a.res.Tamper, f)
		h.a.s.Report.Note(h.a.t, fmt.Sprintf("tamper: %s %s: %s", f.Kind, f.Path, f.Evidence))
	}
}

func (h *sharedTrial) tamperFindings(ctx context.Context, since time.Time) ([]tamper.Finding, []string, error) {
	s, t := h.a.s, h.a.t
	var target sandbox.State
	var err error
	if h.insp.agentEnd != nil {
		// Checked again once read, below.
		target = *h.insp.agentEnd
	} else if target, err = s.Engine.State(ctx, h.container); err != nil {
		return nil, nil, err
	}
	if !target.Running || target.Pid <= 0 {
		return nil, nil, errors.New("the task's container is not running")
	}
	inspector, err := s.Inspector.container(ctx)
	if err != nil {
		return nil, nil, err
	}
	c := sandbox.Container{ID: inspector}
	pid := strconv.Itoa(target.Pid)
	engineSince := since.Add(s.ClockOffset)
	stamp := strconv.FormatFloat(float64(engineSince.UnixNano())/1e9, 'f', 3, 64)
	sc := tamper.Scope{WorkDir: h.workdir, PathDirs: tamper.PathDirs(imagePath(h.info.Env)),
		Oracle: t.Variant.Agent == suite.AgentOracle}
	var env []string
	if target.Layer != "" {
		env = []string{"INSPECT_LAYER=" + target.Layer}
	}
	out, err := h.runInspector(ctx, c.ID, env, append([]string{pid, "list", stamp, h.workdir}, tamper.Unwalked(sc.PathDirs)...)...)
	if err != nil {
		return nil, nil, err
	}
	changes := parseChanges(out)
	procs := parseProcesses(out)
	if h.insp.stoppedChanges != nil {
		changes = slices.DeleteFunc(changes, func(c tamper.Change) bool { return !h.insp.stoppedChanges[c.Path] })
	}
	candidates := tamper.Candidates(changes, sc)
	var findings []tamper.Finding
	var installed []string
	if len(candidates) > 0 {
		args := []string{pid, "dpkg"}
		for i, f := range candidates {
			if i == 1000 {
				break
			}
			args = append(args, f.Path)
		}
		if out, err = h.runInspector(ctx, c.ID, nil, args...); err != nil {
			return nil, nil, err
		}
		findings, installed = tamper.Judge(candidates, parseRecords(out))
		if findings, err = h.newTools(ctx, findings, sc.PathDirs); err != nil {
			return nil, nil, err
		}
	}
	// What was read is the trial's container only if its main process is
	// the one it was when the inspector began.
	if after, err := s.Engine.State(ctx, h.container); err != nil || !after.Running || after.Pid != target.Pid {
		return nil, nil, errors.New("the task's container stopped while it was read")
	}
	h.insp.leftovers = procs.leftovers(target.Pid, h.insp.before, h.ownCutoff())
	if len(changes) >= inspectListMax {
		findings = append(findings, tamper.Finding{Path: "/", Kind: "incomplete",
			Evidence: fmt.Sprintf("more than %d paths changed outside the work dir: only the first were judged", inspectListMax)})
	}
	return findings, installed, nil
}

// newTools drops the tools on PATH the agent added rather than replaced:
// those the task's image does not have and that shadow no tool of the same
// name later on PATH (a task may ask for a tool of its own). The image is
// read from a container created from it, which never starts.
func (h *sharedTrial) newTools(ctx context.Context, findings []tamper.Finding, pathDirs []string) ([]tamper.Finding, error) {
	if !slices.ContainsFunc(findings, func(f tamper.Finding) bool { return f.Kind == tamper.KindTool }) {
		return findings, nil
	}
	s, t := h.a.s, h.a.t
	c, err := s.Engine.Start(ctx, sandbox.ContainerSpec{Image: h.img.Ref, Name: "image-" + t.ID, RunID: s.RunID, TrialID: t.ID,
		CreateOnly: true, Labels: map[string]string{sandbox.LabelPhase: "inspect"}})
	if c.ID != "" {
		defer h.a.removeContainer(c.ID, "", func() bool { return false })(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("read the task's image: %w", err)
	}
	exists := func(id, p string) (bool, error) {
		_, err := s.Engine.StatPath(ctx, id, p)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return err == nil, err
	}
	var out []tamper.Finding
	for _, f := range findings {
		if f.Kind != tamper.KindTool {
			out = append(out, f)
			continue
		}
		inImage, err := exists(c.ID, f.Path)
		if err != nil {
			return nil, err
		}
		if inImage {
			f.Evidence = "replaced in " + path.Dir(f.Path) + ", a directory on the verifier's PATH: the image has its own " + f.Path
			out = append(out, f)
			continue
		}
		later := pathDirs[slices.Index(pathDirs, path.Dir(f.Path))+1:]
		for _, d := range later {
			other := path.Join(d, path.Base(f.Path))
			shadows, err := exists(h.container, other)
			if err != nil {
				return nil, err
			}
			if shadows {
				f.Evidence = "added in " + path.Dir(f.Path) + ", before " + other + " on the verifier's PATH"
				out = append(out, f)
				break
			}
		}
	}
	return out, nil
}

// runInspector runs inspect.sh with args (and env) in the inspector and
// returns its output.
func (h *sharedTrial) runInspector(ctx context.Context, id string, env []string, args ...string) ([]byte, error) {
	outPath := filepath.Join(h.a.scratch, "inspect.out")
	errPath := filepath.Join(h.a.scratch, "inspect.err")
	cmd := append([]string{"bash", "-c", inspectScript, "inspect.sh"}, args...)
	mode := args[1]
	res, err := h.a.s.Engine.Exec(ctx, id, sandbox.ExecSpec{Cmd: cmd, Env: env, User: "0", StdoutPath: outPath, StderrPath: errPath,
		MaxOutput: 64 << 20, Timeout: inspectTimeout})
	if err == nil && (res.TimedOut || res.ExitCode != 0) {
		msg, _ := os.ReadFile(errPath)
		err = fmt.Errorf("inspect.sh %s: exit %d: %s", mode, res.ExitCode, text.LastLines(string(msg), 3))
	}
	if err != nil {
		return nil, err
	}
	return os.ReadFile(outPath)
}

// parseChanges reads inspect.sh list's "TYPE /PATH\0" entries.
func parseChanges(out []byte) []tamper.Change {
	var changes []tamper.Change
	for _, e := range bytes.Split(out, []byte{0}) {
		if len(e) < 3 || e[1] != ' ' || e[0] == 'P' || e[0] == 'K' {
			continue // not find's: the process listing
		}
		changes = append(changes, tamper.Change{Type: e[0], Path: string(e[2:])})
	}
	return changes
}

// containerProcesses is inspect.sh list's listing of the container's
// processes.
type containerProcesses struct {
	listed bool
	procs  []listedProcess
	ticks  float64   // clock ticks a second
	boot   time.Time // the engine host's boot, by its clock
}

// listedProcess is one process of the container: its PID in the engine
// host's namespace and its start, in clock ticks since boot.
type listedProcess struct {
	pid   int
	start int64
}

// parseProcesses reads inspect.sh list's "P PID START\0" entries and its
// "K TICKS UPTIME NOW\0" entry, which ends the listing.
func parseProcesses(out []byte) containerProcesses {
	var c containerProcesses
	for _, e := range bytes.Split(out, []byte{0}) {
		f := strings.Fields(string(e))
		switch {
		case len(f) == 3 && f[0] == "P":
			pid, err1 := strconv.Atoi(f[1])
			start, err2 := strconv.ParseInt(f[2], 10, 64)
			if err1 == nil && err2 == nil {
				c.procs = append(c.procs, listedProcess{pid, start})
			}
		case len(f) == 4 && f[0] == "K":
			ticks, err1 := strconv.ParseFloat(f[1], 64)
			up, err2 := strconv.ParseFloat(f[2], 64)
			now, err3 := strconv.ParseFloat(f[3], 64)
			if err1 == nil && err2 == nil && err3 == nil && ticks > 0 {
				c.ticks = ticks
				c.boot = time.Unix(0, int64((now-up)*1e9))
				c.listed = true
			}
		}
	}
	return c
}

// leftovers says whether any listed process is not the container's own:
// its main process (init), or one listed in before and started by cutoff
// (the engine's clock).
func (c containerProcesses) leftovers(init int, before []sandbox.Process, cutoff time.Time) leftoverState {
	if !c.listed {
		return leftoversUnknown
	}
	own := map[int]bool{}
	for _, p := range before {
		own[p.PID] = true
	}
	for _, p := range c.procs {
		started := c.boot.Add(time.Duration(float64(p.start) / c.ticks * float64(time.Second)))
		if p.pid != init && (!own[p.pid] || started.After(cutoff)) {
			return leftoversSome
		}
	}
	return leftoversNone
}

// parseRecords reads inspect.sh dpkg's "PATH\tPACKAGE\tRECORD\tCONTENT" lines.
func parseRecords(out []byte) []tamper.Record {
	var recs []tamper.Record
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			continue
		}
		recs = append(recs, tamper.Record{Path: f[0], Package: f[1], RecordMD5: f[2], ContentMD5: f[3]})
	}
	return recs
}

// imagePath is the PATH an image's environment sets, "" when none.
func imagePath(env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			return v
		}
	}
	return ""
}

// Inspector is the run's tamper inspector: one container of the offline
// base image in the engine host's PID namespace, started at its first use
// (again if it stopped) and removed with the run; each inspection is a
// few execs in it, which costs a trial far less than a container of its
// own.
type Inspector struct {
	eng   sandbox.Engine
	runID string
	mu    sync.Mutex
	id    string
	early sync.WaitGroup // its start ahead of the first trial
}

// NewInspector makes the run's inspector; nothing starts until it is used.
func NewInspector(eng sandbox.Engine, runID string) *Inspector {
	return &Inspector{eng: eng, runID: runID}
}

// container returns the running inspector's id, starting it if need be.
func (in *Inspector) container(ctx context.Context) (string, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.id != "" {
		if st, err := in.eng.State(ctx, in.id); err == nil && st.Running {
			return in.id, nil
		}
		in.removeLocked(ctx)
	}
	c, err := in.eng.Start(ctx, sandbox.ContainerSpec{
		Image: images.Fallback, Name: "inspect-" + in.runID, RunID: in.runID,
		HostPID: true, ReadLayers: true, NoInit: true, Labels: map[string]string{sandbox.LabelPhase: "inspect"},
	})
	if err != nil {
		if c.ID != "" {
			in.eng.Remove(context.WithoutCancel(ctx), c.ID)
		}
		return "", fmt.Errorf("start the inspector: %w", err)
	}
	in.id = c.ID
	return c.ID, nil
}

// Remove waits for an early start and removes the inspector, if it was
// started.
func (in *Inspector) Remove(ctx context.Context) error {
	in.early.Wait()
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.removeLocked(ctx)
}

func (in *Inspector) removeLocked(ctx context.Context) error {
	if in.id == "" {
		return nil
	}
	id := in.id
	in.id = ""
	if err := in.eng.Remove(ctx, id); err != nil {
		return fmt.Errorf("remove the tamper inspector: %w", err)
	}
	return nil
}

// StartEarly starts the inspector in the background when a trial todo
// will be inspected, so that the first inspection finds it running: a
// one-trial run would otherwise wait for its start after the agent.
func (in *Inspector) StartEarly(ctx context.Context, todo []*suite.Trial) {
	for _, t := range todo {
		if t.Harbor() && inspected(t, false) {
			in.early.Add(1)
			go func() {
				defer in.early.Done()
				in.container(ctx) // an error is met again, and said, by the inspection
			}()
			return
		}
	}
}
