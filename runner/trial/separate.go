package trial

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
	"github.com/flightdeck/flightdeck/runner/images"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/tasks"
)

// A separate verifier ([verifier].environment_mode = "separate", or a
// [verifier.environment] table; for a multi-step task, each step's as
// Harbor resolves it) runs as Harbor runs it: after the agent, the
// [[verifier.collect]] commands of main run and main's artifacts are
// copied out; on the trial's last use of it (a single-step task, or the
// last step) the task's container is stopped; then the sidecars' collect
// commands run and their artifacts are copied out. The verifier's image is
// built from the step's tests/ if it has one, else the task's tests/ (or
// is its environment's docker_image); a fresh container of it gets the
// artifacts back at the paths they had and /logs/artifacts, and runs
// /tests/test.sh, which the image owns: nothing of tests/ is copied in. A
// multi-step task's container runs on for its next step.

// verifierBuildLog is the separate verifier's image build's output.
const verifierBuildLog = "verifier-build.log"

// containerOf is the container of the trial's service ("" or main: the
// task's container); "" when it has no such service.
func (h *sharedTrial) containerOf(service string) string {
	if service == "" || service == tasks.MainService {
		return h.container
	}
	return h.net.ServiceContainer(service)
}

// separateGrade grades a trial (or a step) in a separate verifier's
// container, with what collectEvidence took out of the trial's.
func (h *sharedTrial) separateGrade(ctx context.Context, step *stepRun, req grader.Request) (grader.Grade, error) {
	entries, err := h.collectEvidence(ctx, step, step.artifacts, step.last)
	if err != nil {
		return grader.Grade{}, err
	}
	return h.separateVerify(ctx, step, req, entries)
}

// separateVerify runs the separate verifier on the artifacts entries
// list, under the trial's artifacts dir (step.artifactsDir), each put
// back at its path.
func (h *sharedTrial) separateVerify(ctx context.Context, step *stepRun, req grader.Request, entries []harbor.ArtifactEntry) (grader.Grade, error) {
	s, t := h.a.s, h.a.t
	env := *step.separate
	hv := &grader.HarborVerifier{KeepEntrypoint: true, ImageTests: true, Network: h.net.GraderNet}
	var err error
	if hv.NetworkOf, err = h.net.GraderGateway(ctx); err != nil {
		return grader.Grade{}, err
	}
	img, err := h.verifierImage(ctx, step, env)
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
	req.Image, req.Harbor = img, hv
	req.ContainerWorkDir = env.Workdir // "": the image's own
	req.NanoCPUs, req.MemoryBytes = 0, env.MemoryMB<<20
	if env.CPUs > 0 {
		req.NanoCPUs = int64(env.CPUs * 1e9)
	}
	req.Env = append(append(base, over...), step.verifierEnv...)
	req.Service = nil
	hv.Mounts = []sandbox.Mount{{HostPath: harbor.ArtifactsDir(h.a.dir), ContainerPath: harbor.ArtifactLogs}}
	// The manifest's destinations are relative to the artifacts dir's parent.
	root := filepath.Dir(step.artifactsDir)
	for _, e := range entries {
		// What is under /logs/artifacts is there through the mount.
		if e.Status != "ok" || e.Source == harbor.ArtifactLogs || strings.HasPrefix(e.Source, harbor.ArtifactLogs+"/") {
			continue
		}
		hv.Uploads = append(hv.Uploads, grader.Upload{
			HostPath: filepath.Join(root, filepath.FromSlash(e.Destination)), ContainerPath: path.Clean(e.Source),
		})
	}
	g, err := grader.Run(ctx, s.Engine, req)
	for _, w := range g.Warnings {
		s.Report.Note(t, w)
	}
	return g, err
}

// stopMain stops the task's container before the sidecars' evidence is
// taken and the separate verifier runs: nothing of the agent's runs on.
func (h *sharedTrial) stopMain(ctx context.Context) error {
	if err := h.a.s.Engine.Stop(ctx, h.container); err != nil && !errors.Is(err, sandbox.ErrContainerGone) {
		return fmt.Errorf("stop the task's container before the separate verifier: %w", err)
	}
	return nil
}

