package trial

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/runner/harbor"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/tasks"
)

// A multi-container task (environment/docker-compose.yaml) runs as
// Harbor's compose project does, without a compose binary: one private
// network per trial, the file's named volumes made per trial, each other
// service started after those it depends on (waiting for their conditions),
// and main last, on the same network under the name "main". Every object
// carries flightdeck's labels and is removed when the trial ends, main
// first, the network last (cleanups run last first).

// ServicesDir holds each service's own output, kept when the trial ends.
const ServicesDir = "services"

// composeTrial is what a trial's services left for main.
type composeTrial struct {
	network    string
	internal   bool              // the network has no route out
	volumes    map[string]string // the file's name → the trial's volume
	containers map[string]string // service → container ID
	started    map[string]time.Time
}

// startServices starts the services of a multi-container task and returns
// what main adds to its container; nil for a single-container task.
func (h *trialNet) startServices(ctx context.Context) (*sandbox.ServiceSpec, []sandbox.Mount, []string, error) {
	c := h.composeFile
	if c == nil {
		return nil, nil, nil, nil
	}
	h.a.s.Report.Phase(h.a.t, "services")
	ct := &composeTrial{volumes: map[string]string{}, containers: map[string]string{}, started: map[string]time.Time{}}
	h.compose = ct
	if err := h.composeObjects(ctx, c, ct); err != nil {
		return nil, nil, nil, err
	}
	for _, svc := range c.Services {
		if err := h.waitFor(ctx, ct, svc.Name, svc.DependsOn); err != nil {
			return nil, nil, nil, err
		}
		if err := h.startService(ctx, ct, svc); err != nil {
			return nil, nil, nil, err
		}
	}
	if err := h.waitFor(ctx, ct, tasks.MainService, c.Main.DependsOn); err != nil {
		return nil, nil, nil, err
	}
	main := c.Main
	spec := &sandbox.ServiceSpec{
		NetworkName: ct.network, Aliases: append([]string{tasks.MainService}, main.Aliases...), Hostname: main.Hostname,
		Entrypoint: main.Entrypoint, Cmd: main.Command, Tmpfs: main.Tmpfs,
	}
	vols, binds := ct.mounts(main)
	spec.Volumes = vols
	return spec, binds, main.Env, nil
}

// loadCompose applies a multi-container task's compose file to the work
// dir: main's working_dir there is the work dir when task.toml sets none
// (Harbor's env file comes after the task's file, so
// [environment].workdir wins over it).
func (h *harborTrial) loadCompose() {
	c := h.net.composeFile
	if c == nil {
		return
	}
	if wd := c.Main.Workdir; wd != "" && h.a.t.Task.Config.Environment.Workdir == "" {
		h.workdir = wd
		h.a.res.WorkDir = wd
	}
}

// composeObjects makes the trial's network and volumes, each removed when
// the trial ends. The network has no route out when a phase of the trial
// has no network: main then reaches the services on it and, in a phase
// with a network, the outside through the default network as well.
func (h *trialNet) composeObjects(ctx context.Context, c *tasks.Compose, ct *composeTrial) error {
	s, t := h.a.s, h.a.t
	// Behind an egress gateway the network has a route out: the gateway
	// decides what main reaches. A native trial's network has none: its
	// grade reaches the services there and nothing else, and a phase with
	// a network gets the engine's default network besides (the gateway
	// too).
	internal := h.native || (!(h.agentNet && h.graderNet) && !h.egressNeeded())
	name, err := s.Engine.CreateNetwork(ctx, sandbox.NetworkSpec{RunID: s.RunID, TrialID: t.ID, Internal: internal})
	if err != nil {
		return fmt.Errorf("the services' network: %w", err)
	}
	ct.network, ct.internal = name, internal
	h.a.cleanups = append(h.a.cleanups, func(cctx context.Context) error {
		if s.Keep {
			return nil
		}
		return s.Engine.RemoveNetwork(cctx, name)
	})
	for _, v := range c.Volumes {
		vol, err := s.Engine.CreateVolume(ctx, s.RunID, t.ID, v)
		if err != nil {
			return fmt.Errorf("volume %s: %w", v, err)
		}
		ct.volumes[v] = vol
		h.a.cleanups = append(h.a.cleanups, func(cctx context.Context) error {
			if s.Keep {
				return nil
			}
			return s.Engine.RemoveVolume(cctx, vol)
		})
	}
	return nil
}

