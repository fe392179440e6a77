package runner

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/text"
	"github.com/flightdeck/flightdeck/runner/agent"
	"github.com/flightdeck/flightdeck/runner/audit"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
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
			return suite.UsageErrorf("--skip %s: not a check (the checks: %s)", s, strings.Join(audit.Checks, ", "))
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
		in := audit.Input{Task: t.ID, Dir: t.Dir, Skip: skip, EnvVars: results.VerifyEnvVars,
			HasPatch: fileExists(t.Path("solution", agent.ReferencePatch))}
		in.NoOracle = !hasOracle(t)
		for _, res := range byTask[t.ID] {
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
			}
		}
		instrs, dfErr := taskDockerfile(t)
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
			in.Leaks, in.LeakErr = taskLeaks(ctx, eng, rec.RunID, t, instrs, dfErr, ran)
		}
		task := audit.Audit(in)
		for _, res := range byTask[t.ID] {
			if res.Outcome == grader.OutcomeInfraError {
				task.Infra = append(task.Infra, res.Trial+": "+text.OneLine(res.Error, 300))
			}
		}
		rep.Tasks = append(rep.Tasks, task)
	}
	return rep, nil
}

// taskDockerfile reads environment/Dockerfile's instructions; none (and no
// error) for a task that runs a prebuilt image.
func taskDockerfile(t *tasks.Task) ([]sandbox.Instruction, error) {
	data, err := os.ReadFile(t.Path(tasks.EnvironmentDir, "Dockerfile"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return sandbox.DockerfileInstructions(data)
}

// taskLeaks looks for the files of tests/ and solution/ in the build
// context, in the Dockerfile's COPY and ADD, and in the image the task's
// trials ran in (the oracle's, or the empty attempt's).
func taskLeaks(ctx context.Context, eng sandbox.Engine, runID string, t *tasks.Task, instrs []sandbox.Instruction, dfErr error, ran []*results.Result) ([]string, error) {
	hidden, err := audit.HiddenFiles(t.Dir, tasks.TestsDir, "solution")
	if err != nil {
		return nil, err
	}
	leaks, err := audit.EnvironmentLeaks(t.Dir, hidden)
	if err != nil {
		return nil, err
	}
	if dfErr == nil {
		leaks = append(leaks, audit.DockerfileLeaks(tasks.EnvironmentDir+"/Dockerfile", instrs)...)
	}
	if len(hidden) == 0 {
		return leaks, nil
	}
	image := ""
	for _, r := range ran {
		if r.Image != "" && image == "" {
			image = r.Image
		}
	}
	if image == "" {
		return leaks, errors.New("no trial recorded the task's image: the image was not searched")
	}
	found, err := scanImage(ctx, eng, runID, image, hidden.Sizes(t.Dir), t.ID)
	if err != nil {
		return leaks, fmt.Errorf("search the image %s: %w", image, err)
	}
	for _, f := range found {
		if src, ok := hidden[f.sum]; ok {
			leaks = append(leaks, fmt.Sprintf("%s is in the image at %s", src, f.path))
		}
	}
	return leaks, nil
}

type imageFile struct{ sum, path string }

// scanImage hashes the image's files of the sizes given, in a container
// started from it without a network, with the image's own find and
// sha256sum.
func scanImage(ctx context.Context, eng sandbox.Engine, runID, image string, sizes []int64, taskID string) ([]imageFile, error) {
	if len(sizes) > 500 {
		sizes = sizes[:500]
	}
	var expr []string
	for i, s := range sizes {
		if i > 0 {
			expr = append(expr, "-o")
		}
		expr = append(expr, "-size", fmt.Sprintf("%dc", s))
	}
	c, err := eng.Start(ctx, sandbox.ContainerSpec{Image: image, Name: "audit-" + taskID, RunID: runID, TrialID: "audit-" + taskID,
		Labels: map[string]string{sandbox.LabelPhase: "audit"}})
	if c.ID != "" {
		defer eng.Remove(context.WithoutCancel(ctx), c.ID)
	}
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "flightdeck-audit-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "out")
	script := `find / -xdev \( -path /proc -o -path /sys -o -path /dev \) -prune -o -type f \( "$@" \) -print0 | xargs -0 -r sha256sum`
	res, err := eng.Exec(ctx, c.ID, sandbox.ExecSpec{Cmd: append([]string{"sh", "-c", script, "scan"}, expr...),
		User: "0", StdoutPath: out, StderrPath: filepath.Join(dir, "err"), Timeout: 5 * time.Minute, MaxOutput: 64 << 20})
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 || res.TimedOut {
		msg, _ := os.ReadFile(filepath.Join(dir, "err"))
		return nil, fmt.Errorf("the scan of the image for copies of tests/ and solution/ files (find and sha256sum, as root) failed with exit code %d: %s",
			res.ExitCode, text.LastLines(string(msg), 3))
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	var files []imageFile
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		sum, p, ok := strings.Cut(sc.Text(), "  ")
		if ok {
			files = append(files, imageFile{sum: sum, path: p})
		}
	}
	return files, nil
}
