// Package sandbox is the only package that talks to the Docker engine. The
// rest of flightdeck sees the Engine interface: domain verbs over plain values,
// so that a fake can stand in for unit tests of other packages.
//
// Its API: New and NewWithOptions (a *Docker, the Engine), the Engine's
// values (ContainerSpec, ExecSpec, Image, ...), labels, Reap (gc), image
// maps and DockerfileBases. Sentinel errors (ErrImageMissing, ErrBuildFailed,
// ErrCopyLimit, ...) and label kinds are exported whole, for errors.Is and
// for the labels a user filters on, whether or not another package tests
// for each one.
package sandbox

import (
	"context"
	"io"
	"io/fs"
	"time"
)

// Label keys carried by every object flightdeck creates on the engine.
const (
	LabelManaged   = "flightdeck.managed"
	LabelRun       = "flightdeck.run"
	LabelTrial     = "flightdeck.trial"
	LabelOwnerHost = "flightdeck.owner.host"
	LabelOwnerPID  = "flightdeck.owner.pid"
	LabelCreated   = "flightdeck.created"
	LabelKind      = "flightdeck.kind" // "task-image", "snapshot", "container"
	// LabelKeep marks what a run kept on purpose (--keep): a later run's
	// reap of orphans leaves it; gc removes it.
	LabelKeep = "flightdeck.keep"
	// LabelPhase names a container's part in its trial: "agent", "seed",
	// "grade", "inspect", "service", "egress", "audit".
	LabelPhase = "flightdeck.phase"
	// LabelTest marks what a test suite's processes create (Options.Test):
	// a reaper of orphans takes only objects whose test label is its own,
	// so a real run never reaps a test's containers, nor a test a user's.
	LabelTest = "flightdeck.test"
)

// TestEnv is the environment variable that makes a process's objects a
// test suite's (its value is Options.Test's): flightdeck's own tests set
// it for every process they start.
const TestEnv = "FLIGHTDECK_TEST"

