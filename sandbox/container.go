package sandbox

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// defaultPidsLimit caps the processes of a container whose spec sets none.
const defaultPidsLimit = 4096

// keepAlive is the default command: the container idles until flightdeck
// execs into it. It is set as the entrypoint so images with unusual
// entrypoints behave the same.
func keepAlive() []string { return []string{"sleep", "infinity"} }

// Start creates and starts (unless spec.CreateOnly) a container with flightdeck's labels, no network
// unless spec.Network, init as PID 1, a pids limit, never privileged, and
// only the caller's mounts. spec.Cmd, when set, replaces the image's
// entrypoint and command. A container that was created but could not be
// started is removed before Start returns.
func (d *Docker) Start(ctx context.Context, spec ContainerSpec) (_ Container, err error) {
	name := containerName(spec.Name)
	if spec.Name == "" {
		name = containerName("flightdeck-" + spec.TrialID)
	}
	cfg, hostCfg := d.containerConfig(spec)
	var netCfg *network.NetworkingConfig
	if svc := spec.Service; svc != nil {
		netCfg = serviceConfig(svc, cfg, hostCfg)
	}
	if spec.NetAdmin {
		hostCfg.CapAdd = []string{"NET_ADMIN"}
	}
	if spec.HostPID {
		// Reading /proc/PID/root of a process of another user (the other
		// container's entrypoint may run as its image's USER) needs it.
		hostCfg.PidMode = container.PidMode("host")
		hostCfg.CapAdd = append(hostCfg.CapAdd, "SYS_PTRACE")
	}
	if spec.ReadLayers {
		if m := d.layersMount(ctx); m != nil {
			hostCfg.Mounts = append(hostCfg.Mounts, *m)
		}
	}
	if spec.NetworkOf != "" {
		hostCfg.NetworkMode = container.NetworkMode("container:" + spec.NetworkOf)
		netCfg = nil
		cfg.Hostname = ""
	}
	res, err := d.api.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg, HostConfig: hostCfg, NetworkingConfig: netCfg, Name: name})
	if err != nil {
		// The engine may have created it before the request was cancelled.
		d.removeQuietly(ctx, name)
		return Container{}, engineErr("create container from "+spec.Image, err)
	}
	defer func() {
		if err != nil {
			d.removeQuietly(ctx, res.ID)
		}
	}()
	if spec.Reconnectable && !spec.Network && spec.NetworkOf == "" {
		if err := d.SetNetwork(ctx, res.ID, false); err != nil {
			return Container{}, err
		}
	}
	if spec.Network && spec.NetworkOf == "" && netCfg != nil {
		// A service's network may have no route out (an internal one): a
		// container with a network gets the engine's default one besides.
		if err := d.SetNetwork(ctx, res.ID, true); err != nil {
			return Container{}, err
		}
	}
	if err := d.makeDirs(ctx, res.ID, spec.Image, spec.Dirs); err != nil {
		return Container{}, err
	}
	if spec.CreateOnly {
		return Container{ID: res.ID, Name: name, Warnings: res.Warnings}, nil
	}
	if _, err := d.api.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		return Container{}, engineErr("start container "+name, err)
	}
	return Container{ID: res.ID, Name: name, Warnings: res.Warnings}, nil
}