// verifierImage builds a separate verifier's image from the step's tests/
// or the task's (cached by content, as task images are), or finds its
// docker_image.
func (h *sharedTrial) verifierImage(ctx context.Context, step *stepRun, env tasks.EnvConfig) (string, error) {
	s, t := h.a.s, h.a.t
	spec := sandbox.BuildSpec{
		Name: step.verifierImage, ContextDir: t.Task.VerifierContext(step.name), DockerImage: env.DockerImage,
		ImageMap: s.Images.Map(), LogPath: filepath.Join(step.dir, verifierBuildLog),
		Timeout: 10 * time.Minute,
	}
	if env.BuildTimeoutSec != nil && *env.BuildTimeoutSec > 0 {
		spec.Timeout = time.Duration(*env.BuildTimeoutSec * float64(time.Second))
	}
	img, err := s.Engine.EnsureImage(ctx, spec)
	if errors.Is(err, sandbox.ErrImageMissing) && env.DockerImage == "" {
		// The substitution rule holds for the verifier's Dockerfile too.
		added, ferr := s.Images.StandInForBuild(ctx, filepath.Join(spec.ContextDir, "Dockerfile"), t.Task.Dir)
		if ferr != nil {
			return "", fmt.Errorf("the separate verifier's image: %w", ferr)
		}
		if added {
			spec.ImageMap = s.Images.Map()
			img, err = s.Engine.EnsureImage(ctx, spec)
		}
	}
	if err != nil {
		return "", fmt.Errorf("the separate verifier's image: %w", err)
	}
	h.a.res.MappedImages = images.AddMapped(h.a.res.MappedImages, img.Mapped)
	s.touch(img)
	return img.Ref, nil
}

// collectLog holds the [[verifier.collect]] commands' output.
const collectLog = "collect.log"

// runCollect runs collect commands, numbered from after+1, each in the
// service it names.
func (h *sharedTrial) runCollect(ctx context.Context, dir string, hooks []tasks.CollectHook, after int) {
	log := filepath.Join(dir, collectLog)
	for j, hook := range hooks {
		i := after + j
		who := tasks.MainService
		if hook.Service != "" {
			who = hook.Service
		}
		id := h.containerOf(hook.Service)
		if id == "" {
			h.a.s.Report.Note(h.a.t, fmt.Sprintf("verifier.collect #%d: no service %q", i+1, hook.Service))
			continue
		}
		timeout := 60 * time.Second
		if hook.TimeoutSec != nil {
			timeout = time.Duration(*hook.TimeoutSec * float64(time.Second))
		}
		part := filepath.Join(h.a.scratch, fmt.Sprintf("collect-%d.log", i+1))
		cmd := []string{"bash", "-c", hook.Command}
		if who != tasks.MainService {
			// A sidecar is any image: Harbor runs its commands with sh.
			cmd = []string{"sh", "-c", hook.Command}
		}
		res, err := h.a.s.Engine.Exec(ctx, id, sandbox.ExecSpec{
			Cmd: cmd, User: hook.User, StdoutPath: part, Timeout: timeout,
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
			h.a.s.Report.Note(h.a.t, fmt.Sprintf("verifier.collect #%d in %s: %s (see %s)", i+1, who, status, collectLog))
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

// collectEvidence runs the task's and the step's [[verifier.collect]]
// commands and copies the artifacts as out of their containers into dir,
// with a manifest, after the agent and before the verifier, as Harbor
// does: main's commands, then main's artifacts; when stopMain (a separate
// verifier's last use of the container) main is stopped; then the
// sidecars' commands and artifacts. A command or an artifact that fails
// is said, never the trial's failure; an error is the container's (it
// could not be made ready, or stopped).
func (h *sharedTrial) collectEvidence(ctx context.Context, step *stepRun, as []tasks.Artifact, stopMain bool) ([]harbor.ArtifactEntry, error) {
	dir := step.artifactsDir
	var mainArts, sideArts []tasks.Artifact
	for _, a := range as {
		if a.Sidecar() {
			sideArts = append(sideArts, a)
		} else {
			mainArts = append(mainArts, a)
		}
	}
	var mainHooks, sideHooks []tasks.CollectHook
	for _, hook := range append(slices.Clone(h.a.t.Task.Config.Verifier.Collect), step.collect...) {
		if hook.Service == "" || hook.Service == tasks.MainService {
			mainHooks = append(mainHooks, hook)
		} else {
			sideHooks = append(sideHooks, hook)
		}
	}
	if len(mainHooks) > 0 {
		// The collect commands need the container running (an agent
		// that timed out had it killed).
		if err := h.ready(ctx, false); err != nil {
			return nil, err
		}
	}
	h.runCollect(ctx, step.dir, mainHooks, 0)
	entries, err := harbor.CollectArtifacts(ctx, h.a.s.Engine, h.containerOf, mainArts, dir, nil)
	if err != nil {
		h.a.s.Report.Note(h.a.t, err.Error())
	}
	if stopMain {
		if err := h.stopMain(ctx); err != nil {
			return entries, err
		}
	}
	h.runCollect(ctx, step.dir, sideHooks, len(mainHooks))
	if len(sideArts) > 0 {
		if entries, err = harbor.CollectArtifacts(ctx, h.a.s.Engine, h.containerOf, sideArts, dir, entries); err != nil {
			h.a.s.Report.Note(h.a.t, err.Error())
		}
	}
	for _, e := range entries {
		if e.Status != "ok" {
			h.a.s.Report.Note(h.a.t, fmt.Sprintf("%sartifact %s not collected: %s", step.notePrefix, e.Source, e.Error))
		}
	}
	return entries, nil
}