// Engine is what flightdeck needs of a container engine.
type Engine interface {
	// Preflight checks once that the engine answers and describes it.
	Preflight(ctx context.Context) (Info, error)
	// ProbeBindMount checks that a host directory (under Options.ProbeDir)
	// bind-mounted into a container is visible there; when it is not,
	// warning says what to share with the engine.
	ProbeBindMount(ctx context.Context) (ok bool, warning string)

	// EnsureImage returns the image for a build spec, building it only when
	// no image with its content tag exists. Concurrent calls for one spec
	// build once.
	EnsureImage(ctx context.Context, spec BuildSpec) (Image, error)
	// InspectImage describes a local image (after the image map is applied).
	InspectImage(ctx context.Context, ref string) (ImageInfo, error)

	// Start creates and starts a container.
	Start(ctx context.Context, spec ContainerSpec) (Container, error)
	// Exec runs a command in a running container. A timeout kills the
	// container (an exec'd process cannot be stopped any other way) and
	// returns TimedOut with ExitCode -1 and no error; cancelling ctx kills
	// it too. A container that dies or is removed meanwhile gives an error
	// matching ErrContainerGone.
	Exec(ctx context.Context, containerID string, spec ExecSpec) (ExecResult, error)
	// CopyIn copies the contents of a host directory into dir in the
	// container (dir is created when missing), owned by uid:gid.
	CopyIn(ctx context.Context, containerID, hostDir, dir string, owner Owner) error
	// WriteFiles writes in-memory files under dir in the container.
	WriteFiles(ctx context.Context, containerID, dir string, files []File, owner Owner) error
	// CopyOut extracts path from the container into hostDir, refusing
	// absolute paths, "..", escaping links and devices, within limits. A
	// directory's contents land directly in hostDir, a file as
	// hostDir/<name>; a missing path matches fs.ErrNotExist.
	CopyOut(ctx context.Context, containerID, path, hostDir string, limits CopyLimits) error
	// State reports whether the container runs and how it ended.
	State(ctx context.Context, containerID string) (State, error)
	// Killed reports whether a client of the engine asked it to kill, stop
	// or remove the container since its creation: a container that stopped
	// with no such request was stopped by its own processes or the kernel.
	Killed(ctx context.Context, containerID string) (bool, error)
	// KilledSince is Killed counting only requests made after since.
	KilledSince(ctx context.Context, containerID string, since time.Time) (bool, error)
	// Stop kills a container's processes and leaves it stopped.
	Stop(ctx context.Context, containerID string) error
	// Restart starts a stopped container again: its entrypoint and command
	// run anew on the filesystem it had. A running container is left as it is.
	Restart(ctx context.Context, containerID string) error
	// Logs writes the container's own output (its entrypoint's and
	// command's, not an exec's) to path, at most max bytes of it.
	Logs(ctx context.Context, containerID, path string, max int64) error
	// Changes lists the paths the container added, changed or deleted in
	// its filesystem against its image, as the engine records them.
	Changes(ctx context.Context, containerID string) ([]Change, error)
	// ChangedPaths lists the paths Changes lists, faster where the engine
	// can read a container's writable layer directly (its own diff walks
	// the whole image on overlay drivers): the paths only, no kinds.
	ChangedPaths(ctx context.Context, containerID string) ([]string, error)
	// PeakMemory is the most memory the container has used since it
	// started, where the engine reports it (0 where it does not).
	PeakMemory(ctx context.Context, containerID string) (int64, error)
	// Processes lists the processes running in the container, as the
	// engine sees them.
	Processes(ctx context.Context, containerID string) ([]Process, error)
	// StatPath reports the mode of a path in the container (running or
	// not); a missing path matches fs.ErrNotExist.
	StatPath(ctx context.Context, containerID, path string) (fs.FileMode, error)
	// SetNetwork gives a container started with Network the default
	// network (on) or takes it away (off): a container keeps its processes
	// across phases whose network differs.
	SetNetwork(ctx context.Context, containerID string, on bool) error
	// Commit snapshots a container as an image carrying labels and
	// returns the image's ID.
	Commit(ctx context.Context, containerID string, labels map[string]string) (string, error)
	// HandBack gives files under path (a bind-mounted host dir, seen from
	// the container) to uid:gid, so a user who is not root can delete them.
	// It works on a stopped container too.
	HandBack(ctx context.Context, containerID, path string, owner Owner) error
	// Remove force-removes a container and its anonymous volumes.
	Remove(ctx context.Context, containerID string) error
	// RemoveImage removes an image flightdeck created (a snapshot).
	RemoveImage(ctx context.Context, ref string) error
	// CreateNetwork creates a private network for one trial's containers
	// and returns its name.
	CreateNetwork(ctx context.Context, spec NetworkSpec) (string, error)
	// RemoveNetwork removes a network CreateNetwork made.
	RemoveNetwork(ctx context.Context, name string) error
	// CreateVolume creates a named volume for one trial and returns its name.
	CreateVolume(ctx context.Context, runID, trialID, hint string) (string, error)
	// RemoveVolume removes a volume CreateVolume made.
	RemoveVolume(ctx context.Context, name string) error
	// Reap removes flightdeck's objects selected by opts.
	Reap(ctx context.Context, opts ReapOptions) (Reaped, error)
}

// Change is one path a container changed against its image.
type Change struct {
	Path string
	Kind string // "A" added, "C" changed, "D" deleted
}

// Info describes the engine, as Preflight found it.
type Info struct {
	ServerVersion string
	APIVersion    string
	StorageDriver string
	CgroupVersion string
	Rootless      bool
	// ClockOffset is the engine's clock minus this host's, as read once
	// (0 when the engine does not say): a time of this host's, plus the
	// offset, compares with the times of the engine's files.
	ClockOffset time.Duration
	// The engine's capacity: its CPUs and memory, and the free space on
	// its data root (-1 when this host cannot read it: a remote engine).
	CPUs     int
	Memory   int64
	DataRoot string
	FreeDisk int64
	Warnings []string
}

// BuildSpec says how to get a task's image.
type BuildSpec struct {
	Name        string            // the repository part of the tag: flightdeck/<Name>:<digest16>
	ContextDir  string            // environment/, sent as a deterministic context
	Dockerfile  string            // relative to ContextDir; default "Dockerfile"
	Args        map[string]string // --build-arg values (a compose service's build.args)
	Target      string            // the stage to build; "" for the last
	DockerImage string            // when set, used as it is (after ImageMap): no build
	ImageMap    map[string]string // image reference → local image, applied to FROM and DockerImage
	Timeout     time.Duration     // build timeout; 0: none
	LogPath     string            // build output goes here when set
	Labels      map[string]string // extra labels on the built image
}

