package audit

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/flightdeck/flightdeck/internal/text"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/tasks"
)

// TaskLeaks looks for the files of tests/ and solution/ in the build
// context, in the Dockerfile's COPY and ADD, and in the image the task's
// trials ran in (the oracle's, or the empty attempt's). What the oracle's
// grading (g, nil when unknown) shows to be an input the agent is given
// too is not a leak: it is returned apart.
func TaskLeaks(ctx context.Context, eng sandbox.Engine, runID string, t *tasks.Task, instrs []sandbox.Instruction, dfErr error, ran []*results.Result, g *Grading) (leaks, inputs []string, err error) {
	leaks, err = taskLeaks(ctx, eng, runID, t, instrs, dfErr, ran, g)
	leaks, inputs = classifyLeaks(t.Dir, leaks, g)
	return leaks, inputs, err
}

func taskLeaks(ctx context.Context, eng sandbox.Engine, runID string, t *tasks.Task, instrs []sandbox.Instruction, dfErr error, ran []*results.Result, g *Grading) ([]string, error) {
	hidden, err := HiddenFiles(t.Dir, tasks.TestsDir, "solution")
	if err != nil {
		return nil, err
	}
	leaks, err := EnvironmentLeaks(t.Dir, hidden)
	if err != nil {
		return nil, err
	}
	if dfErr == nil {
		leaks = append(leaks, DockerfileLeaks(tasks.EnvironmentDir+"/Dockerfile", instrs)...)
	}
	outputs := g.outputs()
	if len(hidden) == 0 && len(outputs) == 0 {
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
	found, err := scanImage(ctx, eng, runID, image, append(hidden.Sizes(t.Dir), outputs.sizes()...), t.ID)
	if err != nil {
		return leaks, fmt.Errorf("search the image %s: %w", image, err)
	}
	for _, f := range found {
		if src, ok := hidden[f.sum]; ok {
			leaks = append(leaks, fmt.Sprintf("%s is in the image at %s", src, f.path))
		}
		if out, ok := outputs[f.sum]; ok && f.path != out.path && !systemPath(f.path) {
			leaks = append(leaks, fmt.Sprintf("the oracle's output %s is in the image at %s: the answer is where the agent can read it", out.path, f.path))
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

// solutionNames reports whether the solution/solve.sh of the task in dir
// names a path.
func solutionNames(dir, p string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "solution", "solve.sh"))
	return err == nil && bytes.Contains(data, []byte(p))
}
