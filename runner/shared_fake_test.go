package runner

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/runner/trial"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/sandbox/sandboxtest"
)

// harborShell stands in for the commands of writeHarborTask's task in a
// fake container: solve.sh writes 42 into /app/answer.txt, test.sh writes
// reward 1 when it holds 42, else 0.
func harborShell(ctx context.Context, c *sandboxtest.Container, e sandbox.ExecSpec) (sandbox.ExecResult, error) {
	if c.Spec.HostPID {
		return fakeInspector(ctx, c, e)
	}
	cmd := strings.Join(e.Cmd, " ")
	switch {
	case strings.Contains(cmd, "solve.sh"):
		return sandbox.ExecResult{}, os.WriteFile(c.Path("/app/answer.txt"), []byte("42\n"), 0o644)
	case strings.Contains(cmd, "test.sh"):
		reward := "0"
		if b, err := os.ReadFile(c.Path("/app/answer.txt")); err == nil && strings.TrimSpace(string(b)) == "42" {
			reward = "1"
		}
		if err := os.MkdirAll(c.Path("/logs/verifier"), 0o777); err != nil {
			return sandbox.ExecResult{}, err
		}
		return sandbox.ExecResult{}, os.WriteFile(c.Path("/logs/verifier/reward.txt"), []byte(reward+"\n"), 0o644)
	}
	return sandbox.ExecResult{}, nil
}

// fakeInspector answers the run's inspector as it answers for a container
// where nothing changed outside the work dir and no process was left:
// leftovers.py holds nothing, inspect.sh lists nothing and finds the
// container settled.
func fakeInspector(_ context.Context, _ *sandboxtest.Container, e sandbox.ExecSpec) (sandbox.ExecResult, error) {
	var out string
	switch {
	case e.Cmd[0] == "python3":
		out = `{"held": []}`
	case len(e.Cmd) > 5 && e.Cmd[3] == "inspect.sh":
		if e.Cmd[5] == "settle" {
			out = "settled 0\n"
		}
	default:
		return sandbox.ExecResult{ExitCode: 127}, nil
	}
	return sandbox.ExecResult{}, os.WriteFile(e.StdoutPath, []byte(out), 0o644)
}

func TestSharedModelOracleAndNop(t *testing.T) {
	root := t.TempDir()
	writeHarborTask(t, root, "answer", "")
	req := fakeRequest(t, "name: shared\ntasks: ["+filepath.Join(root, "answer")+"]\nvariants:\n  oracle: {agent: oracle}\n  nop: {agent: nop}\nresults: RESULTS\n", suite.Options{})
	eng := sandboxtest.New(t.TempDir())
	eng.Run = harborShell
	rec := fakeRun(t, eng, t.Context(), req)
	for variant, want := range map[string]string{"oracle": "passed", "nop": "failed"} {
		res, err := results.ReadResult(filepath.Join(rec.Dir, "answer__"+variant+"__1", results.ResultFile))
		require.NoError(t, err)
		assert.Equal(t, want, string(res.Outcome), "%s: %s", variant, res.Error)
	}
	assert.Empty(t, eng.Live(), "every container is removed")
}

// writeFiles writes files (relative path → content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o755))
	}
}

// runShared runs the oracle and nop of the task at dir on a fake engine
// and returns their results by variant.
func runShared(t *testing.T, eng *sandboxtest.Engine, dir string) (*results.RunRecord, map[string]*results.Result) {
	t.Helper()
	req := fakeRequest(t, "name: shared\ntasks: ["+dir+"]\nvariants:\n  oracle: {agent: oracle}\n  nop: {agent: nop}\nresults: RESULTS\n", suite.Options{})
	rec := fakeRun(t, eng, t.Context(), req)
	out := map[string]*results.Result{}
	for _, variant := range []string{"oracle", "nop"} {
		res, err := results.ReadResult(filepath.Join(rec.Dir, filepath.Base(dir)+"__"+variant+"__1", results.ResultFile))
		require.NoError(t, err)
		out[variant] = res
	}
	assert.Empty(t, eng.Live(), "every container is removed")
	return rec, out
}

func assertOracleNop(t *testing.T, res map[string]*results.Result) {
	t.Helper()
	assert.Equal(t, "passed", string(res["oracle"].Outcome), "oracle: %s", res["oracle"].Error)
	assert.Equal(t, "failed", string(res["nop"].Outcome), "nop: %s", res["nop"].Error)
}

