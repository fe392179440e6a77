// Package sandboxtest is a fake sandbox.Engine for the tests of what runs
// above the engine: the trial lifecycles, grading and steps, without a
// Docker engine.
//
// A container is a directory on the host that stands for its filesystem:
// CopyIn, WriteFiles, CopyOut and StatPath work on it (and on the host
// dirs bind-mounted into it), so the code under test moves real files.
// What a command does inside a container is the test's: Exec calls the
// Engine's Run hook with the container and the command. Every call is
// recorded in Calls, in order.
//
// The fake implements every method of sandbox.Engine, so a new method of
// the interface fails to compile here rather than panicking in a test. A
// call a test needs to fail is made to through the Fail hook; a call on a
// container the fake does not have fails with ErrNoContainer.
package sandboxtest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/flightdeck/flightdeck/internal/files"
	"github.com/flightdeck/flightdeck/sandbox"
)

// Engine is the fake. The zero value is not usable: call New.
type Engine struct {
	root string

	// Image is what InspectImage answers for every image (its Workdir
	// defaults to "/app").
	Image sandbox.ImageInfo
	// ImageFiles are the files of every image, relative paths under "/",
	// copied into each container's filesystem at Start.
	ImageFiles map[string]string
	// Build makes EnsureImage's image; nil gives "flightdeck/NAME:fake".
	Build func(spec sandbox.BuildSpec) (sandbox.Image, error)
	// Inspect, when set, is InspectImage's answer for ref (an engine
	// with some images and not others); nil answers Image for every ref.
	Inspect func(ref string) (sandbox.ImageInfo, error)
	// Run is what an exec does in a container; nil: it does nothing and
	// exits 0. It may read and write c's filesystem through c.Path.
	Run func(ctx context.Context, c *Container, spec sandbox.ExecSpec) (sandbox.ExecResult, error)
	// Started, when set, is called with each container once it exists
	// (to set its Health, say).
	Started func(c *Container)
	// Fail, when it returns an error for a method's name ("Start",
	// "Exec", …) and the container (or "" for none), makes that call fail
	// with it before it does anything. Start asks twice: with "" before
	// the container exists, and with its ID once it does — a container
	// created but not started, which the engine returns with the error.
	Fail func(method, containerID string) error
	// StateOf, when set, makes State's answer for a container the test's:
	// it gets what the fake would answer (the n-th call for that
	// container, from 0) and returns what State does.
	StateOf func(c *Container, n int, st sandbox.State) (sandbox.State, error)

	mu         sync.Mutex
	n          int
	containers map[string]*Container
	removed    map[string]*Container
	calls      []string
	snapshots  map[string]string // image ID → the root dir it was committed from (copied)
}

// Container is one fake container.
type Container struct {
	ID   string
	Spec sandbox.ContainerSpec
	// Root is the host dir that stands for the container's filesystem.
	Root string
	// Running is false after Stop, true again after Restart.
	Running bool
	// ExitCode is State's exit code once it stopped.
	ExitCode int
	// Online follows SetNetwork (and starts as Spec.Network).
	Online bool
	// Processes and Changes are what the engine reports; the test sets
	// them (from Run, say).
	Processes []sandbox.Process
	Changes   []sandbox.Change
	// Killed is what Killed and KilledSince answer.
	Killed bool
	// Health is State's Health.
	Health string
	// Execs are the commands run in the container, in order.
	Execs []sandbox.ExecSpec
	// HandedBack are HandBack's calls, "PATH UID:GID", in order.
	HandedBack []string
	// RemoveCtxErr is the error of Remove's context when it was called:
	// nil when removal ran on a context the caller's cancellation did not
	// reach.
	RemoveCtxErr error

	states int // State calls so far
}

// New returns a fake engine whose containers live under t's temp dir.
func New(root string) *Engine {
	return &Engine{root: root, Image: sandbox.ImageInfo{ID: "sha256:fake", Workdir: "/app"},
		containers: map[string]*Container{}, removed: map[string]*Container{}, snapshots: map[string]string{}}
}

var _ sandbox.Engine = (*Engine)(nil)

// ErrNoContainer is the error for a container the fake never started or
// already removed.
var ErrNoContainer = errors.New("sandboxtest: no such container")

