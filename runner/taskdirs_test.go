package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// harborFixtureDir is fixtures/harbor, absolute.
func harborFixtureDir(t *testing.T) string {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("..", "fixtures", "harbor"))
	require.NoError(t, err)
	return abs
}

// A suite's task entries expand to task dirs without a runnable variant.
func TestSuiteTaskDirs(t *testing.T) {
	root := harborFixtureDir(t)
	dir := t.TempDir()
	suiteFile := filepath.Join(dir, "s.yaml")
	writeTestFile(t, suiteFile, "tasks:\n  - "+filepath.Join(root, "tasks")+"\n  - "+filepath.Join(root, "tasks", "legacy-v1")+
		"\n  - "+filepath.Join(root, "refused", "g*")+"\nvariants:\n  treatment: {}\n")
	s, err := suite.LoadSuite(suiteFile)
	require.NoError(t, err)
	dirs, err := TaskDirs(context.Background(), s)
	require.NoError(t, err)
	ents, err := os.ReadDir(filepath.Join(root, "tasks"))
	require.NoError(t, err)
	require.Len(t, dirs, len(ents)+1, "a dataset dir, a task dir it already holds (once), and a glob")
	assert.Equal(t, filepath.Join(root, "tasks", ents[0].Name()), dirs[0], "in name order")
	assert.Equal(t, filepath.Join(root, "refused", "gpus"), dirs[len(dirs)-1])

	writeTestFile(t, suiteFile, "tasks: [nowhere]\nvariants: {a: {}}\n")
	s, err = suite.LoadSuite(suiteFile)
	require.NoError(t, err)
	_, err = TaskDirs(context.Background(), s)
	require.Error(t, err)
	assert.Contains(t, err.Error(), suiteFile+`:1: tasks[0] "nowhere": no such directory`)
}

// A suite's registry: and dataset: add the dataset's tasks.
func TestSuiteRegistryDataset(t *testing.T) {
	root := harborFixtureDir(t)
	dir := t.TempDir()
	suiteFile := filepath.Join(dir, "s.yaml")
	writeTestFile(t, suiteFile, "registry: "+filepath.Join(root, "registry.json")+"\ndataset: harbor-fixtures-smoke@1.0\n"+
		"variants: {o: {agent: oracle}, n: {agent: nop}}\nresults: out\n")
	s, err := suite.LoadSuite(suiteFile)
	require.NoError(t, err)
	dirs, err := TaskDirs(context.Background(), s)
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(root, "tasks", "legacy-v1"), filepath.Join(root, "tasks", "reward-json"),
		filepath.Join(root, "tasks", "planted-reward")}, dirs, "in the dataset's order")

	req, err := Prepare(t.Context(), suiteFile, suite.Options{Cwd: dir, Retries: -1})
	require.NoError(t, err)
	assert.Equal(t, []string{"legacy-v1", "reward-json", "planted-reward"}, taskIDs(req.Tasks))
	assert.Equal(t, []string{filepath.Join(root, "registry.json") + ": harbor-fixtures-smoke@1.0"}, req.Config.Datasets)

	writeTestFile(t, suiteFile, "dataset: harbor-fixtures@1.0\nvariants: {o: {agent: oracle}}\n")
	_, err = suite.LoadSuite(suiteFile)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "registry: and dataset: go together")

	writeTestFile(t, suiteFile, "registry: "+filepath.Join(root, "registry.json")+"\ndataset: nope@1\nvariants: {o: {agent: oracle}}\n")
	_, err = Prepare(t.Context(), suiteFile, suite.Options{Cwd: dir, Retries: -1})
	require.Error(t, err)
	assert.Contains(t, err.Error(), suiteFile+":2: dataset nope@1:")
	assert.Contains(t, err.Error(), `no dataset named "nope"`)
}

