package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/flightdeck/flightdeck/runner/results"
)

// composeFigures compare one `flightdeck run` of one oracle trial of a
// multi-container task (main and one idle service), the whole process,
// with the same trial as docker-compose commands: up, exec, cp, down.
type composeFigures struct {
	run   samples   // the binary's wall-clock time
	trial samples   // the run's one trial, as its result.json times it
	cli   samples   // the docker-compose re-enactment, every step
	steps []samples // by step, in composeSteps order
}

// composeSteps name the re-enactment's steps, one CLI process each.
var composeSteps = []string{
	"`docker-compose up -d` (main: the image's entrypoint, `sleep infinity`; the service; the project's network)",
	"`docker-compose ps -q main`",
	"`docker cp` solution/ in",
	"`docker-compose exec` solve.sh",
	"`docker cp` tests/ in",
	"`docker-compose exec` test.sh (after `mkdir -p /logs/verifier`)",
	"`docker cp` the reward out",
	"`docker-compose down -v`",
}

// composeTarget: a multi-container trial, the whole `flightdeck run`, at
// most half the time of the same trial as docker-compose commands.
const composeTarget = 0.5

// composeRounds measures the compose trial both ways, interleaved, after
// one unmeasured run of each (the task's image built, the engine warm).
func (b *bench) composeRounds(ctx context.Context, rounds int) (*composeFigures, error) {
	if _, err := exec.LookPath("docker-compose"); err != nil {
		return nil, fmt.Errorf("the compose comparison needs docker-compose (Debian's package): %w", err)
	}
	f := &composeFigures{steps: make([]samples, len(composeSteps))}
	if _, _, err := b.composeRunOnce(ctx); err != nil {
		return nil, err
	}
	if _, err := b.composeCLIOnce(ctx); err != nil {
		return nil, err
	}
	for i := range rounds {
		b.logf("compose round %d/%d", i+1, rounds)
		wall, res, err := b.composeRunOnce(ctx)
		if err != nil {
			return nil, err
		}
		f.run = append(f.run, wall.Seconds())
		f.trial = append(f.trial, res.Finished.Sub(res.Started).Seconds())
		steps, err := b.composeCLIOnce(ctx)
		if err != nil {
			return nil, err
		}
		var total time.Duration
		for j, d := range steps {
			f.steps[j] = append(f.steps[j], d.Seconds())
			total += d
		}
		f.cli = append(f.cli, total.Seconds())
	}
	return f, nil
}

// composeRunOnce runs the binary for one oracle trial of the compose task
// into a fresh results dir.
func (b *bench) composeRunOnce(ctx context.Context) (time.Duration, *results.Result, error) {
	wall, res, err := b.oneOracleRun(ctx, "compose", b.ws.compose)
	if err != nil {
		return 0, nil, err
	}
	if b.composeImage == "" {
		b.images = append(b.images, res.Image)
	}
	b.composeImage = res.Image
	return wall, res, nil
}

// composeCLIOnce re-enacts the trial with docker-compose on the image
// flightdeck's run built: a base file for main (the image, `sleep
// infinity`) and the task's file over it, as Harbor layers them.
func (b *bench) composeCLIOnce(ctx context.Context) (steps []time.Duration, err error) {
	out, err := os.MkdirTemp(b.ws.root, "compose-cli-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(out)
	project := "fdbench" + strings.ReplaceAll(filepath.Base(out), "-", "")
	base := filepath.Join(out, "base.yaml")
	if err := os.WriteFile(base, []byte(fmt.Sprintf(`services:
  main:
    image: %q
    command: ["sleep", "infinity"]
    labels: {flightdeck.managed: "true", flightdeck.run: %q, flightdeck.kind: cliref}
`, b.composeImage, b.runID)), 0o644); err != nil {
		return nil, err
	}
	compose := []string{"-p", project, "--project-directory", filepath.Join(b.ws.compose, "environment"),
		"-f", base, "-f", filepath.Join(b.ws.compose, "environment", "docker-compose.yaml")}
	up := false
	defer func() {
		if up {
			exec.CommandContext(context.WithoutCancel(ctx), "docker-compose", append(compose, "down", "-v")...).Run()
		}
	}()
	step := func(tool string, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, tool, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		err := cmd.Run()
		steps = append(steps, time.Since(start))
		if err != nil {
			return "", fmt.Errorf("%s %s: %v: %s", tool, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return strings.TrimSpace(stdout.String()), nil
	}
	up = true
	if _, err := step("docker-compose", append(compose, "up", "-d")...); err != nil {
		return nil, err
	}
	cid, err := step("docker-compose", append(compose, "ps", "-q", "main")...)
	if err != nil {
		return nil, err
	}
	reward := filepath.Join(out, "reward.txt")
	for _, s := range [][]string{
		{"docker", "cp", filepath.Join(b.ws.compose, "solution"), cid + ":/solution"},
		append(append([]string{"docker-compose"}, compose...), "exec", "-T", "main", "bash", "/solution/solve.sh"),
		{"docker", "cp", filepath.Join(b.ws.compose, "tests"), cid + ":/tests"},
		append(append([]string{"docker-compose"}, compose...), "exec", "-T", "main", "bash", "-c", "mkdir -p /logs/verifier && bash /tests/test.sh"),
		{"docker", "cp", cid + ":/logs/verifier/reward.txt", reward},
		append(append([]string{"docker-compose"}, compose...), "down", "-v"),
	} {
		if _, err := step(s[0], s[1:]...); err != nil {
			return nil, err
		}
	}
	up = false
	got, err := os.ReadFile(reward)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(string(got)) != "1" {
		return nil, fmt.Errorf("compose re-enactment: reward %q, want 1", strings.TrimSpace(string(got)))
	}
	return steps, nil
}

// writeCompose writes the compose section.
func (r *report) writeCompose(w writer) {
	c := r.compose
	if c == nil {
		return
	}
	w("## A multi-container trial\n\n")
	w("%s\n\n", wrap("fixtures/bench/compose is a Harbor-format task with environment/docker-compose.yaml: main "+
		"(the task image) depends on one idle service (`image: flightdeck/base:bookworm`, `sleep infinity`). "+
		"`flightdeck run -p fixtures/bench/compose --variant oracle --results DIR`, the whole process (the task's "+
		"image cached), beside the same trial as docker-compose commands (Debian's docker-compose, one process "+
		"per step, on the image flightdeck built), in interleaved rounds after one unmeasured run of each.", 105))
	w("| figure | time |\n|---|---|\n")
	w("| **`flightdeck run`, one oracle trial of the compose task, the whole process** | **%s** |\n", c.run.spread())
	w("| of which the trial (result.json: its start to its result) | %s |\n", c.trial.spread())
	w("| **the same trial as docker-compose commands** | **%s** |\n", c.cli.spread())
	for i, name := range composeSteps {
		w("| %s | %s |\n", name, c.steps[i].spread())
	}
	w("| `flightdeck run` / docker-compose | %.2f × |\n\n", c.run.median()/c.cli.median())
}