func (d *Docker) containerConfig(spec ContainerSpec) (*container.Config, *container.HostConfig) {
	cfg := &container.Config{
		Image:      spec.Image,
		Entrypoint: keepAlive(),
		Cmd:        []string{},
		WorkingDir: spec.Workdir,
		Env:        spec.Env,
		User:       spec.User,
		Labels:     d.ownedLabels(KindContainer, spec.RunID, spec.TrialID, spec.Labels),
	}
	switch {
	case spec.KeepEntrypoint:
		// A nil entrypoint keeps the image's; the command is its argument
		// list, as compose's `command:` is.
		cfg.Entrypoint, cfg.Cmd = nil, keepAlive()
		if len(spec.Cmd) > 0 {
			cfg.Cmd = spec.Cmd
		}
	case len(spec.Cmd) > 0:
		cfg.Entrypoint, cfg.Cmd = spec.Cmd[:1], spec.Cmd[1:]
	}
	init := !spec.NoInit
	hostCfg := &container.HostConfig{
		NetworkMode: network.NetworkNone,
		Init:        &init,
		Privileged:  false,
	}
	if spec.Network || spec.Reconnectable {
		hostCfg.NetworkMode = network.NetworkDefault
	}
	hostCfg.NanoCPUs = spec.NanoCPUs
	if spec.MemoryBytes > 0 {
		hostCfg.Memory = spec.MemoryBytes
		hostCfg.MemorySwap = spec.MemoryBytes // no swap beyond the limit
	}
	pids := spec.PidsLimit
	if pids == 0 {
		pids = defaultPidsLimit
	}
	if pids > 0 {
		hostCfg.PidsLimit = &pids
	}
	for _, m := range spec.Mounts {
		hostCfg.Mounts = append(hostCfg.Mounts, mount.Mount{
			Type: mount.TypeBind, Source: m.HostPath, Target: m.ContainerPath, ReadOnly: m.ReadOnly,
		})
	}
	return cfg, hostCfg
}

// serviceConfig applies what a compose service adds to a container's
// configuration and returns its network's endpoint, if it has one.
func serviceConfig(svc *ServiceSpec, cfg *container.Config, hostCfg *container.HostConfig) *network.NetworkingConfig {
	// nil keeps the image's; the engine drops the image's command when the
	// entrypoint is replaced, as compose does.
	cfg.Entrypoint, cfg.Cmd = svc.Entrypoint, svc.Cmd
	cfg.Hostname = svc.Hostname
	if hc := svc.Healthcheck; hc != nil {
		cfg.Healthcheck = &container.HealthConfig{Test: hc.Test, Interval: hc.Interval, Timeout: hc.Timeout,
			StartPeriod: hc.StartPeriod, Retries: hc.Retries}
	}
	for _, v := range svc.Volumes {
		hostCfg.Mounts = append(hostCfg.Mounts, mount.Mount{Type: mount.TypeVolume, Source: v.Volume, Target: v.Target, ReadOnly: v.ReadOnly})
	}
	if len(svc.Tmpfs) > 0 {
		hostCfg.Tmpfs = map[string]string{}
		for _, t := range svc.Tmpfs {
			hostCfg.Tmpfs[t] = ""
		}
	}
	if svc.NetworkName == "" {
		return nil
	}
	hostCfg.NetworkMode = container.NetworkMode(svc.NetworkName)
	return &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
		svc.NetworkName: {Aliases: svc.Aliases},
	}}
}

// State reports whether the container runs and how it ended; a container
// that no longer exists is Missing, not an error.
func (d *Docker) State(ctx context.Context, containerID string) (State, error) {
	res, err := d.api.ContainerInspect(ctx, containerID, client.ContainerInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		return State{Missing: true}, nil
	}
	if err != nil {
		return State{}, engineErr("inspect container "+short(containerID), err)
	}
	s := res.Container.State
	if s == nil {
		return State{}, nil
	}
	st := State{Running: s.Running || s.Restarting, ExitCode: s.ExitCode, OOMKilled: s.OOMKilled, Pid: s.Pid}
	if g := res.Container.GraphDriver; g != nil && st.Running {
		st.Layer = d.writableLayer(ctx, g.Data["UpperDir"])
	}
	if s.Health != nil {
		st.Health = string(s.Health.Status)
		if n := len(s.Health.Log); n > 0 {
			st.HealthLast = probeSummary(s.Health.Log[n-1].ExitCode, s.Health.Log[n-1].Output)
		}
	}
	return st, nil
}