// --path runs a dataset dir without a suite; --include, --exclude and
// --n-tasks narrow it; --registry --dataset runs a registry's dataset.
func TestPrepareDatasetFlags(t *testing.T) {
	root := harborFixtureDir(t)
	cwd := t.TempDir()
	tests := []struct {
		name        string
		opts        suite.Options
		want        []string
		wantRefused []string // "id: reason" of each refused task
		wantErr     string
	}{
		{name: "a dataset dir, filtered", opts: suite.Options{Path: []string{filepath.Join(root, "tasks")}, Include: []string{"reward-*", "legacy-*"}, Exclude: []string{"reward-json-wins"}},
			want: []string{"legacy-v1", "reward-json", "reward-keys", "reward-txt"}},
		{name: "the first n", opts: suite.Options{Path: []string{filepath.Join(root, "tasks")}, NTasks: 2},
			want: []string{"agent-daemon", "agent-timeout"}},
		{name: "n after the filters", opts: suite.Options{Path: []string{filepath.Join(root, "tasks")}, Include: []string{"*net*"}, NTasks: 2},
			want: []string{"allow-internet-false", "no-network"}},
		{name: "a task dir", opts: suite.Options{Path: []string{filepath.Join(root, "tasks", "healthcheck")}},
			want: []string{"healthcheck"}},
		{name: "a registry dataset", opts: suite.Options{Registry: filepath.Join(root, "registry.json"), Dataset: "harbor-fixtures-smoke@1.0"},
			want: []string{"legacy-v1", "reward-json", "planted-reward"}},
		{name: "a registry dataset by name", opts: suite.Options{Registry: filepath.Join(root, "registry.json"), Dataset: "harbor-fixtures", Exclude: []string{"*-*"}},
			want: []string{"allowlist", "artifacts", "healthcheck"}},
		{name: "a dataset without a registry", opts: suite.Options{Dataset: "harbor-fixtures@1.0"}, wantErr: "--registry and --dataset go together"},
		{name: "an unknown version", opts: suite.Options{Registry: filepath.Join(root, "registry.json"), Dataset: "harbor-fixtures@9"},
			wantErr: `dataset "harbor-fixtures" has no version "9"`},
		{name: "not a dir", opts: suite.Options{Path: []string{filepath.Join(root, "expected.json")}}, wantErr: "--path"},
		{name: "a refused task", opts: suite.Options{Path: []string{filepath.Join(root, "refused", "gpus")}},
			wantRefused: []string{"gpus: " + filepath.Join(root, "refused", "gpus", "task.toml") + ": [environment].gpus: GPUs are not supported"}},
		{name: "refused tasks among others", opts: suite.Options{Path: []string{filepath.Join(root, "refused", "steps"), filepath.Join(root, "tasks", "reward-txt"), filepath.Join(root, "refused", "windows-os")}},
			want: []string{"reward-txt"}, wantRefused: []string{"steps: " + filepath.Join(root, "refused", "steps", "task.toml") + ": [[steps]]: multi-step tasks are graded Harbor's way: a flightdeck-native task ([flightdeck.grader]) has no per-step grading",
				"windows-os: " + filepath.Join(root, "refused", "windows-os", "task.toml") + ": [environment].os: Windows tasks are not supported"}},
		{name: "a refused task filtered out", opts: suite.Options{Path: []string{filepath.Join(root, "refused", "gpus"), filepath.Join(root, "tasks", "reward-txt")}, Exclude: []string{"gpu*"}},
			want: []string{"reward-txt"}},
		{name: "nothing left", opts: suite.Options{Path: []string{filepath.Join(root, "tasks")}, Include: []string{"zzz"}}, wantErr: "no task is left"},
		{name: "a bad glob", opts: suite.Options{Path: []string{filepath.Join(root, "tasks")}, Include: []string{"["}}, wantErr: "not a valid glob"},
		{name: "negative n", opts: suite.Options{Path: []string{filepath.Join(root, "tasks")}, NTasks: -1}, wantErr: "--n-tasks"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.Cwd, opts.Retries = cwd, -1
			req, err := Prepare(t.Context(), "", opts)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				var ue *suite.UsageError
				assert.ErrorAs(t, err, &ue)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, taskIDs(req.Tasks))
			var refused []string
			for _, rt := range req.Refused {
				refused = append(refused, rt.ID+": "+rt.Refusal.String())
			}
			require.Len(t, refused, len(tc.wantRefused), "refused: %v", refused)
			for i := range refused {
				assert.True(t, strings.HasPrefix(refused[i], tc.wantRefused[i]), "%q\ndoes not begin with\n%q", refused[i], tc.wantRefused[i])
			}
			require.Len(t, req.Config.Variants, 1)
			assert.Equal(t, suite.AgentOracle, req.Config.Variants[0].Agent, "the oracle when no variant is named")
			assert.Equal(t, filepath.Join(cwd, "results"), req.Config.Results)
		})
	}

	req, err := Prepare(t.Context(), "", suite.Options{Cwd: cwd, Retries: -1, Path: []string{filepath.Join(root, "tasks")},
		Variants: []string{"oracle", "nop"}, NTasks: 1})
	require.NoError(t, err)
	assert.Equal(t, []string{"oracle", "nop"}, variantNames(req.Config.Variants))
	assert.Equal(t, "tasks", req.Config.Suite)

	_, err = Prepare(t.Context(), "", suite.Options{Cwd: cwd})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no suite file")
}

// --path replaces a suite's tasks, and its filters add to the suite's.
func TestPrepareDatasetFlagsOverASuite(t *testing.T) {
	root := harborFixtureDir(t)
	suiteFile := writeSuite(t, "tasks: [FIXTURES/answer]\nexclude: [legacy-v1]\nvariants: {o: {agent: oracle}}\nresults: RESULTS\n")
	req, err := Prepare(t.Context(), suiteFile, suite.Options{Cwd: filepath.Dir(suiteFile), Retries: -1, Path: []string{filepath.Join(root, "tasks")},
		Include: []string{"re*", "le*"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"reward-json", "reward-json-wins", "reward-keys", "reward-txt"}, taskIDs(req.Tasks))
}

func variantNames(vs []suite.Variant) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Name)
	}
	return out
}
