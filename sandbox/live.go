package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// What a container that lives through several phases needs: Harbor's
// model runs the agent and then the verifier in one container, so the
// container may have to be started again, moved on or off the network
// between phases, and looked at from outside.

// Restart starts a stopped container again. A running one is left alone.
func (d *Docker) Restart(ctx context.Context, containerID string) error {
	st, err := d.State(ctx, containerID)
	if err != nil {
		return err
	}
	if st.Missing {
		return containerErr("start container "+short(containerID)+" again", fmt.Errorf("%w: no such container", ErrContainerGone))
	}
	if st.Running {
		return nil
	}
	if _, err := d.api.ContainerStart(ctx, containerID, client.ContainerStartOptions{}); err != nil {
		return containerErr("start container "+short(containerID)+" again", err)
	}
	return nil
}

// Logs writes the container's stdout and stderr, interleaved, to path,
// keeping the first max bytes (default 1 MiB).
func (d *Docker) Logs(ctx context.Context, containerID, path string, max int64) error {
	if max <= 0 {
		max = 1 << 20
	}
	rc, err := d.api.ContainerLogs(ctx, containerID, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		return containerErr("read the output of container "+short(containerID), err)
	}
	defer rc.Close()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("container log: %w", err)
	}
	w := &limitWriter{w: f, left: max}
	_, cerr := stdcopy.StdCopy(w, w, rc)
	if err := f.Close(); err != nil {
		return fmt.Errorf("container log: %w", err)
	}
	if cerr != nil && cerr != io.EOF {
		return engineErr("read the output of container "+short(containerID), cerr)
	}
	return nil
}