// Each step runs its agent and is verified in turn in the one container;
// the trial's reward is the steps' mean.
func TestSharedModelSteps(t *testing.T) {
	root := t.TempDir()
	dir := writeHarborTask(t, root, "steps", "\n[[steps]]\nname = \"one\"\n\n[[steps]]\nname = \"two\"\n[steps.verifier]\ntimeout_sec = 5.0\n")
	writeFiles(t, dir, map[string]string{"steps/one/instruction.md": "One.\n", "steps/two/instruction.md": "Two.\n"})
	eng := sandboxtest.New(t.TempDir())
	eng.Run = harborShell
	rec, res := runShared(t, eng, dir)
	assertOracleNop(t, res)
	if assert.Len(t, res["oracle"].Steps, 2) {
		assert.Equal(t, "one", res["oracle"].Steps[0].Name)
		assert.Equal(t, "two", res["oracle"].Steps[1].Name)
	}
	for _, variant := range []string{"oracle", "nop"} {
		for _, step := range []string{"one", "two"} {
			assert.FileExists(t, filepath.Join(rec.Dir, res[variant].Trial, trial.StepsDir, step, "verifier", "reward.txt"))
		}
	}
}

// A separate verifier grades in a container of its own, built from
// tests/, with the task's artifacts copied in; the agent's container is
// stopped first.
func TestSharedModelSeparateVerifier(t *testing.T) {
	root := t.TempDir()
	dir := writeHarborTask(t, root, "separate", "")
	toml := readFile(t, filepath.Join(dir, "task.toml"))
	toml = strings.Replace(toml, "schema_version = \"1.4\"\n", "schema_version = \"1.4\"\nartifacts = [\"/app/answer.txt\"]\n", 1)
	toml = strings.Replace(toml, "[verifier]\n", "[verifier]\nenvironment_mode = \"separate\"\n", 1)
	toml += "\n[[verifier.collect]]\ncommand = \"sha256sum /app/answer.txt > /logs/artifacts/answer.sha256\"\ntimeout_sec = 5.0\n"
	writeFiles(t, dir, map[string]string{"task.toml": toml, "tests/Dockerfile": "FROM " + FallbackImage + "\nCOPY test.sh /tests/test.sh\n"})
	eng := sandboxtest.New(t.TempDir())
	var collected []string // the phase of the container each collect command ran in
	eng.Run = func(ctx context.Context, c *sandboxtest.Container, e sandbox.ExecSpec) (sandbox.ExecResult, error) {
		if strings.Contains(strings.Join(e.Cmd, " "), "sha256sum") {
			collected = append(collected, c.Phase())
		}
		return harborShell(ctx, c, e)
	}
	var built []string
	eng.Build = func(spec sandbox.BuildSpec) (sandbox.Image, error) {
		built = append(built, filepath.Base(spec.ContextDir))
		return sandbox.Image{Ref: "flightdeck/" + spec.Name + ":fake", ID: "sha256:" + spec.Name}, nil
	}
	_, res := runShared(t, eng, dir)
	assertOracleNop(t, res)
	assert.Contains(t, built, "tests", "the verifier's image is built from tests/")
	var verifiers, withAnswer int
	for _, c := range eng.Containers() {
		if c.Phase() == "grade" {
			verifiers++
			assert.Contains(t, c.Spec.Image, "verifier", "the verifier's own image")
			if _, err := os.Stat(c.Path("/app/answer.txt")); err == nil {
				withAnswer++ // the oracle's artifact, where the verifier reads it
			}
		}
	}
	assert.Equal(t, 2, verifiers, "one verifier container per trial")
	assert.Equal(t, 1, withAnswer, "the oracle's artifact is copied in; the nop left none")
	assert.Len(t, collected, 2, "the collect command runs once per trial, in the agent's container: %v", collected)
}

// A compose task's services start before main, on the trial's own network,
// with its named volumes, and everything is removed after.
func TestSharedModelCompose(t *testing.T) {
	root := t.TempDir()
	dir := writeHarborTask(t, root, "compose", "")
	writeFiles(t, dir, map[string]string{"environment/docker-compose.yaml": `services:
  main:
    depends_on: [store]
    environment:
      STORE_URL: http://store:8080
  store:
    image: ` + FallbackImage + `
    command: ["sleep", "infinity"]
    volumes:
      - storedata:/data
volumes:
  storedata:
`})
	eng := sandboxtest.New(t.TempDir())
	eng.Run = harborShell
	_, res := runShared(t, eng, dir)
	assertOracleNop(t, res)
	calls := strings.Join(eng.Calls(), "\n")
	for _, call := range []string{"CreateNetwork", "CreateVolume", "RemoveNetwork", "RemoveVolume"} {
		assert.Equal(t, 2, strings.Count(calls, call+"\n"), "%s once per trial", call)
	}
	var stores, mains int
	for _, c := range eng.Containers() {
		if c.Spec.Service == nil {
			continue
		}
		switch {
		case slices.Contains(c.Spec.Service.Aliases, "store"):
			stores++
			assert.Equal(t, []string{"sleep", "infinity"}, c.Spec.Service.Cmd)
		case slices.Contains(c.Spec.Service.Aliases, "main"):
			mains++
			assert.Contains(t, c.Spec.Env, "STORE_URL=http://store:8080", "main gets its compose environment")
		}
	}
	assert.Equal(t, 2, stores, "one store per trial")
	assert.Equal(t, 2, mains, "one main per trial")
}

