package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/text"
	"github.com/flightdeck/flightdeck/runner/agent"
	"github.com/flightdeck/flightdeck/runner/harbor"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/tasks"
)

// PrepareRegrade is the run that grades the trials of the finished run in
// source anew with the tasks opts.Path names, matched to the source's
// trials by task id (flightdeck regrade): the source's variants and
// attempts, each trial's agent work the recorded one. Tasks the source did
// not run are left out, and so are the source's tasks not given; the run's
// notes say how many.
func PrepareRegrade(ctx context.Context, source string, opts suite.Options) (Request, error) {
	rec, err := results.ReadRunRecord(source)
	if err != nil {
		return Request{}, suite.UsageErrorf("%v", err)
	}
	opts.Variants = nil
	req, err := Prepare(ctx, "", opts)
	if err != nil {
		return Request{}, err
	}
	ran := map[string]bool{}
	for _, t := range rec.Trials {
		ran[t.TaskID] = true
	}
	var notGiven []string
	given := map[string]bool{}
	req.Tasks = slices.DeleteFunc(req.Tasks, func(t *tasks.Task) bool {
		given[t.ID] = true
		if !ran[t.ID] {
			notGiven = append(notGiven, t.ID)
		}
		return !ran[t.ID]
	})
	req.Refused = slices.DeleteFunc(req.Refused, func(rt suite.RefusedTask) bool {
		given[rt.ID] = true
		return !ran[rt.ID]
	})
	if len(req.Tasks)+len(req.Refused) == 0 {
		return Request{}, suite.UsageErrorf("none of the tasks given ran in run %s: regrade matches tasks to its trials by task id", rec.RunID)
	}
	cfg := &req.Config
	cfg.Suite = rec.Config.Suite + "-regrade"
	cfg.Attempts = rec.Config.Attempts
	for from, to := range rec.Config.Images {
		// The recorded run's image map, unless the command line's says
		// otherwise.
		if _, ok := cfg.Images[from]; !ok {
			if cfg.Images == nil {
				cfg.Images = map[string]string{}
			}
			cfg.Images[from] = to
		}
	}
	cfg.Variants = nil
	for _, v := range rec.Config.Variants {
		v.Regrade = source
		// No agent runs: the variant's environment (its keys, which the
		// record holds redacted) is not asked for.
		v.Env = nil
		cfg.Variants = append(cfg.Variants, v)
	}
	cfg.Notes = append(cfg.Notes, fmt.Sprintf("regrade of run %s (%s): each trial's recorded work graded by the task as it is now; the source is not changed", rec.RunID, source))
	if len(notGiven) > 0 {
		cfg.Notes = append(cfg.Notes, fmt.Sprintf("%s given did not run in %s, left out (first: %s)", text.Count(len(notGiven), "task"), rec.RunID, notGiven[0]))
	}
	var notRegraded []string
	for id := range ran {
		if !given[id] {
			notRegraded = append(notRegraded, id)
		}
	}
	if len(notRegraded) > 0 {
		slices.Sort(notRegraded)
		cfg.Notes = append(cfg.Notes, fmt.Sprintf("%s of %s not given, not regraded (first: %s)", text.Count(len(notRegraded), "task"), rec.RunID, notRegraded[0]))
	}
	return req, nil
}