// limitWriter keeps the first left bytes and drops the rest silently.
type limitWriter struct {
	w    io.Writer
	left int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	n := len(p)
	if l.left <= 0 {
		return n, nil
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	l.left -= int64(len(p))
	if _, err := l.w.Write(p); err != nil {
		return 0, err
	}
	return n, nil
}

// Changes lists the container's filesystem changes against its image.
func (d *Docker) Changes(ctx context.Context, containerID string) ([]Change, error) {
	res, err := d.api.ContainerDiff(ctx, containerID, client.ContainerDiffOptions{})
	if err != nil {
		return nil, containerErr("list the changes of container "+short(containerID), err)
	}
	out := make([]Change, 0, len(res.Changes))
	for _, c := range res.Changes {
		kind := "C"
		switch c.Kind {
		case container.ChangeAdd:
			kind = "A"
		case container.ChangeDelete:
			kind = "D"
		}
		out = append(out, Change{Path: c.Path, Kind: kind})
	}
	return out, nil
}

// ChangedPaths lists the paths a container changed against its image, as
// Changes does, but read from its writable layer where the storage driver
// keeps one as a directory (upperChanges), else from the engine's diff.
func (d *Docker) ChangedPaths(ctx context.Context, containerID string) ([]string, error) {
	changes, ok := d.upperChanges(ctx, containerID)
	if !ok {
		var err error
		if changes, err = d.Changes(ctx, containerID); err != nil {
			return nil, err
		}
	}
	out := make([]string, 0, len(changes))
	for _, c := range changes {
		out = append(out, c.Path)
	}
	return out, nil
}

// upperMount is where upperChanges mounts a container's upper layer.
const upperMount = "/flightdeck-upper"

// upperChanges lists what a container changed from its writable layer
// when the storage driver keeps one as a directory (overlay2,
// fuse-overlayfs): `find -print0` over it, read-only, in a short-lived
// container of the same image. The engine's own diff walks the whole image
// on these drivers (6 s for the base image on an idle machine, minutes
// under load); this reads only what changed. Every path in the layer is
// changed, as the engine's diff lists a changed file's parent dirs too:
// "C", or "D" for a whiteout file (a whiteout kept as a device, as overlay2
// and fuse-overlayfs keep them, reads "C"). The runtime's own leftovers at
// the root of the layer (runc's /.pivot_root*, which the engine's diff
// hides) are left out. ok is false when it cannot be done here (another
// driver, an image without a find that knows -print0, an error): the
// caller asks the engine.
func (d *Docker) upperChanges(ctx context.Context, containerID string) (_ []Change, ok bool) {
	res, err := d.api.ContainerInspect(ctx, containerID, client.ContainerInspectOptions{})
	if err != nil {
		return nil, false
	}
	c := res.Container
	upper := ""
	if c.GraphDriver != nil && slices.Contains(overlayDrivers, c.GraphDriver.Name) {
		upper = c.GraphDriver.Data["UpperDir"]
	}
	if upper == "" || c.Config == nil {
		return nil, false
	}
	spec := ContainerSpec{Image: c.Image, Name: "flightdeck-changes", User: "0:0", RunID: c.Config.Labels[LabelRun],
		TrialID: c.Config.Labels[LabelTrial], Mounts: []Mount{{HostPath: upper, ContainerPath: upperMount, ReadOnly: true}},
		Cmd: []string{"find", upperMount, "-mindepth", "1", "-print0"}}
	h, err := d.Start(ctx, spec)
	if err != nil {
		return nil, false
	}
	defer d.removeQuietly(ctx, h.ID)
	wctx, cancel := context.WithTimeout(ctx, handBackTimeout)
	defer cancel()
	if err := d.waitStopped(wctx, h.ID); err != nil {
		return nil, false
	}
	if st, err := d.State(ctx, h.ID); err != nil || st.ExitCode != 0 {
		return nil, false
	}
	rc, err := d.api.ContainerLogs(ctx, h.ID, client.ContainerLogsOptions{ShowStdout: true})
	if err != nil {
		return nil, false
	}
	defer rc.Close()
	var b strings.Builder
	if _, err := stdcopy.StdCopy(&b, io.Discard, rc); err != nil {
		return nil, false
	}
	return parseUpper(b.String()), true
}

// parseUpper reads find's NUL-separated listing of an upper layer (a name
// may hold a newline) into changes: a whiteout file (".wh.NAME") is NAME
// deleted; an opaque dir's marker is left out (the dir itself is listed).
func parseUpper(out string) []Change {
	var changes []Change
	for _, line := range strings.Split(out, "\x00") {
		rel, found := strings.CutPrefix(line, upperMount+"/")
		if !found || rel == "" {
			continue
		}
		dir, name := path.Split(rel)
		if dir == "" && strings.HasPrefix(name, ".pivot_root") {
			continue
		}
		kind := "C"
		if deleted, ok := strings.CutPrefix(name, ".wh."); ok {
			if deleted == ".opq" || deleted == ".wh..opq" {
				continue // the dir is opaque; it is listed itself
			}
			name, kind = deleted, "D"
		}
		changes = append(changes, Change{Path: "/" + dir + name, Kind: kind})
	}
	return changes
}

// Processes lists the command lines of the container's running processes.
func (d *Docker) Processes(ctx context.Context, containerID string) ([]Process, error) {
	res, err := d.api.ContainerTop(ctx, containerID, client.ContainerTopOptions{})
	if err != nil {
		return nil, containerErr("list the processes of container "+short(containerID), err)
	}
	col, pidCol := -1, -1
	for i, t := range res.Titles {
		switch t {
		case "CMD", "COMMAND":
			col = i
		case "PID":
			pidCol = i
		}
	}
	var out []Process
	for _, p := range res.Processes {
		var proc Process
		if col >= 0 && col < len(p) {
			proc.Command = p[col]
		} else {
			proc.Command = strings.Join(p, " ")
		}
		if pidCol >= 0 && pidCol < len(p) {
			proc.PID, _ = strconv.Atoi(p[pidCol])
		}
		out = append(out, proc)
	}
	return out, nil
}

// SetNetwork connects the container to the engine's default bridge network
// or disconnects it (leaving it loopback only). Asking for what is already
// so is fine.
func (d *Docker) SetNetwork(ctx context.Context, containerID string, on bool) error {
	const bridge = network.NetworkBridge
	if on {
		_, err := d.api.NetworkConnect(ctx, bridge, client.NetworkConnectOptions{Container: containerID})
		if err != nil && !alreadyConnected(err) {
			return containerErr("connect container "+short(containerID)+" to the network", err)
		}
		return nil
	}
	_, err := d.api.NetworkDisconnect(ctx, bridge, client.NetworkDisconnectOptions{Container: containerID, Force: true})
	if err != nil && !notConnected(err) {
		return containerErr("disconnect container "+short(containerID)+" from the network", err)
	}
	return nil
}

func alreadyConnected(err error) bool {
	return strings.Contains(err.Error(), "already exists in network") || strings.Contains(err.Error(), "already connected")
}

func notConnected(err error) bool {
	return (cerrdefs.IsNotFound(err) && strings.Contains(err.Error(), "network")) ||
		strings.Contains(err.Error(), "is not connected")
}

// PeakMemory is the most memory the container's cgroup has used since it
// started, as the engine reports it (cgroup v1's max usage, page cache
// included, as its memory limit counts it); 0 when the engine does not
// say (cgroup v2) or the container is not running.
func (d *Docker) PeakMemory(ctx context.Context, containerID string) (int64, error) {
	res, err := d.api.ContainerStats(ctx, containerID, client.ContainerStatsOptions{})
	if err != nil {
		return 0, containerErr("read the memory use of container "+short(containerID), err)
	}
	defer res.Body.Close()
	var st container.StatsResponse
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		return 0, fmt.Errorf("read the memory use of container %s: %w", short(containerID), err)
	}
	return int64(st.MemoryStats.MaxUsage), nil
}