// Path is the host path of p in the container: under a bind mount's host
// dir where p is under a mount, else under Root.
func (c *Container) Path(p string) string {
	p = path.Clean("/" + p)
	best := -1
	host := ""
	for _, m := range c.Spec.Mounts {
		cp := path.Clean(m.ContainerPath)
		if (p == cp || strings.HasPrefix(p, cp+"/")) && len(cp) > best {
			best, host = len(cp), filepath.Join(m.HostPath, filepath.FromSlash(strings.TrimPrefix(p, cp)))
		}
	}
	if best >= 0 {
		return host
	}
	return filepath.Join(c.Root, filepath.FromSlash(p))
}

// Phase is the container's flightdeck.phase label.
func (c *Container) Phase() string { return c.Spec.Labels["flightdeck.phase"] }

// Calls are the calls made so far, "Method" or "Method ID", in order.
func (e *Engine) Calls() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.calls...)
}

// Containers are the containers started so far, removed or not, in the
// order they started.
func (e *Engine) Containers() []*Container {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []*Container
	for _, m := range []map[string]*Container{e.containers, e.removed} {
		for _, c := range m {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return idNumber(out[i].ID) < idNumber(out[j].ID) })
	return out
}

// Live are the containers not removed.
func (e *Engine) Live() []*Container {
	var out []*Container
	for _, c := range e.Containers() {
		if e.container(c.ID) != nil {
			out = append(out, c)
		}
	}
	return out
}

func idNumber(id string) int {
	var n int
	fmt.Sscanf(id, "c%d", &n)
	return n
}

func (e *Engine) container(id string) *Container {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.containers[id]
}

// call records a call and asks Fail about it; it returns the container
// for id ("" for none), or an error.
func (e *Engine) call(method, id string) (*Container, error) {
	e.mu.Lock()
	if id == "" {
		e.calls = append(e.calls, method)
	} else {
		e.calls = append(e.calls, method+" "+id)
	}
	c := e.containers[id]
	e.mu.Unlock()
	if e.Fail != nil {
		if err := e.Fail(method, id); err != nil {
			return nil, err
		}
	}
	if id != "" && c == nil {
		return nil, fmt.Errorf("%s %s: %w", method, id, ErrNoContainer)
	}
	return c, nil
}

func (e *Engine) Preflight(context.Context) (sandbox.Info, error) {
	if _, err := e.call("Preflight", ""); err != nil {
		return sandbox.Info{}, err
	}
	return sandbox.Info{ServerVersion: "fake", APIVersion: "1.41", StorageDriver: "fake", CgroupVersion: "2",
		CPUs: 2, Memory: 8 << 30, FreeDisk: -1}, nil
}

// ProbeBindMount: a fake's bind mounts are always visible.
func (e *Engine) ProbeBindMount(context.Context) (bool, string) {
	_, _ = e.call("ProbeBindMount", "")
	return true, ""
}

func (e *Engine) EnsureImage(_ context.Context, spec sandbox.BuildSpec) (sandbox.Image, error) {
	if _, err := e.call("EnsureImage", ""); err != nil {
		return sandbox.Image{}, err
	}
	if e.Build != nil {
		return e.Build(spec)
	}
	return sandbox.Image{Ref: "flightdeck/" + spec.Name + ":fake", ID: "sha256:fake"}, nil
}

func (e *Engine) InspectImage(_ context.Context, ref string) (sandbox.ImageInfo, error) {
	if _, err := e.call("InspectImage", ""); err != nil {
		return sandbox.ImageInfo{}, err
	}
	if e.Inspect != nil {
		return e.Inspect(ref)
	}
	return e.Image, nil
}

func (e *Engine) Start(_ context.Context, spec sandbox.ContainerSpec) (sandbox.Container, error) {
	if _, err := e.call("Start", ""); err != nil {
		return sandbox.Container{}, err
	}
	e.mu.Lock()
	e.n++
	id := fmt.Sprintf("c%d", e.n)
	snapshot := e.snapshots[spec.Image]
	e.mu.Unlock()
	c := &Container{ID: id, Spec: spec, Root: filepath.Join(e.root, id), Running: true, Online: spec.Network}
	if err := os.MkdirAll(c.Root, 0o755); err != nil {
		return sandbox.Container{}, err
	}
	if snapshot != "" {
		if err := files.CopyTree(snapshot, c.Root); err != nil {
			return sandbox.Container{}, err
		}
	} else {
		for rel, body := range e.ImageFiles {
			p := c.Path(rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return sandbox.Container{}, err
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				return sandbox.Container{}, err
			}
		}
	}
	dirs := spec.Dirs
	if e.Image.Workdir != "" {
		dirs = append([]string{e.Image.Workdir}, dirs...)
	}
	for _, d := range dirs {
		if err := os.MkdirAll(c.Path(d), 0o777); err != nil {
			return sandbox.Container{}, err
		}
	}
	if e.Started != nil {
		e.Started(c)
	}
	e.mu.Lock()
	e.containers[id] = c
	e.mu.Unlock()
	if e.Fail != nil {
		if err := e.Fail("Start", id); err != nil {
			c.Running = false
			return sandbox.Container{ID: id}, err
		}
	}
	return sandbox.Container{ID: id}, nil
}