// Image is a usable local image.
type Image struct {
	Ref           string   // tag or reference to run
	ID            string   // engine image ID
	ContextDigest string   // sha256:... of the build context; empty for docker_image
	Built         bool     // false when an existing image was reused
	Mapped        []string // "from=to" image-map substitutions applied
	// Bases are the images the build starts from (the image map applied):
	// its content tag depends on their IDs.
	Bases []string
	// OwnSize is the bytes of its own layers (its bases' not counted),
	// when Sized: known for an image this call built.
	OwnSize int64
	Sized   bool
}

// ImageInfo is what flightdeck reads of an image's config.
type ImageInfo struct {
	ID      string
	Workdir string
	User    string
	Env     []string
	// Entrypoint is the image's own ENTRYPOINT; nil when it has none.
	Entrypoint []string
}

// Mount binds a host path into a container.
type Mount struct {
	HostPath      string
	ContainerPath string
	ReadOnly      bool
}

// ContainerSpec describes a container to start. Zero values are safe: no
// network, no mounts, not privileged, init as PID 1, a pids limit.
type ContainerSpec struct {
	Image   string
	Name    string // optional; a unique suffix is added
	RunID   string
	TrialID string
	Labels  map[string]string
	Cmd     []string // default: keep the container alive ("sleep infinity")
	// KeepEntrypoint runs the image's ENTRYPOINT with Cmd (default: the
	// keep-alive) as its command, as Harbor's compose service does;
	// otherwise Cmd replaces both.
	KeepEntrypoint bool
	// NoInit leaves out the init process flightdeck otherwise puts as PID
	// 1: the entrypoint is PID 1, as under compose, and nothing of the
	// engine's is mounted into the container's filesystem.
	NoInit  bool
	Workdir string
	Env     []string
	User    string
	Network bool // false: network mode "none"
	// Reconnectable gives a container without Network one that SetNetwork
	// can connect later: it is created on the default network and
	// disconnected before it starts (a container in mode "none" can never
	// join a network).
	Reconnectable bool
	NanoCPUs      int64
	MemoryBytes   int64
	PidsLimit     int64 // default 4096
	Mounts        []Mount
	// Dirs are directories made in the container after it is created and
	// before it starts, writable by every user (mode 0777), where they are
	// missing: Harbor mounts such directories (/logs/verifier) for the
	// whole trial, and an image's entrypoint or an agent may expect them.
	Dirs []string
	// NetworkOf joins the network namespace of another container (its
	// interfaces, its rules, its resolv.conf and hosts): main behind a
	// trial's egress gateway. It overrides Network and Service's network.
	NetworkOf string
	// HostPID puts the container in the engine host's PID namespace:
	// flightdeck's own inspector reads another container's filesystem
	// through /proc/PID/root (State.Pid) with its own tools, which nothing
	// in the other container can change, and from where that container's
	// processes can neither see nor signal it.
	HostPID bool
	// ReadLayers mounts the engine's store of containers' writable layers
	// read-only at LayersDir, where the engine keeps one (State.Layer):
	// flightdeck's own inspector reads what a container wrote there
	// without walking the whole of its filesystem. Never for a container
	// of a task's.
	ReadLayers bool
	// NetAdmin gives the container CAP_NET_ADMIN: only flightdeck's own
	// egress gateway, whose rules the containers joining it cannot change.
	NetAdmin bool
	// Service makes the container a service of a multi-container trial:
	// on a trial's network under aliases, with its own entrypoint, command,
	// healthcheck and volumes. nil for flightdeck's own containers.
	Service *ServiceSpec
	// CreateOnly creates the container and does not start it: nothing
	// runs, and its filesystem (the image's, with the work dir made) can
	// be read with CopyOut. It costs the engine far less than a start.
	CreateOnly bool
}

// ServiceSpec is what a compose service adds to a container.
type ServiceSpec struct {
	// NetworkName is the trial's network, which the container joins
	// instead of the default one (a service always has a network, so
	// ContainerSpec.Network is not needed); "" for none.
	NetworkName string
	Aliases     []string // the names others find it by on NetworkName
	Hostname    string
	// Entrypoint and Cmd replace the image's when set (ContainerSpec.Cmd
	// and KeepEntrypoint do not apply to a service).
	Entrypoint  []string
	Cmd         []string
	Healthcheck *Healthcheck
	Volumes     []VolumeMount
	Tmpfs       []string
}

// Healthcheck is a container's health test, run by the engine.
type Healthcheck struct {
	Test        []string // "CMD", args... or "CMD-SHELL", command; "NONE" turns the image's off
	Interval    time.Duration
	Timeout     time.Duration
	StartPeriod time.Duration
	Retries     int
}