// Stop kills every process of the container (SIGKILL) and waits until the
// engine reports it stopped. It runs on a context the caller's
// cancellation does not reach. A container already stopped or gone is fine.
func (d *Docker) Stop(ctx context.Context, containerID string) error {
	cctx, cancel := d.cleanupContext(ctx)
	defer cancel()
	_, err := d.api.ContainerKill(cctx, containerID, client.ContainerKillOptions{Signal: "KILL"})
	if err != nil && !cerrdefs.IsNotFound(err) && !isNotRunning(err) && !killPending(err) {
		return engineErr("kill container "+short(containerID), err)
	}
	// The kill is delivered; the engine's answer that the container
	// stopped waits on the kernel reaping every process, which for
	// thousands of them (a fork bomb) on a busy machine takes longer than
	// one engine call: waited on as long as a reap is.
	wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*d.opts.CleanupTimeout)
	defer wcancel()
	return d.waitStopped(wctx, containerID)
}

// waitStopped polls until the container is not running (or gone).
func (d *Docker) waitStopped(ctx context.Context, containerID string) error {
	delay := 10 * time.Millisecond
	for {
		st, err := d.State(ctx, containerID)
		if err != nil {
			return err
		}
		if !st.Running {
			return nil
		}
		select {
		case <-ctx.Done():
			return engineErr("wait for container "+short(containerID)+" to stop", ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, 250*time.Millisecond)
	}
}

// Remove force-removes a container and its anonymous volumes, on a context
// the caller's cancellation does not reach. A container already gone is
// fine.
func (d *Docker) Remove(ctx context.Context, containerID string) error {
	cctx, cancel := d.cleanupContext(ctx)
	defer cancel()
	_, err := d.api.ContainerRemove(cctx, containerID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) && !removalInProgress(err) {
		d.logger().Info("cleanup: container not removed", "container", short(containerID), "err", err)
		return engineErr("remove container "+short(containerID), err)
	}
	d.logger().Debug("cleanup: container removed", "container", short(containerID))
	return nil
}

// removalInProgress matches the engine's 409 when another request is
// already removing the container.
func removalInProgress(err error) bool {
	return cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "already in progress")
}

// removeQuietly is Remove for cleanup paths that already report an error.
func (d *Docker) removeQuietly(ctx context.Context, containerID string) {
	_ = d.Remove(ctx, containerID)
}

// Commit snapshots a container as an image labelled as a snapshot of the
// container's run and trial, plus labels. The image keeps the entrypoint
// and command of the container's image, not flightdeck's keep-alive. It is
// tagged flightdeck/snapshot:<random> and its ID is returned.
func (d *Docker) Commit(ctx context.Context, containerID string, labels map[string]string) (string, error) {
	res, err := d.api.ContainerInspect(ctx, containerID, client.ContainerInspectOptions{})
	if err != nil {
		return "", containerErr("inspect container "+short(containerID), err)
	}
	var run, trial string
	cfg := &container.Config{}
	if c := res.Container.Config; c != nil {
		run, trial = c.Labels[LabelRun], c.Labels[LabelTrial]
	}
	if img, err := d.api.ImageInspect(ctx, res.Container.Image); err == nil && img.Config != nil {
		cfg.Entrypoint, cfg.Cmd = img.Config.Entrypoint, img.Config.Cmd
	}
	// The engine fills a nil entrypoint from the container's (the
	// keep-alive); an empty one stays empty.
	if cfg.Entrypoint == nil {
		cfg.Entrypoint = []string{}
	}
	if len(cfg.Entrypoint) == 0 && len(cfg.Cmd) == 0 {
		cfg.Cmd = []string{"/bin/sh"}
	}
	all := maps.Clone(labels)
	cfg.Labels = d.ownedLabels(KindSnapshot, run, trial, all)
	ref := "flightdeck/snapshot:" + randomHex(8)
	out, err := d.api.ContainerCommit(ctx, containerID, client.ContainerCommitOptions{Reference: ref, Config: cfg})
	if err != nil {
		return "", containerErr("commit container "+short(containerID), err)
	}
	return out.ID, nil
}

