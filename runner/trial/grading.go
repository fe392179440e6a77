package trial

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/hostenv"
	"github.com/flightdeck/flightdeck/runner/harbor"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/tasks"
)

// How a step is graded, as grade_phase.mode records it. chooseGrading
// decides it once, when the steps are planned; each model then runs its
// own kinds: the native model grades fresh, the shared model live, from a
// snapshot or separately.
const (
	// GradeFresh grades in a fresh container of the pristine task image
	// with the host work dir mounted (flightdeck's own tasks).
	GradeFresh = "fresh"
	// GradeLive grades in the trial's container, as the agent left it
	// (Harbor's way).
	GradeLive = "live"
	// GradeSnapshot grades in a fresh container of a snapshot of the
	// agent's stopped container: the files it left, none of its
	// processes (grading: snapshot).
	GradeSnapshot = "snapshot"
	// GradeSeparate grades in a separate verifier's own image, given the
	// artifacts (a separate verifier).
	GradeSeparate = "separate"
)

// chooseGrading is how the step of trial t is graded. A multi-step task's
// step is never graded from a snapshot: the snapshot's grade removes the
// container its next step needs.
func chooseGrading(t *suite.Trial, step *stepRun) string {
	switch {
	case !t.Harbor():
		return GradeFresh
	case step.separate != nil:
		return GradeSeparate
	case t.Variant.Grading == suite.GradingSnapshot && step.name == "":
		return GradeSnapshot
	default:
		return GradeLive
	}
}

// snapshotGrade stops and snapshots the trial's container, removes it,
// and grades from the snapshot with the verifier's env and network: a new,
// empty /logs/verifier and a /tests holding exactly the task's tests/, the
// files the agent left, no agent process and no planted reward. The
// snapshot is removed after the grade. The task's artifacts are collected
// first: the container is gone after.
func (h *sharedTrial) snapshotGrade(ctx context.Context, req grader.Request) (grader.Grade, error) {
	s, t := h.a.s, h.a.t
	hv := &grader.HarborVerifier{KeepEntrypoint: true}
	var err error
	if hv.NetworkOf, err = h.net.GraderGateway(ctx); err != nil {
		return grader.Grade{}, err
	}
	h.collectArtifacts(ctx)
	env, err := harbor.VerifierEnv(t.Task, hostenv.Lookup)
	if err != nil {
		return grader.Grade{}, err
	}
	if hv.Network, err = harbor.NetworkFor(t.Task.Config, harbor.NetVerifier); err != nil {
		return grader.Grade{}, fmt.Errorf("%s: %w", t.Task.Path(tasks.TaskFile), err)
	}
	snap, err := h.snapshot(ctx)
	if err != nil {
		return grader.Grade{}, err
	}
	if snap != "" {
		req.Image = snap
	}
	// The snapshot holds no mount: the artifacts the agent left are
	// mounted again where it left them.
	hv.Mounts = []sandbox.Mount{{HostPath: harbor.ArtifactsDir(req.TrialDir), ContainerPath: harbor.ArtifactLogs}}
	req.Harbor = hv
	req.Env = append(req.Env, env...)
	g, err := grader.Run(ctx, s.Engine, req)
	for _, w := range g.Warnings {
		s.Report.Note(t, w)
	}
	return g, err
}

// snapshot stops the trial's container and commits it to an image, which
// is removed with the trial (unless --keep), as the container is at once.
// With no container (nop's), the task image is what the agent left: "".
func (h *sharedTrial) snapshot(ctx context.Context) (string, error) {
	s, t := h.a.s, h.a.t
	if h.container == "" {
		return "", nil
	}
	if err := s.Engine.Stop(ctx, h.container); err != nil && !errors.Is(err, sandbox.ErrContainerGone) {
		return "", fmt.Errorf("stop the agent's container: %w", err)
	}
	// The engine labels it a snapshot of the container's run and trial.
	snap, err := s.Engine.Commit(ctx, h.container, nil)
	if err != nil {
		return "", fmt.Errorf("snapshot the agent's container: %w", err)
	}
	if s.Keep {
		return snap, nil
	}
	h.a.deferCleanup(func(cctx context.Context) error {
		rctx, cancel := context.WithTimeout(cctx, 30*time.Second)
		defer cancel()
		if err := s.Engine.RemoveImage(rctx, snap); err != nil {
			return fmt.Errorf("remove snapshot %s: %w", snap, err)
		}
		return nil
	})
	if err := s.Engine.Remove(ctx, h.container); err != nil {
		s.Report.Note(t, fmt.Sprintf("remove the agent's container: %v", err))
	}
	return snap, nil
}