// regradeRefusal is why trial t, of a regrade, cannot be graded anew from
// its recorded trial (nil: it can): a multi-step task, a source trial that
// was not graded, and, as Harbor's regrade refuses, one whose record lacks
// an artifact a separate verifier needs. A task that grades the work dir
// itself (native, or a verifier in the agent's container) needs the
// recorded trial's diff.patch whole, and a source graded the same way.
func regradeRefusal(t *suite.Trial) *suite.Refusal {
	task := t.Task
	taskFile := task.Path(tasks.TaskFile)
	if len(task.Config.Steps) > 0 {
		return &suite.Refusal{File: taskFile, Field: "[[steps]]", Rule: "a multi-step task's trials are not regraded"}
	}
	src := filepath.Join(t.Variant.Regrade, t.ID)
	resultFile := filepath.Join(src, results.ResultFile)
	from, err := results.ReadResult(resultFile)
	if err != nil {
		return &suite.Refusal{File: resultFile, Rule: "no recorded trial to regrade: " + err.Error()}
	}
	switch from.Outcome {
	case grader.OutcomeInfraError, grader.OutcomeRefused, grader.OutcomeNeedsInput, grader.OutcomeTaskError:
		return &suite.Refusal{File: resultFile, Field: "outcome",
			Rule: fmt.Sprintf("the recorded trial ended %s: its record is not the agent's finished work", from.Outcome)}
	}
	if len(from.Steps) > 0 {
		return &suite.Refusal{File: resultFile, Field: "steps", Rule: "a multi-step trial is not regraded"}
	}
	if _, ok := task.SeparateVerifier(); !ok {
		return workdirRefusal(task, src, from)
	}
	if p, err := harbor.PolicyFor(task.Config, harbor.NetVerifier); err == nil && p.Mode == harbor.NetworkAllowlist {
		return &suite.Refusal{File: taskFile, Field: "[verifier].network_mode", Rule: "a regrade of a separate verifier with an allowlist is not supported"}
	}
	if _, err := os.Stat(harbor.ArtifactsDir(src)); err != nil {
		return &suite.Refusal{File: resultFile, Rule: "the recorded trial has no logs/artifacts dir: it was not run the Harbor way"}
	}
	entries, err := harbor.ReadArtifactManifest(harbor.ArtifactsDir(src))
	if err != nil {
		return &suite.Refusal{File: resultFile, Rule: err.Error()}
	}
	for _, a := range task.Artifacts() {
		i := slices.IndexFunc(entries, func(e harbor.ArtifactEntry) bool { return e.Source == a.Source && e.Service == sidecarOf(a) })
		switch {
		case i < 0:
			return &suite.Refusal{File: taskFile, Field: "artifacts", Rule: fmt.Sprintf("%s is not in the recorded trial's artifacts (%s)", a.Source, harbor.ArtifactManifest)}
		case entries[i].Status != "ok" && !strings.HasSuffix(entries[i].Error, harbor.ArtifactAbsent):
			// One that was not there is replayed as not there; one whose
			// copy failed has no trustworthy bytes.
			return &suite.Refusal{File: taskFile, Field: "artifacts", Rule: fmt.Sprintf("%s was not collected in the recorded trial (%s): %s", a.Source, entries[i].Status, entries[i].Error)}
		}
	}
	return nil
}

// workdirRefusal is why a task that grades the work dir itself cannot
// regrade the recorded trial in src (nil: it can): the work dir is rebuilt
// from the trial's diff.patch, which must be whole, and the source must
// have been graded in the same model (a native trial's work dir is not a
// Harbor container's).
func workdirRefusal(task *tasks.Task, src string, from *results.Result) *suite.Refusal {
	resultFile := filepath.Join(src, results.ResultFile)
	if from.Native != task.Native() {
		model := map[bool]string{true: "flightdeck's native model", false: "Harbor's model"}
		return &suite.Refusal{File: resultFile, Field: "native",
			Rule: fmt.Sprintf("the recorded trial ran in %s and the task now runs in %s: its work dir is not rebuilt across models", model[from.Native], model[task.Native()])}
	}
	patch := filepath.Join(src, results.DiffPatch)
	data, err := os.ReadFile(patch)
	if err != nil {
		return &suite.Refusal{File: patch, Rule: "the work dir is rebuilt from the recorded diff.patch, which cannot be read: " + err.Error()}
	}
	if cut := agent.PatchCut(data); cut != "" {
		return &suite.Refusal{File: patch, Rule: "the recorded diff.patch is incomplete (" + cut + "): the work dir cannot be rebuilt whole"}
	}
	return nil
}

func sidecarOf(a tasks.Artifact) string {
	if a.Sidecar() {
		return a.Service
	}
	return ""
}
