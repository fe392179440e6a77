package metric

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// metricPy is Harbor's template metric, plus what the test checks: how
// many trials had no reward (null lines), the keys seen, and how many
// network interfaces besides loopback it could see.
const metricPy = `import argparse, json, socket
from pathlib import Path
p = argparse.ArgumentParser()
p.add_argument("-i", "--input-path", type=Path, required=True)
p.add_argument("-o", "--output-path", type=Path, required=True)
a = p.parse_args()
rows = [json.loads(l) for l in a.input_path.read_text().splitlines()]
vals = [sum(r.values()) / len(r) for r in rows if r is not None]
a.output_path.write_text(json.dumps({
    "mean": sum(vals) / len(rows) if rows else 0,
    "nulls": sum(1 for r in rows if r is None),
    "keys": sorted({k for r in rows if r for k in r}),
    "interfaces": len([n for _, n in socket.if_nameindex() if n != "lo"]),
}))
`

// dataset writes a dataset dir with two tasks and a manifest that lists
// metric.py (pinned by digest, or by pin when set).
func dataset(t *testing.T, script, pin string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range []string{"a", "b"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, n), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, n, "task.toml"), []byte("[task]\nname = \"o/"+n+"\"\n"), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "metric.py"), []byte(script), 0o644))
	if pin == "" {
		sum := sha256.Sum256([]byte(script))
		pin = "sha256:" + hex.EncodeToString(sum[:])
	}
	manifest := "[dataset]\nname = \"o/ds\"\n\n[[tasks]]\nname = \"o/a\"\ndigest = \"sha256:" + zeros + "\"\n\n" +
		"[[files]]\npath = \"metric.py\"\ndigest = \"" + pin + "\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dataset.toml"), []byte(manifest), 0o644))
	return dir
}

const zeros = "0000000000000000000000000000000000000000000000000000000000000000"

func TestComputeRunsMetricPyPerVariantWithoutNetwork(t *testing.T) {
	dir := dataset(t, metricPy, "")
	one, half := 1.0, 0.5
	trials := []Trial{
		{TaskDir: filepath.Join(dir, "a"), Variant: "oracle", Reward: &one},
		{TaskDir: filepath.Join(dir, "b"), Variant: "oracle", Rewards: map[string]float64{"x": 1, "y": 0}},
		{TaskDir: filepath.Join(dir, "a"), Variant: "nop"},
		{TaskDir: filepath.Join(dir, "b"), Variant: "nop", Reward: &half},
		{TaskDir: filepath.Join(t.TempDir(), "elsewhere"), Variant: "oracle", Reward: &one},
	}
	got := Compute(t.Context(), trials, []string{"oracle", "nop", "unused"})
	require.Len(t, got, 2, "one per variant that ran a task of the dataset")
	o, n := got[0], got[1]
	require.Empty(t, o.Error)
	require.Empty(t, n.Error)
	assert.Equal(t, "o/ds", o.Dataset)
	assert.Equal(t, "oracle", o.Variant)
	assert.Equal(t, 2, o.Trials, "the task from elsewhere is not the dataset's")
	assert.InDelta(t, 0.75, o.Metrics["mean"], 1e-9)
	assert.Equal(t, []any{"reward", "x", "y"}, o.Metrics["keys"], "every key of the reward file, else reward")
	assert.Equal(t, 1.0, n.Metrics["nulls"], "a trial without a reward is null")
	assert.Equal(t, 0.0, o.Metrics["interfaces"], "metric.py sees no network but loopback")
}

func TestComputeSaysWhyNot(t *testing.T) {
	one := 1.0
	tests := []struct {
		name, script, pin, want string
	}{
		{"pinned otherwise", metricPy, "sha256:" + zeros, "not run: "},
		{"fails", "raise ValueError('no rewards to speak of')\n", "", "metric.py exited 1: ValueError: no rewards to speak of"},
		{"writes no object", "import sys\nopen(sys.argv[-1], 'w').write('[1]')\n", "", "metric.py's output is not a JSON object: [1]"},
		{"writes nothing", "pass\n", "", "metric.py wrote no output (-o)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := dataset(t, tt.script, tt.pin)
			got := Compute(t.Context(), []Trial{{TaskDir: filepath.Join(dir, "a"), Variant: "oracle", Reward: &one}}, []string{"oracle"})
			require.Len(t, got, 1)
			assert.Nil(t, got[0].Metrics)
			assert.Contains(t, got[0].Error, tt.want)
		})
	}
	dir := dataset(t, metricPy, "sha256:"+zeros)
	got := Compute(t.Context(), []Trial{{TaskDir: filepath.Join(dir, "a"), Variant: "oracle", Reward: &one}}, []string{"oracle"})
	assert.Contains(t, got[0].Error, "dataset.toml pins sha256:"+zeros+" (flightdeck dataset init --update "+dir+" pins it anew)")
}