// VolumeMount mounts a named volume (CreateVolume) into a container.
type VolumeMount struct {
	Volume   string
	Target   string
	ReadOnly bool
}

// Container is a started container.
type Container struct {
	ID       string
	Name     string
	Warnings []string // limits the engine dropped, and other create warnings
}

// ExecSpec is a command to run in a container.
type ExecSpec struct {
	Cmd        []string
	Env        []string
	User       string
	Workdir    string
	StdoutPath string        // captured here (created/truncated); "" discards
	StderrPath string        // "" merges into StdoutPath
	MaxOutput  int64         // per stream; default 16 MiB; the rest is dropped
	Timeout    time.Duration // 0: none; when exceeded the container is killed
	// Filter, when set, stands between each captured stream and its file:
	// the file gets what the filter writes, from the first byte on (the
	// runner masks secrets so). MaxOutput caps what the filter writes.
	Filter OutputFilter
	// Stdio, when set, connects the exec to a person's terminal or pipes
	// instead of capturing its output (the output paths, MaxOutput and
	// Filter do not apply).
	Stdio *Stdio
}

// Stdio is what an interactive exec is connected to.
type Stdio struct {
	In  io.Reader // nil: no input
	Out io.Writer
	Err io.Writer // with a TTY the terminal's one stream goes to Out
	// TTY gives the exec a terminal (the caller puts its own in raw mode).
	TTY bool
	// Size is the terminal's size; Resized says when it changed.
	Size    func() (width, height uint)
	Resized <-chan struct{}
}

// ExecResult is how an exec ended.
type ExecResult struct {
	ExitCode  int
	TimedOut  bool
	Truncated bool
	Duration  time.Duration
}

// Process is a process of a container: its PID on the engine's host (the
// same for as long as it runs, across an exec of another program) and its
// command line.
type Process struct {
	PID     int
	Command string
}

// Owner is a numeric uid:gid.
type Owner struct{ UID, GID int }

// File is an in-memory file for WriteFiles.
type File struct {
	Path string // relative, "/" separated
	Mode int64
	Data []byte
}

// CopyLimits caps an extraction.
type CopyLimits struct {
	MaxBytes   int64 // default 1 GiB
	MaxEntries int   // default 200,000
	// Symlinks extracts symbolic links as they are, whatever their target,
	// for trusted sources such as a task image's workdir (a venv's links
	// are absolute). Without it links are skipped and those escaping the
	// target refused. Nothing is ever written through a link.
	Symlinks bool
}

// State is a container's state.
type State struct {
	Running   bool
	ExitCode  int
	OOMKilled bool
	Missing   bool // the container no longer exists
	// Pid is the container's main process in the engine host's PID
	// namespace while it runs (0 when it does not).
	Pid int
	// Health is the engine's verdict on a container with a healthcheck:
	// "starting", "healthy" or "unhealthy"; "" without one.
	Health string
	// HealthLast is the last probe's exit code and output, as the engine
	// kept it ("exit 1: connection refused", "Health check exceeded
	// timeout (2s)"): a probe that times out on a loaded machine reads
	// differently from a service that is down.
	HealthLast string
	// Layer is the running container's writable layer (what it added,
	// changed or deleted against its image; a deleted file is a character
	// device 0,0 there) as a container started with ReadLayers sees it:
	// "" when the engine keeps no such layer in a store of its own.
	Layer string
}

// ReapOptions selects what Reap removes.
type ReapOptions struct {
	RunID string // only this run's objects
	// OrphansOnly takes only objects whose owner process is gone (same
	// host), and of those only the ones whose LabelTest is the reaping
	// process's own (none for a real run).
	OrphansOnly bool
	TaskImages  bool // also prune cached task images
	// MinAge leaves objects created less than this long ago (their
	// flightdeck.created label). A run's own reap of earlier runs' leftovers
	// uses it, so that it never takes what a process killed a moment ago
	// left to whoever killed it (a `flightdeck gc --run`, a test).
	MinAge time.Duration
	// DryRun lists and counts what would go, and removes nothing (what a
	// run kept with --keep, say).
	DryRun bool
	// LeaveKept leaves what a run kept on purpose (LabelKeep): a run's own
	// reap of earlier runs' orphans, never a gc asked for.
	LeaveKept bool
}

// Reaped counts what Reap removed.
type Reaped struct {
	Containers int
	Images     int
	Volumes    int
	Networks   int
	Removed    []string // one line per object removed, e.g. "container flightdeck-t1-1a2b3c4d (run r1, trial t1, pid 42@host)"
}
