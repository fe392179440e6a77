package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/internal/testenv"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/sandbox"
)

// The attack fixtures: two target tasks and the attack scripts.
const (
	nativeTask = "attack-native" // fixtures/attacks/native: graded from the pristine image
	harborTask = "attack-harbor" // fixtures/attacks/harbor: graded from a snapshot of the agent
)

// attacksDir is fixtures/attacks, absolute.
func attacksDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "fixtures", "attacks"))
	require.NoError(t, err)
	return dir
}

// taskDir is a target task's directory.
func taskDir(t *testing.T, id string) string {
	t.Helper()
	return filepath.Join(attacksDir(t), strings.TrimPrefix(id, "attack-"))
}

// agentScript is the text of fixtures/attacks/agents/<name>.sh.
func agentScript(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(attacksDir(t), "agents", name+".sh"))
	require.NoError(t, err)
	return string(data)
}

// suiteFile is a suite, written as JSON (which YAML reads).
type suiteFile struct {
	Name        string                    `json:"name"`
	Tasks       []string                  `json:"tasks"`
	Variants    map[string]map[string]any `json:"variants"`
	Attempts    int                       `json:"attempts,omitempty"`
	Concurrency int                       `json:"concurrency,omitempty"`
	Retries     *int                      `json:"retries,omitempty"`
	Timeouts    map[string]float64        `json:"timeout_multiplier,omitempty"`
	Images      map[string]string         `json:"images,omitempty"`
	Results     string                    `json:"results"`
}

// command is a command-agent variant running script.
func command(script string) map[string]any {
	return map[string]any{"agent": "command", "command": script}
}

func retries(n int) *int { return &n }

