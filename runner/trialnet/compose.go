package trialnet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/flightdeck/flightdeck/runner/harbor"
	"github.com/flightdeck/flightdeck/runner/images"
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
func (n *Net) startServices(ctx context.Context) (*sandbox.ServiceSpec, []sandbox.Mount, []string, error) {
	c := n.ComposeFile
	if c == nil {
		return nil, nil, nil, nil
	}
	n.tr.Phase("services")
	ct := &composeTrial{volumes: map[string]string{}, containers: map[string]string{}, started: map[string]time.Time{}}
	n.compose = ct
	if err := n.composeObjects(ctx, c, ct); err != nil {
		return nil, nil, nil, err
	}
	for _, svc := range c.Services {
		if err := n.waitFor(ctx, ct, svc.Name, svc.DependsOn); err != nil {
			return nil, nil, nil, err
		}
		if err := n.startService(ctx, ct, svc); err != nil {
			return nil, nil, nil, err
		}
	}
	if err := n.waitFor(ctx, ct, tasks.MainService, c.Main.DependsOn); err != nil {
		return nil, nil, nil, err
	}
	main := c.Main
	spec := &sandbox.ServiceSpec{
		NetworkName: ct.network, Aliases: append([]string{tasks.MainService}, main.Aliases...), Hostname: main.Hostname,
		Entrypoint: main.Entrypoint, Cmd: main.Command, Tmpfs: main.Tmpfs,
	}
	vols, binds, err := ct.mounts(main, n.tr.Dir)
	if err != nil {
		return nil, nil, nil, err
	}
	spec.Volumes = vols
	return spec, binds, main.Env, nil
}

// composeObjects makes the trial's network and volumes, each removed when
// the trial ends. The network has no route out when a phase of the trial
// has no network: main then reaches the services on it and, in a phase
// with a network, the outside through the default network as well.
func (n *Net) composeObjects(ctx context.Context, c *tasks.Compose, ct *composeTrial) error {
	s := &n.tr
	// Behind an egress gateway the network has a route out: the gateway
	// decides what main reaches. A native trial's network has none: its
	// grade reaches the services there and nothing else, and a phase with
	// a network gets the engine's default network besides (the gateway
	// too).
	internal := n.tr.Native || (!(n.AgentNet && n.GraderNet) && !n.egressNeeded())
	name, err := s.Engine.CreateNetwork(ctx, n.networkSpec(internal))
	if err != nil {
		return fmt.Errorf("the services' network: %w", err)
	}
	ct.network, ct.internal = name, internal
	n.tr.Defer(func(cctx context.Context) error {
		if s.Keep {
			return nil
		}
		return s.Engine.RemoveNetwork(cctx, name)
	})
	for _, v := range c.Volumes {
		vol, err := s.Engine.CreateVolume(ctx, s.RunID, s.TrialID, v)
		if err != nil {
			return fmt.Errorf("volume %s: %w", v, err)
		}
		ct.volumes[v] = vol
		n.tr.Defer(func(cctx context.Context) error {
			if s.Keep {
				return nil
			}
			return s.Engine.RemoveVolume(cctx, vol)
		})
	}
	return nil
}

// mounts are a service's volumes and binds, with the trial's volume names
// and its log dirs (under trialDir) where the file binds Harbor's.
func (ct *composeTrial) mounts(svc tasks.ComposeService, trialDir string) ([]sandbox.VolumeMount, []sandbox.Mount, error) {
	var vols []sandbox.VolumeMount
	var binds []sandbox.Mount
	for _, v := range svc.Volumes {
		if v.TrialLogs != "" {
			host, err := trialLogsDir(trialDir, v.TrialLogs)
			if err != nil {
				return nil, nil, fmt.Errorf("service %s: %w", svc.Name, err)
			}
			binds = append(binds, sandbox.Mount{HostPath: host, ContainerPath: v.Target, ReadOnly: v.ReadOnly})
			continue
		}
		if v.Volume == "" {
			binds = append(binds, sandbox.Mount{HostPath: v.HostPath, ContainerPath: v.Target, ReadOnly: true})
			continue
		}
		vols = append(vols, sandbox.VolumeMount{Volume: ct.volumes[v.Volume], Target: v.Target, ReadOnly: v.ReadOnly})
	}
	return vols, binds, nil
}