func (e *Engine) Exec(ctx context.Context, id string, spec sandbox.ExecSpec) (sandbox.ExecResult, error) {
	c, err := e.call("Exec", id)
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	if !c.Running {
		return sandbox.ExecResult{}, fmt.Errorf("exec in %s: the container is not running", id)
	}
	e.mu.Lock()
	c.Execs = append(c.Execs, spec)
	e.mu.Unlock()
	if spec.StdoutPath != "" {
		if err := os.WriteFile(spec.StdoutPath, nil, 0o644); err != nil {
			return sandbox.ExecResult{}, err
		}
	}
	if e.Run == nil {
		return sandbox.ExecResult{}, nil
	}
	return e.Run(ctx, c, spec)
}

func (e *Engine) CopyIn(_ context.Context, id, hostDir, dir string, _ sandbox.Owner) error {
	c, err := e.call("CopyIn", id)
	if err != nil {
		return err
	}
	return files.CopyTree(hostDir, c.Path(dir))
}

func (e *Engine) WriteFiles(_ context.Context, id, dir string, files []sandbox.File, _ sandbox.Owner) error {
	c, err := e.call("WriteFiles", id)
	if err != nil {
		return err
	}
	for _, f := range files {
		p := filepath.Join(c.Path(dir), filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		mode := fs.FileMode(f.Mode)
		if mode == 0 {
			mode = 0o644
		}
		if err := os.WriteFile(p, f.Data, mode); err != nil {
			return err
		}
	}
	return nil
}

// CopyOut copies as the engine's does: a directory's contents land in
// hostDir, a file as hostDir/<name>; a missing path is fs.ErrNotExist.
func (e *Engine) CopyOut(_ context.Context, id, p, hostDir string, _ sandbox.CopyLimits) error {
	c, err := e.call("CopyOut", id)
	if err != nil {
		return err
	}
	src := c.Path(p)
	fi, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("copy %s out of %s: %w", p, id, err)
	}
	if err := os.MkdirAll(hostDir, 0o755); err != nil {
		return err
	}
	if !fi.IsDir() {
		return files.CopyFile(src, filepath.Join(hostDir, filepath.Base(src)), fi.Mode())
	}
	return files.CopyTree(src, hostDir)
}

func (e *Engine) State(_ context.Context, id string) (sandbox.State, error) {
	e.mu.Lock()
	e.calls = append(e.calls, "State "+id)
	c := e.containers[id]
	e.mu.Unlock()
	if e.Fail != nil {
		if err := e.Fail("State", id); err != nil {
			return sandbox.State{}, err
		}
	}
	if c == nil {
		return sandbox.State{Missing: true}, nil
	}
	st := sandbox.State{Running: c.Running, Health: c.Health}
	if c.Running {
		st.Pid = 1000 + idNumber(id)
	} else {
		st.ExitCode = c.ExitCode
	}
	if e.StateOf != nil {
		e.mu.Lock()
		n := c.states
		c.states++
		e.mu.Unlock()
		return e.StateOf(c, n, st)
	}
	return st, nil
}

func (e *Engine) Killed(_ context.Context, id string) (bool, error) {
	c, err := e.call("Killed", id)
	if err != nil {
		return false, err
	}
	return c.Killed, nil
}

func (e *Engine) KilledSince(_ context.Context, id string, _ time.Time) (bool, error) {
	c, err := e.call("KilledSince", id)
	if err != nil {
		return false, err
	}
	return c.Killed, nil
}

func (e *Engine) Stop(_ context.Context, id string) error {
	c, err := e.call("Stop", id)
	if err != nil {
		return err
	}
	c.Running = false
	return nil
}

func (e *Engine) Restart(_ context.Context, id string) error {
	c, err := e.call("Restart", id)
	if err != nil {
		return err
	}
	c.Running = true
	return nil
}

