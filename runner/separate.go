package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/hostenv"
	"github.com/flightdeck/flightdeck/runner/harbor"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/tasks"
)

// A separate verifier ([verifier].environment_mode = "separate", or a
// [verifier.environment] table) runs as Harbor runs it: after the agent,
// the task's [[verifier.collect]] commands run and its artifacts are
// copied out; the task's container is stopped; the verifier's image is
// built from tests/ (or is [verifier.environment].docker_image), a fresh
// container of it gets the artifacts back at the paths they had and
// /logs/artifacts, and runs /tests/test.sh, which the image owns: nothing
// of tests/ is copied in.

// verifierBuildLog is the separate verifier's image build's output.
const verifierBuildLog = "verifier-build.log"

// separateGrade grades a trial in a separate verifier's container.
func (h *harborTrial) separateGrade(ctx context.Context, env tasks.EnvConfig, req grader.Request) (grader.Grade, error) {
	s, t := h.s, h.t
	h.res.GradePhase.Mode = "separate"
	entries := h.collectArtifacts(ctx)
	if err := s.eng.Stop(ctx, h.container); err != nil && !errors.Is(err, sandbox.ErrContainerGone) {
		return grader.Grade{}, fmt.Errorf("stop the task's container before the separate verifier: %w", err)
	}
	img, err := h.verifierImage(ctx, env)
	if err != nil {
		return grader.Grade{}, err
	}
	base, err := harbor.TaskEnv(t.Task, "[verifier.environment].env", env.Env, hostenv.Lookup)
	if err != nil {
		return grader.Grade{}, err
	}
	over, err := harbor.TaskEnv(t.Task, "[verifier].env", t.Task.Config.Verifier.Env, hostenv.Lookup)
	if err != nil {
		return grader.Grade{}, err
	}
	req.Image, req.Harbor, req.KeepEntrypoint, req.ImageTests = img, true, true, true
	req.ContainerWorkDir = env.Workdir // "": the image's own
	req.Network = h.graderNet
	req.NanoCPUs, req.MemoryBytes = 0, env.MemoryMB<<20
	if env.CPUs > 0 {
		req.NanoCPUs = int64(env.CPUs * 1e9)
	}
	req.Env = append(base, over...)
	req.Service = nil
	req.Mounts = []sandbox.Mount{{HostPath: harbor.ArtifactsDir(h.trialAttempt.dir), ContainerPath: harbor.ArtifactLogs}}
	for _, e := range entries {
		// What is under /logs/artifacts is there through the mount.
		if e.Status != "ok" || e.Source == harbor.ArtifactLogs || strings.HasPrefix(e.Source, harbor.ArtifactLogs+"/") {
			continue
		}
		req.Uploads = append(req.Uploads, grader.Upload{
			HostPath: filepath.Join(h.trialAttempt.dir, "logs", filepath.FromSlash(e.Destination)), ContainerPath: path.Clean(e.Source),
		})
	}
	g, err := grader.Run(ctx, s.eng, req)
	for _, w := range g.Warnings {
		s.progress.note(t, w)
	}
	return g, err
}

// verifierImage builds the separate verifier's image from tests/ (cached
// by content, as task images are), or finds its docker_image.
func (h *harborTrial) verifierImage(ctx context.Context, env tasks.EnvConfig) (string, error) {
	s, t := h.s, h.t
	spec := sandbox.BuildSpec{
		Name: t.Task.ID + "-verifier", ContextDir: t.Task.Path(tasks.TestsDir), DockerImage: env.DockerImage,
		ImageMap: s.images.currentMap(), LogPath: filepath.Join(h.trialAttempt.dir, verifierBuildLog),
		Timeout: 10 * time.Minute,
	}
	if env.BuildTimeoutSec != nil && *env.BuildTimeoutSec > 0 {
		spec.Timeout = time.Duration(*env.BuildTimeoutSec * float64(time.Second))
	}
	img, err := s.eng.EnsureImage(ctx, spec)
	if err != nil {
		return "", fmt.Errorf("the separate verifier's image: %w", err)
	}
	s.touchImage(img.Ref)
	return img.Ref, nil
}

// collectLog holds the [[verifier.collect]] commands' output.
const collectLog = "collect.log"

// runCollect runs the task's [[verifier.collect]] commands in the task's
// container (or the service each names), before the artifacts are
// collected and the verifier runs. A command that fails or times out is
// noted, never the trial's failure, as in Harbor.
func (h *harborTrial) runCollect(ctx context.Context, dir string, more []tasks.CollectHook) {
	hooks := append(slices.Clone(h.t.Task.Config.Verifier.Collect), more...)
	if len(hooks) == 0 {
		return
	}
	log := filepath.Join(dir, collectLog)
	for i, hook := range hooks {
		id, who := h.container, tasks.MainService
		if hook.Service != "" && hook.Service != tasks.MainService {
			who = hook.Service
			if id = h.serviceContainer(hook.Service); id == "" {
				h.s.progress.note(h.t, fmt.Sprintf("verifier.collect #%d: no service %q", i+1, hook.Service))
				continue
			}
		}
		timeout := 60 * time.Second
		if hook.TimeoutSec != nil {
			timeout = time.Duration(*hook.TimeoutSec * float64(time.Second))
		}
		part := filepath.Join(h.scratch, fmt.Sprintf("collect-%d.log", i+1))
		res, err := h.s.eng.Exec(ctx, id, sandbox.ExecSpec{
			Cmd: []string{"bash", "-c", hook.Command}, User: hook.User, StdoutPath: part, Timeout: timeout,
		})
		status := fmt.Sprintf("exit %d", res.ExitCode)
		switch {
		case err != nil:
			status = "error: " + err.Error()
		case res.TimedOut:
			status = fmt.Sprintf("timed out after %s", timeout)
		}
		appendCollectLog(log, i+1, who, hook.Command, part, status)
		if err != nil || res.TimedOut || res.ExitCode != 0 {
			h.s.progress.note(h.t, fmt.Sprintf("verifier.collect #%d in %s: %s (see %s)", i+1, who, status, collectLog))
		}
	}
}

func appendCollectLog(log string, n int, service, command, part, status string) {
	f, err := os.OpenFile(log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "=== verifier.collect #%d in %s: %s\n", n, service, command)
	if out, err := os.ReadFile(part); err == nil {
		f.Write(out)
	}
	fmt.Fprintf(f, "=== %s\n", status)
}

// collectStepArtifacts copies a step's artifacts out of the container into
// steps/<name>/artifacts, with a manifest, after its agent and before its
// verifier; what fails is said, and is not the trial's failure.
func (h *harborTrial) collectStepArtifacts(ctx context.Context, st *stepRun) {
	entries, err := harbor.CollectArtifacts(ctx, h.s.eng, h.container, st.artifacts, filepath.Join(st.dir, "artifacts"))
	if err != nil {
		h.s.progress.note(h.t, err.Error())
	}
	for _, e := range entries {
		if e.Status != "ok" {
			h.s.progress.note(h.t, fmt.Sprintf("step %s: artifact %s not collected: %s", st.name, e.Source, e.Error))
		}
	}
}