// trialLogsDir is the host side of a trial's log dir a compose file binds
// (${HOST_ARTIFACTS_PATH}, ${HOST_AGENT_LOGS_PATH}): the dir main's
// /logs/artifacts or /logs/agent is mounted from, made now (a service
// starts before main), writable by any user as Harbor's is.
func trialLogsDir(trialDir, name string) (string, error) {
	var dir string
	switch name {
	case "ARTIFACTS":
		dir = harbor.ArtifactsDir(trialDir)
	case "AGENT_LOGS":
		dir = harbor.LogsDir(trialDir)
	default:
		return "", fmt.Errorf("no log dir %s to bind", name)
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return "", fmt.Errorf("the trial's %s dir: %w", name, err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		return "", fmt.Errorf("the trial's %s dir: %w", name, err)
	}
	return dir, nil
}

// startService gets a service's image and starts its container; its output
// is kept in services/<name>.log when the trial ends.
func (n *Net) startService(ctx context.Context, ct *composeTrial, svc tasks.ComposeService) error {
	s := &n.tr
	img, err := n.serviceImage(ctx, svc)
	if err != nil {
		return err
	}
	vols, binds, err := ct.mounts(svc, s.Dir)
	if err != nil {
		return err
	}
	spec := sandbox.ContainerSpec{
		Image: img, Name: svc.Name + "-" + s.TrialID, RunID: s.RunID, TrialID: s.TrialID, Workdir: svc.Workdir,
		Env: svc.Env, User: svc.User, NoInit: !svc.Init, Mounts: binds,
		Labels: map[string]string{sandbox.LabelPhase: "service", labelService: svc.Name},
		Service: &sandbox.ServiceSpec{
			NetworkName: ct.network, Aliases: append([]string{svc.Name}, svc.Aliases...), Hostname: svc.Hostname,
			Entrypoint: svc.Entrypoint, Cmd: svc.Command, Volumes: vols, Tmpfs: svc.Tmpfs, Healthcheck: engineHealthcheck(svc.Healthcheck),
		},
	}
	c, err := s.Engine.Start(ctx, spec)
	if c.ID != "" {
		ct.containers[svc.Name] = c.ID
		ct.started[svc.Name] = time.Now()
		remove := n.tr.Remove(c.ID)
		log := n.serviceLog(svc.Name)
		n.tr.Defer(func(cctx context.Context) error {
			s.Engine.Logs(cctx, c.ID, log, 1<<20)
			return remove(cctx)
		})
	}
	if err != nil {
		return fmt.Errorf("service %s: %w", svc.Name, err)
	}
	return nil
}

// ServiceContainer is the container of a multi-container task's service;
// "" when there is none.
func (n *Net) ServiceContainer(name string) string {
	if n.compose == nil {
		return ""
	}
	return n.compose.containers[name]
}

// labelService names the compose service a container runs.
const labelService = "flightdeck.service"

func (n *Net) serviceLog(name string) string {
	dir := filepath.Join(n.tr.Dir, ServicesDir)
	os.MkdirAll(dir, 0o755)
	return filepath.Join(dir, name+".log")
}

// serviceImage builds a service's image (cached by content, as task images
// are) or finds its image: locally, through the image map.
func (n *Net) serviceImage(ctx context.Context, svc tasks.ComposeService) (string, error) {
	s := &n.tr
	spec := ServiceBuildSpec(s.Task, svc, s.Images.Map(), s.Multiplier,
		filepath.Join(n.tr.Dir, ServicesDir, svc.Name+".build.log"))
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
		added, ferr := s.Images.StandInForBuild(ctx, df, s.Task.Dir)
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
			return fmt.Sprintf("%s: services.%s.image", filepath.Join(filepath.Base(s.Task.Dir), tasks.EnvironmentDir, "docker-compose.yaml"), svc.Name)
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
	n.Mapped = images.AddMapped(n.Mapped, img.Mapped)
	if s.Images.Touch != nil {
		s.Images.Touch(img)
	}
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
func (n *Net) waitFor(ctx context.Context, ct *composeTrial, who string, deps []tasks.ComposeDependency) error {
	for _, d := range deps {
		id, ok := ct.containers[d.Service]
		if !ok {
			return fmt.Errorf("service %s depends on %s, which did not start", who, d.Service)
		}
		if d.Condition == tasks.ConditionStarted {
			continue
		}
		if err := n.waitCondition(ctx, id, d); err != nil {
			return fmt.Errorf("%s waits for %s to be %s: %w (its output is in %s/%s.log)", who, d.Service,
				strings.TrimPrefix(d.Condition, "service_"), err, ServicesDir, d.Service)
		}
	}
	return nil
}

// serviceWait bounds a wait for one service's condition; the trial's own
// context bounds it too.
const serviceWait = 5 * time.Minute

func (n *Net) waitCondition(ctx context.Context, id string, d tasks.ComposeDependency) error {
	ctx, cancel := context.WithTimeout(ctx, serviceWait)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		st, err := n.tr.Engine.State(ctx, id)
		if err != nil {
			return err
		}
		if st.Missing {
			// Gone is not done: a removed container reports exit code 0.
			return fmt.Errorf("%w: its container is gone", errServiceFailed)
		}
		switch d.Condition {
		case tasks.ConditionHealthy:
			switch {
			case st.Health == "healthy":
				return nil
			case st.Health == "unhealthy":
				if st.HealthLast != "" {
					return fmt.Errorf("%w: its healthcheck failed (the last probe: %s)", errServiceFailed, st.HealthLast)
				}
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
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("not after %s: %w", serviceWait, ctx.Err())
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}
