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
	"github.com/flightdeck/flightdeck/runner/audit"
	"github.com/flightdeck/flightdeck/runner/htmlreport"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/runner/trial"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/tasks"
)

// VerifyOptions are `task verify`'s own: how many times the oracle runs,
// and the checks left out.
type VerifyOptions struct {
	Repeat int      // the oracle's runs; 0: DefaultRepeat
	Skip   []string // names of audit.Checks
}

// DefaultRepeat is how many times task verify runs the oracle.
const DefaultRepeat = 3

// check refuses unknown check names.
func (vo VerifyOptions) check() error {
	for _, s := range vo.Skip {
		if !slices.Contains(audit.Checks, s) {
			hint := ""
			if near := text.Nearest(s, audit.Checks); near != "" {
				hint = "; did you mean " + near + "?"
			}
			return suite.UsageErrorf("--skip %s: not a check (the checks: %s)%s", s, strings.Join(audit.Checks, ", "), hint)
		}
	}
	if vo.Repeat < 0 {
		return suite.UsageErrorf("--repeat %d: want 1 or more", vo.Repeat)
	}
	return nil
}

// Audit judges each task of a verify run (PrepareVerify): its trials'
// results, its files and, for leaks, its image, which a container started
// from it (no network) searches for the files of tests/ and solution/.
func (r *Runner) Audit(ctx context.Context, req Request, rec *results.RunRecord, vo VerifyOptions) (*audit.Report, error) {
	rep := &audit.Report{RunID: rec.RunID, Repeat: max(vo.Repeat, 1), Skipped: vo.Skip, NotRun: rec.NotRun}
	if vo.Repeat == 0 {
		rep.Repeat = DefaultRepeat
	}
	skip := map[string]bool{}
	for _, s := range vo.Skip {
		skip[s] = true
	}
	byTask := map[string][]*results.Result{}
	for _, ts := range rec.Trials {
		res, err := results.ReadResult(filepath.Join(rec.Dir, ts.Trial, results.ResultFile))
		if err != nil {
			return nil, err
		}
		byTask[ts.TaskID] = append(byTask[ts.TaskID], res)
	}
	var eng sandbox.Engine
	for _, t := range req.Tasks {
		in := verifyInput(t, rec.Dir, byTask[t.ID], skip)
		instrs, dfErr := audit.TaskDockerfile(t)
		if !skip[audit.CheckRepro] {
			in.ReproErr = dfErr
			if dfErr == nil {
				in.Repro = audit.Reproducibility(tasks.EnvironmentDir+"/Dockerfile", instrs)
			}
		}
		if !skip[audit.CheckLeaks] {
			if eng == nil {
				var err error
				if eng, err = r.Open(ctx); err != nil {
					return nil, err
				}
			}
			ran := in.Oracle
			if in.Nop != nil {
				ran = append(slices.Clone(ran), in.Nop)
			}
			g := audit.OracleGrading(rec.Dir, in.Oracle, byTask[t.ID])
			in.VerifierCode = g.VerifierCode()
			in.Leaks, in.LeakInputs, in.LeakErr = audit.TaskLeaks(ctx, eng, rec.RunID, t, instrs, dfErr, ran, g)
		}
		task := audit.Audit(in)
		for _, res := range byTask[t.ID] {
			if res.Outcome == grader.OutcomeInfraError {
				task.Infra = append(task.Infra, res.Trial+": "+text.OneLine(res.Error, 300))
			}
		}
		rep.Tasks = append(rep.Tasks, task)
	}
	// Saved beside the trials, and the run's page made again to show it.
	if err := audit.Save(rec.Dir, rep); err != nil {
		return nil, err
	}
	if err := htmlreport.WriteFile(filepath.Join(rec.Dir, htmlreport.File), rec.Dir, ""); err != nil {
		return nil, fmt.Errorf("write the run's report with its audit: %w", err)
	}
	return rep, nil
}

// verifyInput sorts a task's trials into what its checks read.
func verifyInput(t *tasks.Task, runDir string, trials []*results.Result, skip map[string]bool) audit.Input {
	in := audit.Input{Task: t.ID, Dir: t.Dir, RunDir: runDir, Skip: skip, EnvVars: results.VerifyEnvVars,
		HasPatch: fileExists(t.Path("solution", agent.ReferencePatch))}
	in.NoOracle = !hasOracle(t)
	for _, res := range trials {
		switch res.Variant {
		case suite.AgentOracle:
			in.Oracle = append(in.Oracle, res)
		case suite.AgentNop:
			in.Nop = res
		case results.VerifySnapshot:
			in.Snapshot = res
		case results.VerifyEnv:
			in.EnvRun = res
		case results.VerifyUnsettled:
			in.Unsettled = res
		case results.VerifyOffline:
			in.Offline = res
		case results.VerifyPatch:
			in.Patch = res
		case results.VerifyHidden:
			in.Hidden = res
			if log, err := os.ReadFile(filepath.Join(runDir, res.Trial, results.AgentLog)); err == nil {
				in.HiddenFiles = agent.ParseHidden(string(log))
				in.HiddenAltered = agent.ParseAltered(string(log))
				in.HiddenWritable = agent.ParseWritable(string(log))
			}
			in.HiddenShared = res.GradePhase.Mode == trial.GradeLive || res.GradePhase.Mode == trial.GradeSnapshot
		default:
			if name, ok := strings.CutPrefix(res.Variant, results.VerifyAttackPrefix); ok {
				in.Attacks = append(in.Attacks, attackRun(runDir, name, res))
			}
		}
	}
	return in
}

// attackRun is an attack's trial with what it planted and whether it ran
// as root beside a live verifier, from its agent.log.
func attackRun(runDir, name string, res *results.Result) audit.AttackRun {
	log, _ := os.ReadFile(filepath.Join(runDir, res.Trial, results.AgentLog))
	return audit.AttackRun{Name: name, Result: res, Planted: agent.ParsePlanted(string(log)), Note: agent.ParseNote(string(log)),
		Root: res.GradePhase.Mode == trial.GradeLive && agent.RanAsRoot(string(log))}
}