// RemoveImage removes an image (all its tags) and the untagged parents
// only it used, on a context the caller's cancellation does not reach. An
// image already gone is fine.
func (d *Docker) RemoveImage(ctx context.Context, ref string) error {
	cctx, cancel := d.cleanupContext(ctx)
	defer cancel()
	_, err := d.api.ImageRemove(cctx, ref, client.ImageRemoveOptions{Force: true, PruneChildren: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return engineErr("remove image "+ref, err)
	}
	return nil
}

// short is a container ID's short form, for messages.
func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// handBackTimeout bounds a HandBack.
const handBackTimeout = 5 * time.Minute

// HandBack gives path (and all below it) to owner by running `chown -R -h`
// as root. In a running container it execs; in a stopped one (killed after
// a timeout, say) it runs the chown in a fresh container from the same
// image with the same mounts, then removes that container.
func (d *Docker) HandBack(ctx context.Context, containerID, path string, owner Owner) error {
	cmd := []string{"chown", "-R", "-h", fmt.Sprintf("%d:%d", owner.UID, owner.GID), path}
	res, err := d.api.ContainerInspect(ctx, containerID, client.ContainerInspectOptions{})
	if err != nil {
		return containerErr("hand back "+path, err)
	}
	if res.Container.State != nil && res.Container.State.Running {
		out, err := d.execCapture(ctx, containerID, cmd, "0:0", handBackTimeout)
		if err != nil {
			return fmt.Errorf("hand back %s: %w", path, err)
		}
		if out.code != 0 {
			return fmt.Errorf("hand back %s: chown exited %d: %s", path, out.code, out.text)
		}
		return nil
	}
	return d.handBackStopped(ctx, res.Container, cmd)
}

func (d *Docker) handBackStopped(ctx context.Context, src container.InspectResponse, cmd []string) error {
	spec := ContainerSpec{Image: src.Image, Name: "flightdeck-handback", User: "0:0", Cmd: cmd}
	if src.Config != nil {
		spec.RunID, spec.TrialID = src.Config.Labels[LabelRun], src.Config.Labels[LabelTrial]
	}
	for _, m := range src.Mounts {
		if m.Type == mount.TypeBind {
			spec.Mounts = append(spec.Mounts, Mount{HostPath: m.Source, ContainerPath: m.Destination, ReadOnly: !m.RW})
		}
	}
	c, err := d.Start(ctx, spec)
	if err != nil {
		return fmt.Errorf("hand back %s: %w", cmd[len(cmd)-1], err)
	}
	defer d.removeQuietly(ctx, c.ID)
	wctx, cancel := context.WithTimeout(ctx, handBackTimeout)
	defer cancel()
	if err := d.waitStopped(wctx, c.ID); err != nil {
		return fmt.Errorf("hand back %s: %w", cmd[len(cmd)-1], err)
	}
	st, err := d.State(ctx, c.ID)
	if err != nil {
		return err
	}
	if st.ExitCode != 0 {
		return fmt.Errorf("hand back %s: chown exited %d", cmd[len(cmd)-1], st.ExitCode)
	}
	return nil
}

// probeSummary is one health probe's result on one line, its output cut to
// what a message can hold.
func probeSummary(exit int, output string) string {
	out := strings.Join(strings.Fields(output), " ")
	if len(out) > 200 {
		out = "…" + out[len(out)-200:]
	}
	if exit == -1 || strings.HasPrefix(out, "Health check exceeded timeout") {
		return out // the engine's own words: the probe did not finish
	}
	if out == "" {
		return fmt.Sprintf("exit %d", exit)
	}
	return fmt.Sprintf("exit %d: %s", exit, out)
}