// depends_on conditions: main starts once a service with a healthcheck is
// healthy; a service that never gets healthy fails the trial, naming it.
func TestSharedModelComposeHealth(t *testing.T) {
	compose := `services:
  main:
    depends_on:
      store: {condition: service_healthy}
  store:
    image: ` + FallbackImage + `
    command: ["sleep", "infinity"]
    healthcheck:
      test: ["CMD", "true"]
      interval: 1s
      retries: 1
`
	for _, tc := range []struct {
		name, health string
		want         map[string]string
	}{
		{"healthy", "healthy", map[string]string{"oracle": "passed", "nop": "failed"}},
		{"unhealthy", "unhealthy", map[string]string{"oracle": "infra_error", "nop": "infra_error"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeHarborTask(t, t.TempDir(), "health", "")
			writeFiles(t, dir, map[string]string{"environment/docker-compose.yaml": compose})
			eng := sandboxtest.New(t.TempDir())
			eng.Run = harborShell
			eng.Started = func(c *sandboxtest.Container) {
				if c.Spec.Service != nil && slices.Contains(c.Spec.Service.Aliases, "store") {
					c.Health = tc.health
				}
			}
			_, res := runShared(t, eng, dir)
			for variant, want := range tc.want {
				assert.Equal(t, want, string(res[variant].Outcome), "%s: %s", variant, res[variant].Error)
				if want == "infra_error" {
					assert.Contains(t, res[variant].Error, "store")
				}
			}
		})
	}
}

// A separate verifier for each step of a multi-step task: each step's
// grade runs in a verifier container of its own.
func TestSharedModelStepsSeparateVerifier(t *testing.T) {
	dir := writeHarborTask(t, t.TempDir(), "stepsep", "\n[[steps]]\nname = \"one\"\n\n[[steps]]\nname = \"two\"\n")
	toml := readFile(t, filepath.Join(dir, "task.toml"))
	toml = strings.Replace(toml, "schema_version = \"1.4\"\n", "schema_version = \"1.4\"\nartifacts = [\"/app/answer.txt\"]\n", 1)
	toml = strings.Replace(toml, "[verifier]\n", "[verifier]\nenvironment_mode = \"separate\"\n", 1)
	writeFiles(t, dir, map[string]string{"task.toml": toml, "tests/Dockerfile": "FROM " + FallbackImage + "\nCOPY test.sh /tests/test.sh\n",
		"steps/one/instruction.md": "One.\n", "steps/two/instruction.md": "Two.\n"})
	eng := sandboxtest.New(t.TempDir())
	eng.Run = harborShell
	_, res := runShared(t, eng, dir)
	assertOracleNop(t, res)
	var grades int
	for _, c := range eng.Containers() {
		if c.Phase() == "grade" {
			grades++
		}
	}
	assert.Equal(t, 4, grades, "a verifier container per step and trial")
	assert.Len(t, res["oracle"].Steps, 2)
}

// A healthcheck that never passes fails the trial naming the healthcheck
// (the container it ran in is the trial's, known by then), and the
// container is removed.
func TestSharedModelHealthcheckFails(t *testing.T) {
	root := t.TempDir()
	dir := writeHarborTask(t, root, "unhealthy", "\n[environment.healthcheck]\ncommand = \"check-health\"\ninterval_sec = 0.1\nretries = 2\n")
	eng := sandboxtest.New(t.TempDir())
	eng.Run = func(ctx context.Context, c *sandboxtest.Container, e sandbox.ExecSpec) (sandbox.ExecResult, error) {
		if strings.Contains(strings.Join(e.Cmd, " "), "check-health") {
			return sandbox.ExecResult{ExitCode: 3}, nil
		}
		return harborShell(ctx, c, e)
	}
	_, res := runShared(t, eng, dir)
	for _, r := range res {
		assert.Contains(t, r.Error, `healthcheck "check-health" failed`, r.Trial)
		assert.NotContains(t, r.Error, "inspect container", r.Trial)
	}
}
