// Package metric runs a dataset's metric.py, as Harbor does after a job:
// per variant, the trials' rewards of the dataset's tasks go in as JSON
// lines (one reward object per trial, null for a trial with none), and the
// JSON object it writes is the dataset's metrics.
package metric

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/flightdeck/flightdeck/internal/text"
	"github.com/flightdeck/flightdeck/runner/registry"
	"github.com/flightdeck/flightdeck/runner/results"
)

// Timeout bounds one run of metric.py.
const Timeout = time.Minute

// Trial is what metric.py reads of one trial.
type Trial struct {
	TaskDir, Variant string
	Reward           *float64
	Rewards          map[string]float64
}

// Compute runs the metric.py of each dataset the trials' tasks come from
// (a dataset dir whose dataset.toml lists one in [[files]]), per variant.
// A metric that cannot run says why in its Error; variants are in the
// order given.
func Compute(ctx context.Context, trials []Trial, variants []string) []results.DatasetMetric {
	byDir := map[string][]Trial{}
	var dirs []string
	for _, t := range trials {
		d := filepath.Dir(t.TaskDir)
		if _, seen := byDir[d]; !seen {
			dirs = append(dirs, d)
		}
		byDir[d] = append(byDir[d], t)
	}
	slices.Sort(dirs)
	var out []results.DatasetMetric
	for _, dir := range dirs {
		m, err := registry.ReadManifest(dir)
		if err != nil || m == nil {
			continue // no manifest (a run that read one refused a bad one)
		}
		i := slices.IndexFunc(m.Files, func(f registry.ManifestRef) bool { return f.Path == registry.MetricFile })
		if i < 0 {
			continue
		}
		script := filepath.Join(dir, registry.MetricFile)
		why := scriptProblem(script, m.Files[i].Digest)
		for _, v := range variants {
			var rows []Trial
			for _, t := range byDir[dir] {
				if t.Variant == v {
					rows = append(rows, t)
				}
			}
			if len(rows) == 0 {
				continue
			}
			dm := results.DatasetMetric{Dataset: m.Dataset.Name, Script: script, Variant: v, Trials: len(rows), Error: why}
			if why == "" {
				dm.Metrics, err = run(ctx, script, rows)
				if err != nil {
					dm.Error = err.Error()
				}
			}
			out = append(out, dm)
		}
	}
	return out
}

// scriptProblem is why a listed metric.py is not run: missing, or not the
// bytes dataset.toml pins ("" when it runs).
func scriptProblem(script, digest string) string {
	data, err := os.ReadFile(script)
	if err != nil {
		return fmt.Sprintf("not run: dataset.toml lists %s, which cannot be read (%v)", registry.MetricFile, err)
	}
	sum := sha256.Sum256(data)
	got := "sha256:" + hex.EncodeToString(sum[:])
	if digest != "" && digest != got {
		return fmt.Sprintf("not run: %s hashes to %s, dataset.toml pins %s (flightdeck dataset init --update %s pins it anew)",
			script, got, digest, filepath.Dir(script))
	}
	return ""
}

// run writes the rewards, runs metric.py with the host's python3 and no
// network, and reads its metrics.
func run(ctx context.Context, script string, rows []Trial) (map[string]any, error) {
	tmp, err := os.MkdirTemp("", "flightdeck-metric-")
	if err != nil {
		return nil, fmt.Errorf("not run: %w", err)
	}
	defer os.RemoveAll(tmp)
	in, out := filepath.Join(tmp, "rewards.jsonl"), filepath.Join(tmp, "metric.json")
	if err := os.WriteFile(in, rewardLines(rows), 0o600); err != nil {
		return nil, fmt.Errorf("not run: %w", err)
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		return nil, errors.New("not run: no python3 on this machine's PATH")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		return nil, errors.New("not run: no unshare on this machine's PATH, to run it without network")
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	// A network namespace of its own, with only loopback: the metric sees
	// the rewards and nothing of the network.
	cmd := exec.CommandContext(ctx, unshare, "--map-root-user", "--net", python, script, "-i", in, "-o", out)
	cmd.Dir = tmp
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + tmp, "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, runError(ctx, err, stderr.String())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("%s wrote no output (-o): %w", registry.MetricFile, err)
	}
	var metrics map[string]any
	if err := json.Unmarshal(data, &metrics); err != nil || metrics == nil {
		return nil, fmt.Errorf("%s's output is not a JSON object: %s", registry.MetricFile, text.OneLine(string(data), 120))
	}
	return metrics, nil
}

// runError says why metric.py failed: its timeout, no network namespace
// to be had, or its own last words.
func runError(ctx context.Context, err error, stderr string) error {
	last := lastLine(stderr)
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%s ran past its %s timeout", registry.MetricFile, Timeout)
	case strings.HasPrefix(last, "unshare:"):
		return fmt.Errorf("not run: it cannot be cut off the network here (%s)", last)
	}
	var ee *exec.ExitError
	code := -1
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	}
	return fmt.Errorf("%s exited %d: %s", registry.MetricFile, code, last)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return text.OneLine(lines[len(lines)-1], 300)
}

// rewardLines are the trials' rewards as Harbor gives them to metric.py:
// every key of the reward file, else {"reward": R}, else null.
func rewardLines(rows []Trial) []byte {
	var b bytes.Buffer
	for _, t := range rows {
		var v any
		switch {
		case len(t.Rewards) > 0:
			v = t.Rewards
		case t.Reward != nil:
			v = map[string]float64{"reward": *t.Reward}
		}
		line, _ := json.Marshal(v) // numbers and strings: cannot fail
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}