func (e *Engine) Logs(_ context.Context, id, p string, _ int64) error {
	if _, err := e.call("Logs", id); err != nil {
		return err
	}
	return os.WriteFile(p, nil, 0o644)
}

func (e *Engine) Changes(_ context.Context, id string) ([]sandbox.Change, error) {
	c, err := e.call("Changes", id)
	if err != nil {
		return nil, err
	}
	return append([]sandbox.Change(nil), c.Changes...), nil
}

func (e *Engine) ChangedPaths(_ context.Context, id string) ([]string, error) {
	c, err := e.call("ChangedPaths", id)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ch := range c.Changes {
		out = append(out, ch.Path)
	}
	return out, nil
}

func (e *Engine) PeakMemory(_ context.Context, id string) (int64, error) {
	_, err := e.call("PeakMemory", id)
	return 0, err
}

func (e *Engine) Processes(_ context.Context, id string) ([]sandbox.Process, error) {
	c, err := e.call("Processes", id)
	if err != nil {
		return nil, err
	}
	return append([]sandbox.Process(nil), c.Processes...), nil
}

func (e *Engine) StatPath(_ context.Context, id, p string) (fs.FileMode, error) {
	c, err := e.call("StatPath", id)
	if err != nil {
		return 0, err
	}
	fi, err := os.Lstat(c.Path(p))
	if err != nil {
		return 0, err
	}
	return fi.Mode(), nil
}

func (e *Engine) SetNetwork(_ context.Context, id string, on bool) error {
	c, err := e.call("SetNetwork", id)
	if err != nil {
		return err
	}
	c.Online = on
	return nil
}

// Commit snapshots the container's own filesystem (not its mounts): a
// container started from the returned image starts with a copy of it.
func (e *Engine) Commit(_ context.Context, id string, _ map[string]string) (string, error) {
	c, err := e.call("Commit", id)
	if err != nil {
		return "", err
	}
	e.mu.Lock()
	e.n++
	image := fmt.Sprintf("sha256:snapshot%d", e.n)
	e.mu.Unlock()
	dir := filepath.Join(e.root, "images", strings.TrimPrefix(image, "sha256:"))
	if err := files.CopyTree(c.Root, dir); err != nil {
		return "", err
	}
	e.mu.Lock()
	e.snapshots[image] = dir
	e.mu.Unlock()
	return image, nil
}

func (e *Engine) HandBack(_ context.Context, id, p string, owner sandbox.Owner) error {
	c, err := e.call("HandBack", id)
	if err != nil {
		return err
	}
	e.mu.Lock()
	c.HandedBack = append(c.HandedBack, fmt.Sprintf("%s %d:%d", p, owner.UID, owner.GID))
	e.mu.Unlock()
	return nil
}

func (e *Engine) Remove(ctx context.Context, id string) error {
	if c := e.container(id); c != nil {
		c.RemoveCtxErr = ctx.Err()
	}
	c, err := e.call("Remove", id)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	c.Running = false
	delete(e.containers, id)
	e.removed[id] = c
	return nil
}

func (e *Engine) RemoveImage(_ context.Context, ref string) error {
	if _, err := e.call("RemoveImage", ""); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.snapshots, ref)
	return nil
}

func (e *Engine) CreateNetwork(_ context.Context, spec sandbox.NetworkSpec) (string, error) {
	if _, err := e.call("CreateNetwork", ""); err != nil {
		return "", err
	}
	return "flightdeck-net-" + spec.TrialID, nil
}

func (e *Engine) RemoveNetwork(context.Context, string) error {
	_, err := e.call("RemoveNetwork", "")
	return err
}

func (e *Engine) CreateVolume(_ context.Context, _, trialID, hint string) (string, error) {
	if _, err := e.call("CreateVolume", ""); err != nil {
		return "", err
	}
	return "flightdeck-vol-" + trialID + "-" + hint, nil
}

func (e *Engine) RemoveVolume(context.Context, string) error {
	_, err := e.call("RemoveVolume", "")
	return err
}

// Reap removes every live container (the fake's objects all belong to
// the run under test).
func (e *Engine) Reap(context.Context, sandbox.ReapOptions) (sandbox.Reaped, error) {
	if _, err := e.call("Reap", ""); err != nil {
		return sandbox.Reaped{}, err
	}
	return sandbox.Reaped{}, nil
}