// mounts are a service's volumes and binds, with the trial's volume names.
func (ct *composeTrial) mounts(svc tasks.ComposeService) ([]sandbox.VolumeMount, []sandbox.Mount) {
	var vols []sandbox.VolumeMount
	var binds []sandbox.Mount
	for _, v := range svc.Volumes {
		if v.Volume == "" {
			binds = append(binds, sandbox.Mount{HostPath: v.HostPath, ContainerPath: v.Target, ReadOnly: true})
			continue
		}
		vols = append(vols, sandbox.VolumeMount{Volume: ct.volumes[v.Volume], Target: v.Target, ReadOnly: v.ReadOnly})
	}
	return vols, binds
}

// startService gets a service's image and starts its container; its output
// is kept in services/<name>.log when the trial ends.
func (h *trialNet) startService(ctx context.Context, ct *composeTrial, svc tasks.ComposeService) error {
	s, t := h.a.s, h.a.t
	img, err := h.serviceImage(ctx, svc)
	if err != nil {
		return err
	}
	vols, binds := ct.mounts(svc)
	spec := sandbox.ContainerSpec{
		Image: img, Name: svc.Name + "-" + t.ID, RunID: s.RunID, TrialID: t.ID, Workdir: svc.Workdir,
		Env: svc.Env, User: svc.User, NoInit: !svc.Init, Mounts: binds,
		Labels: map[string]string{grader.LabelPhase: "service", labelService: svc.Name},
		Service: &sandbox.ServiceSpec{
			NetworkName: ct.network, Aliases: append([]string{svc.Name}, svc.Aliases...), Hostname: svc.Hostname,
			Entrypoint: svc.Entrypoint, Cmd: svc.Command, Volumes: vols, Tmpfs: svc.Tmpfs, Healthcheck: engineHealthcheck(svc.Healthcheck),
		},
	}
	c, err := s.Engine.Start(ctx, spec)
	if c.ID != "" {
		ct.containers[svc.Name] = c.ID
		ct.started[svc.Name] = time.Now()
		remove := h.a.removeContainer(c.ID, "", func() bool { return false })
		log := h.serviceLog(svc.Name)
		h.a.cleanups = append(h.a.cleanups, func(cctx context.Context) error {
			s.Engine.Logs(cctx, c.ID, log, 1<<20)
			return remove(cctx)
		})
	}
	if err != nil {
		return fmt.Errorf("service %s: %w", svc.Name, err)
	}
	return nil
}

// serviceContainer is the container of a multi-container task's service;
// "" when there is none.
func (h *trialNet) serviceContainer(name string) string {
	if h.compose == nil {
		return ""
	}
	return h.compose.containers[name]
}

// labelService names the compose service a container runs.
const labelService = "flightdeck.service"

func (h *trialNet) serviceLog(name string) string {
	dir := filepath.Join(h.a.dir, ServicesDir)
	os.MkdirAll(dir, 0o755)
	return filepath.Join(dir, name+".log")
}

// serviceImage builds a service's image (cached by content, as task images
// are) or finds its image: locally, through the image map.
func (h *trialNet) serviceImage(ctx context.Context, svc tasks.ComposeService) (string, error) {
	s, t := h.a.s, h.a.t
	spec := ServiceBuildSpec(t.Task, svc, s.Images.Map(), s.Multiplier,
		filepath.Join(h.a.dir, ServicesDir, svc.Name+".build.log"))
	if err := os.MkdirAll(filepath.Dir(spec.LogPath), 0o755); err != nil {
		return "", err
	}
	img, err := s.Engine.EnsureImage(ctx, spec)
	if errors.Is(err, sandbox.ErrImageMissing) && svc.Build != nil {
		// The substitution rule holds for the bases of a service's
		// Dockerfile as for the task's.
		df := spec.Dockerfile
		if df == "" {
			df = "Dockerfile"
		}
		if !filepath.IsAbs(df) {
			df = filepath.Join(spec.ContextDir, df)
		}
		added, ferr := s.Images.StandInForBuild(ctx, df, t.Task.Dir)
		if ferr != nil {
			return "", fmt.Errorf("image of service %s: %w", svc.Name, ferr)
		}
		if added {
			spec.ImageMap = s.Images.Map()
			img, err = s.Engine.EnsureImage(ctx, spec)
		}
	}
	if errors.Is(err, sandbox.ErrImageMissing) && svc.Image != "" && svc.Build == nil {
		// The substitution rule holds for a service's image as for the
		// task's base.
		where := func(string) string {
			return fmt.Sprintf("%s: services.%s.image", filepath.Join(filepath.Base(t.Task.Dir), tasks.EnvironmentDir, "docker-compose.yaml"), svc.Name)
		}
		added, ferr := s.Images.StandInFor(ctx, []string{svc.Image}, where)
		if ferr != nil {
			return "", fmt.Errorf("image of service %s: %w", svc.Name, ferr)
		}
		if added {
			spec.ImageMap = s.Images.Map()
			img, err = s.Engine.EnsureImage(ctx, spec)
		}
	}
	if err != nil {
		return "", fmt.Errorf("image of service %s: %w", svc.Name, err)
	}
	h.a.res.MappedImages = addMapped(h.a.res.MappedImages, img.Mapped)
	s.touch(img.Ref)
	return img.Ref, nil
}

