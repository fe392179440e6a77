package trial

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/files"
	"github.com/flightdeck/flightdeck/runner/agent"
	"github.com/flightdeck/flightdeck/runner/harbor"
	"github.com/flightdeck/flightdeck/runner/results"
)

// A regrade (flightdeck regrade) grades a finished trial's recorded work
// with the task as it is now, as Harbor's regrade does: no agent, no task
// container. The source trial's artifacts dir (and its manifest) and its
// evidence are copied into the new trial's dir, and the task's separate
// verifier runs on the artifacts, each put back at its path. The runner
// refuses, before anything runs, a trial that cannot be regraded
// (runner/regrade.go): a task without a separate verifier, a source that
// was not graded or lacks an artifact the task declares.

// regradeTrial is the model of a regrade: it has a network for the
// verifier and nothing else.
type regradeTrial struct {
	h    *sharedTrial
	src  string          // the source trial's dir
	from *results.Result // its result
}

// runRegrade runs a regrade's one step.
func (a *trialAttempt) runRegrade(ctx context.Context) error {
	src := filepath.Join(a.t.Variant.Regrade, a.t.ID)
	from, err := results.ReadResult(filepath.Join(src, results.ResultFile))
	if err != nil {
		return fmt.Errorf("regrade: the recorded trial: %w", err)
	}
	n, err := a.newNet(false)
	if err != nil {
		return err
	}
	a.res.WorkDir, a.res.Image = from.WorkDir, from.Image
	a.res.RegradedFrom = &results.Source{Action: "regrade", RunID: from.RunID, Trial: from.Trial, Path: src,
		Reward: from.Reward, Outcome: string(from.Outcome), Reproduced: results.ReproducedArtifacts}
	h := &sharedTrial{a: a, net: n, workdir: from.WorkDir}
	steps, err := a.planSteps()
	if err != nil {
		return err
	}
	if len(steps) != 1 || steps[0].separate == nil {
		return errors.New("regrade: the task has no single separate verifier (the runner refuses such a task)")
	}
	steps[0].grading = GradeSeparate
	return a.runSteps(ctx, &regradeTrial{h: h, src: src, from: from}, steps)
}

// agentPhase brings the recorded agent's work: its logs and the artifacts
// dir, manifest included.
func (m *regradeTrial) agentPhase(_ context.Context, step *stepRun) (agent.Result, error) {
	a := m.h.a
	var err error
	a.phase(PhaseAgent, func() error {
		if err = files.CopyTree(harbor.ArtifactsDir(m.src), step.artifactsDir); err != nil {
			return fmt.Errorf("regrade: copy the recorded artifacts: %w", err)
		}
		if d := harbor.LogsDir(m.src); dirExists(d) {
			if err = files.CopyTree(d, harbor.LogsDir(a.dir)); err != nil {
				return fmt.Errorf("regrade: copy the recorded agent logs: %w", err)
			}
		}
		if p := filepath.Join(m.src, results.AgentLog); fileExists(p) {
			err = files.CopyFile(p, filepath.Join(a.dir, results.AgentLog), 0o644)
		}
		return err
	})
	a.res.AgentPhase = m.from.AgentPhase
	return agent.Result{ExitCode: m.from.AgentPhase.ExitCode, TimedOut: m.from.Outcome == grader.OutcomeAgentTimeout}, err
}

func (m *regradeTrial) inspectPhase(context.Context, *stepRun, agent.Result) (func(), error) {
	return func() {}, nil
}

// evidence is the recorded trial's: its events, changed files and patch.
func (m *regradeTrial) evidence(context.Context, agent.Result) *grader.Evidence {
	a := m.h.a
	a.res.Evidence = m.from.Evidence
	for _, f := range []string{results.EventsFile, results.DiffFiles, results.DiffPatch} {
		if p := filepath.Join(m.src, f); fileExists(p) {
			if err := files.CopyFile(p, filepath.Join(a.dir, f), 0o644); err != nil {
				a.s.Report.Note(a.t, "regrade: "+err.Error())
			}
		}
	}
	return &grader.Evidence{Events: readEvents(filepath.Join(m.src, results.EventsFile)), Source: m.from.Evidence.Source}
}

// grade runs the task's separate verifier on the recorded artifacts.
func (m *regradeTrial) grade(ctx context.Context, step *stepRun) (grader.Grade, error) {
	entries, err := harbor.ReadArtifactManifest(step.artifactsDir)
	if err != nil {
		return grader.Grade{}, err
	}
	req := m.h.a.gradeRequest("", m.h.workdir, step)
	return m.h.separateVerify(ctx, step, req, entries)
}

// replayRegrade readies a regrade whose task grades the work dir itself
// (a native task, or a Harbor task whose verifier runs in the agent's
// container): the trial runs in the task's model as any other, with an
// agent that rebuilds the work dir from the recorded trial's diff.patch,
// and is graded as the task grades. Harbor refuses such a regrade; here
// only the work dir is reproduced, and the trial's note says so.
func (a *trialAttempt) replayRegrade() error {
	src := filepath.Join(a.t.Variant.Regrade, a.t.ID)
	from, err := results.ReadResult(filepath.Join(src, results.ResultFile))
	if err != nil {
		return fmt.Errorf("regrade: the recorded trial: %w", err)
	}
	a.res.RegradedFrom = &results.Source{Action: "regrade", RunID: from.RunID, Trial: from.Trial, Path: src,
		Reward: from.Reward, Outcome: string(from.Outcome), Reproduced: results.ReproducedWorkdir}
	ap := from.AgentPhase
	a.replay = &agent.Replay{Patch: filepath.Join(src, results.DiffPatch), ExitCode: ap.ExitCode, TimedOut: ap.TimedOut, Failed: ap.Failed}
	a.s.Report.Note(a.t, "regrade: the work dir rebuilt from "+a.replay.Patch+
		" and graded as the task grades it; only the work dir is reproduced (not what the agent changed outside it, nor the processes it left)")
	return nil
}

// readEvents reads an events.jsonl; what does not read is left out.
func readEvents(p string) []grader.Event {
	f, err := os.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []grader.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var e grader.Event
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			out = append(out, e)
		}
	}
	return out
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