// writeSuite writes s as dir/suite.yaml and returns its path.
func writeSuite(t *testing.T, dir string, s suiteFile) string {
	t.Helper()
	if s.Results == "" {
		s.Results = "results"
	}
	data, err := json.MarshalIndent(s, "", "  ")
	require.NoError(t, err)
	path := filepath.Join(dir, "suite.yaml")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

// runOutput is a finished run: its id and dir and each trial's result.
type runOutput struct {
	cli        cliRun
	id, dir    string
	resultsDir map[string]*results.Result
}

// result is a trial's result; the test fails when it has none.
func (r *runOutput) result(t *testing.T, task, variant string) *results.Result {
	t.Helper()
	res := r.resultsDir[trialName(task, variant)]
	require.NotNil(t, res, "no result for %s; stderr:\n%s", trialName(task, variant), r.cli.stderr)
	return res
}

// trialDir is a trial's directory.
func (r *runOutput) trialDir(task, variant string) string {
	return filepath.Join(r.dir, trialName(task, variant))
}

func trialName(task, variant string) string { return task + "__" + variant + "__1" }

// runFlightdeck runs `flightdeck run suite args...` in the suite's dir and
// reads every result of the run.
func runFlightdeck(t *testing.T, suiteFile string, args ...string) *runOutput {
	t.Helper()
	cli := flightdeck(t, filepath.Dir(suiteFile), nil, append([]string{"run", suiteFile}, args...)...)
	return readRun(t, cli, filepath.Join(filepath.Dir(suiteFile), "results"))
}

// readRun finds the run a CLI invocation made in the results dir and reads it.
func readRun(t *testing.T, cli cliRun, resultsDir string) *runOutput {
	t.Helper()
	id := ""
	for _, l := range strings.Split(cli.stderr, "\n") {
		if strings.HasPrefix(l, "run ") && strings.Contains(l, " trial") {
			id = strings.TrimSuffix(strings.Fields(l)[1], ":")
			break
		}
	}
	require.NotEmpty(t, id, "no run line; exit %d\nstdout:\n%s\nstderr:\n%s", cli.code, cli.stdout, cli.stderr)
	return readResults(t, cli, filepath.Join(resultsDir, id))
}

func readResults(t *testing.T, cli cliRun, runDir string) *runOutput {
	t.Helper()
	out := &runOutput{cli: cli, id: filepath.Base(runDir), dir: runDir, resultsDir: map[string]*results.Result{}}
	entries, err := os.ReadDir(runDir)
	require.NoError(t, err)
	for _, e := range entries {
		if !e.IsDir() || !strings.Contains(e.Name(), "__") {
			continue
		}
		res, err := results.ReadResult(filepath.Join(runDir, e.Name(), results.ResultFile))
		if err != nil {
			continue
		}
		out.resultsDir[e.Name()] = res
	}
	return out
}

// docker runs the docker CLI and returns its output's lines.
func docker(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("docker", args...).Output()
	require.NoError(t, err, "docker %s", strings.Join(args, " "))
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// leftovers lists what a run left on the engine: containers, volumes,
// networks and images carrying its run label.
func leftovers(t *testing.T, runID string) []string {
	t.Helper()
	f := "label=" + sandbox.LabelRun + "=" + runID
	var left []string
	for _, q := range []struct{ what string }{{"container"}, {"volume"}, {"network"}, {"image"}} {
		var ids []string
		switch q.what {
		case "container":
			ids = docker(t, "ps", "-aq", "--filter", f)
		case "volume":
			ids = docker(t, "volume", "ls", "-q", "--filter", f)
		case "network":
			ids = docker(t, "network", "ls", "-q", "--filter", f)
		case "image":
			ids = docker(t, "images", "-q", "--filter", f)
		}
		for _, id := range ids {
			left = append(left, q.what+" "+id)
		}
	}
	return left
}

// assertNoLeftovers checks that nothing of the run is left on the engine.
func assertNoLeftovers(t *testing.T, runID string) {
	t.Helper()
	assert.Empty(t, leftovers(t, runID), "objects of run %s left on the engine", runID)
}

// waitContainer polls until a container of the run in phase (the
// flightdeck.phase label) runs, and returns its id.
func waitContainer(t *testing.T, runID, trial, phase string, within time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		ids := docker(t, "ps", "-q", "--filter", "label="+sandbox.LabelRun+"="+runID,
			"--filter", "label="+sandbox.LabelTrial+"="+trial, "--filter", "label=flightdeck.phase="+phase)
		if len(ids) > 0 {
			return ids[0]
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no running %s container of %s in run %s within %s\n%s", phase, trial, runID, within, testenv.RunState(runID))
	return ""
}

// waitProcess waits until a process of the container has substr in its
// command line.
func waitProcess(t *testing.T, container, substr string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		out, err := exec.Command("docker", "top", container, "-eo", "pid,args").Output()
		if err == nil && strings.Contains(string(out), substr) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	state, _ := exec.Command("docker", "ps", "-a", "--filter", "id="+container, "--format",
		`trial={{.Label "flightdeck.trial"}} phase={{.Label "flightdeck.phase"}} {{.State}} ({{.Status}})`).CombinedOutput()
	top, _ := exec.Command("docker", "top", container, "-eo", "pid,etime,args").CombinedOutput()
	t.Fatalf("no process %q in container %.12s within %s\ncontainer: %s\nits processes:\n%s\n%s",
		substr, container, within, strings.TrimSpace(string(state)), strings.TrimSpace(string(top)), testenv.LoadAverage())
}

// readText reads a file the test expects to exist.
func readText(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

// tree lists every path under dir (relative, sorted), links marked "@".
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.Type()&os.ModeSymlink != 0 {
			rel += "@"
		}
		out = append(out, rel)
		return nil
	})
	require.NoError(t, err)
	sort.Strings(out)
	return out
}

// copyTask copies a target task into dir under a new id, with edit applied
// to its task.toml (the image is the same: environment/ is unchanged).
func copyTask(t *testing.T, from, dir, id string, edit func(toml string) string) string {
	t.Helper()
	dst := filepath.Join(dir, id)
	require.NoError(t, os.CopyFS(dst, os.DirFS(from)))
	toml := readText(t, filepath.Join(dst, "task.toml"))
	name := "flightdeck-attacks/attack-" + filepath.Base(from)
	require.Contains(t, toml, `"`+name+`"`)
	toml = strings.Replace(toml, `"`+name+`"`, `"flightdeck-attacks/`+id+`"`, 1)
	if edit != nil {
		toml = edit(toml)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dst, "task.toml"), []byte(toml), 0o644))
	return dst
}