// ServiceBuildSpec is how a compose service's image is built or found.
func ServiceBuildSpec(t *tasks.Task, svc tasks.ComposeService, imageMap map[string]string, mult suite.Multipliers, logPath string) sandbox.BuildSpec {
	spec := sandbox.BuildSpec{Name: t.ID + "-" + svc.Name, DockerImage: svc.Image, ImageMap: imageMap, LogPath: logPath}
	_, _, spec.Timeout = harbor.Timeouts(t.Config, mult)
	if b := svc.Build; b != nil {
		spec.ContextDir, spec.Dockerfile, spec.Args, spec.Target = b.Context, b.Dockerfile, b.Args, b.Target
	}
	return spec
}

func engineHealthcheck(hc *tasks.ComposeHealthcheck) *sandbox.Healthcheck {
	if hc == nil {
		return nil
	}
	return &sandbox.Healthcheck{Test: hc.Test, Interval: hc.Interval, Timeout: hc.Timeout, StartPeriod: hc.StartPeriod, Retries: hc.Retries}
}

// errServiceFailed marks a service that ended, or turned unhealthy, before
// what depended on it could start.
var errServiceFailed = errors.New("service failed")

// waitFor waits until each dependency of a service meets its condition:
// started (it was), healthy (the engine's healthcheck says so) or
// completed successfully (it exited 0).
func (h *trialNet) waitFor(ctx context.Context, ct *composeTrial, who string, deps []tasks.ComposeDependency) error {
	for _, d := range deps {
		id, ok := ct.containers[d.Service]
		if !ok {
			return fmt.Errorf("service %s depends on %s, which did not start", who, d.Service)
		}
		if d.Condition == tasks.ConditionStarted {
			continue
		}
		if err := h.waitCondition(ctx, id, d); err != nil {
			return fmt.Errorf("%s waits for %s to be %s: %w (its output is in %s/%s.log)", who, d.Service,
				strings.TrimPrefix(d.Condition, "service_"), err, ServicesDir, d.Service)
		}
	}
	return nil
}

// serviceWait bounds a wait for one service's condition; the trial's own
// context bounds it too.
const serviceWait = 5 * time.Minute

func (h *trialNet) waitCondition(ctx context.Context, id string, d tasks.ComposeDependency) error {
	ctx, cancel := context.WithTimeout(ctx, serviceWait)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		st, err := h.a.s.Engine.State(ctx, id)
		if err != nil {
			return err
		}
		switch d.Condition {
		case tasks.ConditionHealthy:
			switch {
			case st.Health == "healthy":
				return nil
			case st.Health == "unhealthy":
				return fmt.Errorf("%w: its healthcheck failed", errServiceFailed)
			case st.Health == "" && st.Running:
				return fmt.Errorf("%w: it has no healthcheck", errServiceFailed)
			case !st.Running:
				return fmt.Errorf("%w: it exited (exit code %d)", errServiceFailed, st.ExitCode)
			}
		case tasks.ConditionCompleted:
			if !st.Running {
				if st.ExitCode != 0 {
					return fmt.Errorf("%w: it exited with code %d", errServiceFailed, st.ExitCode)
				}
				return nil
			}
		default:
			return fmt.Errorf("unknown depends_on condition %q", d.Condition)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not after %s: %w", serviceWait, ctx.Err())
		case <-tick.C:
		}
	}
}

// addMapped adds the substitutions of another image the trial used (a
// service's, a separate verifier's) to those it records, once each.
func addMapped(have, more []string) []string {
	for _, m := range more {
		if !slices.Contains(have, m) {
			have = append(have, m)
		}
	}
	return have
}
