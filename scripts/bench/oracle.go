package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flightdeck/flightdeck/runner/results"
)

// oracleFigures are what a user feels first: one `flightdeck run` of one
// oracle trial of the Harbor-format task, the whole process, beside the
// same trial re-enacted as the docker CLI commands Harbor's procedure
// comes to.
type oracleFigures struct {
	run     samples    // the binary's wall-clock time
	trial   samples    // the run's one trial, as run.json times it
	process samples    // run − trial: process start, load, preflight, reap, image, reports
	cli     samples    // the CLI re-enactment, every step
	steps   []samples  // by step, in oracleSteps order
	phases  []phaseRow // the trial's phases, from its result.json (no engine calls: the binary's are not timed)
}

// oracleSteps name the CLI re-enactment's steps, one docker CLI process each.
var oracleSteps = []string{
	"`docker run -d` (the image's entrypoint, `sleep infinity`)",
	"`docker cp` solution/ in",
	"`docker exec` solve.sh",
	"`docker cp` tests/ in",
	"`docker exec` test.sh (after `mkdir -p /logs/verifier`)",
	"`docker cp` the reward out",
	"`docker rm -f`",
}

func newOracleFigures() *oracleFigures {
	return &oracleFigures{steps: make([]samples, len(oracleSteps))}
}

// oracleRunOnce runs the built binary as a user would for one oracle
// trial of the Harbor task, into a fresh results dir, and returns its
// wall-clock time and its trial's own.
func (b *bench) oracleRunOnce(ctx context.Context) (wall time.Duration, trial *results.Result, err error) {
	return b.oneOracleRun(ctx, "oracle", b.ws.harbor)
}

// oneOracleRun runs the built binary for one oracle trial of a task into a
// fresh results dir, checks that it passed, and returns the process's
// wall-clock time and the trial's result.
func (b *bench) oneOracleRun(ctx context.Context, name, task string) (wall time.Duration, trial *results.Result, err error) {
	resultsDir, err := b.ws.freshResults(name)
	if err != nil {
		return 0, nil, err
	}
	r, err := b.runBinary(ctx, "run", "-p", task, "--variant", "oracle", "--results", resultsDir)
	if err != nil {
		return 0, nil, err
	}
	runs, err := filepath.Glob(filepath.Join(resultsDir, "*", results.RunFile))
	if err != nil || len(runs) != 1 {
		return 0, nil, fmt.Errorf("%s run: want one run.json in %s, found %d (%v)", name, resultsDir, len(runs), err)
	}
	rec, err := results.ReadRunRecord(filepath.Dir(runs[0]))
	if err != nil {
		return 0, nil, err
	}
	if err := b.checkRun(rec); err != nil {
		return 0, nil, fmt.Errorf("%s run: %w", name, err)
	}
	if len(rec.Trials) != 1 {
		return 0, nil, fmt.Errorf("%s run: %d trials, want 1", name, len(rec.Trials))
	}
	res, err := results.ReadResult(filepath.Join(filepath.Dir(runs[0]), rec.Trials[0].Trial, results.ResultFile))
	if err != nil {
		return 0, nil, err
	}
	return r.wall, res, nil
}

// oracleCLIOnce re-enacts the oracle trial of the Harbor task with the
// docker CLI, one process per step as oracleSteps lists them, on the image
// flightdeck's runs use, and returns each step's time. The container is
// Harbor's: the image's entrypoint with `sleep infinity`, no init, no
// network (allow_internet = false), the task's limits.
func (b *bench) oracleCLIOnce(ctx context.Context) (steps []time.Duration, err error) {
	out, err := os.MkdirTemp(b.ws.root, "oracle-cli-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(out)
	var cid string
	defer func() {
		if cid != "" {
			exec.CommandContext(context.WithoutCancel(ctx), "docker", "rm", "-f", cid).Run()
		}
	}()
	step := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "docker", args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		err := cmd.Run()
		steps = append(steps, time.Since(start))
		if err != nil {
			return "", fmt.Errorf("docker %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return strings.TrimSpace(stdout.String()), nil
	}
	run := []string{"run", "-d", "--network", "none",
		"--label", "flightdeck.managed=true", "--label", "flightdeck.run=" + b.runID, "--label", "flightdeck.kind=cliref"}
	if n := b.harbor.NanoCPUs(); n > 0 {
		run = append(run, "--cpus", strconv.FormatFloat(float64(n)/1e9, 'f', -1, 64))
	}
	mem, err := b.harbor.MemoryBytes()
	if err != nil {
		return nil, err
	}
	if mem > 0 {
		run = append(run, "--memory", strconv.FormatInt(mem, 10))
	}
	if cid, err = step(append(run, b.harborImg.Ref, "sleep", "infinity")...); err != nil {
		return nil, err
	}
	reward := filepath.Join(out, "reward.txt")
	for _, args := range [][]string{
		{"cp", b.harbor.Path("solution"), cid + ":/solution"},
		{"exec", "-w", "/app", cid, "bash", "/solution/solve.sh"},
		{"cp", b.harbor.Path("tests"), cid + ":/tests"},
		{"exec", "-w", "/app", cid, "bash", "-c", "mkdir -p /logs/verifier && bash /tests/test.sh"},
		{"cp", cid + ":/logs/verifier/reward.txt", reward},
		{"rm", "-f", cid},
	} {
		if _, err := step(args...); err != nil {
			return nil, err
		}
	}
	cid = ""
	got, err := os.ReadFile(reward)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(string(got)) != "1" {
		return nil, errors.New("oracle CLI re-enactment: reward " + strconv.Quote(strings.TrimSpace(string(got))) + ", want 1")
	}
	return steps, nil
}

// addRun records one run of the binary and its trial's result.
func (f *oracleFigures) addRun(wall time.Duration, res *results.Result) {
	trial := res.Finished.Sub(res.Started)
	f.run = append(f.run, wall.Seconds())
	f.trial = append(f.trial, trial.Seconds())
	f.process = append(f.process, (wall - trial).Seconds())
	for _, p := range res.Phases {
		i := slices.IndexFunc(f.phases, func(r phaseRow) bool { return r.name == p.Name })
		if i < 0 {
			f.phases = append(f.phases, phaseRow{name: p.Name})
			i = len(f.phases) - 1
		}
		f.phases[i].took = append(f.phases[i].took, p.End.Sub(p.Start).Seconds())
	}
}

// addCLI records one CLI re-enactment.
func (f *oracleFigures) addCLI(steps []time.Duration) {
	var total time.Duration
	for i, d := range steps {
		f.steps[i] = append(f.steps[i], d.Seconds())
		total += d
	}
	f.cli = append(f.cli, total.Seconds())
}
