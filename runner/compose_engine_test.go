package runner

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/runner/trialnet"
)

// composeTask writes a multi-container task whose main depends on the
// service "side" with the condition given, and returns the suite file.
func composeTask(t *testing.T, dir, name, side, condition string) string {
	t.Helper()
	task := filepath.Join(dir, name)
	writeTestFile(t, filepath.Join(task, "task.toml"), "[verifier]\ntimeout_sec = 30.0\n")
	writeTestFile(t, filepath.Join(task, "instruction.md"), "Nothing.\n")
	writeTestFile(t, filepath.Join(task, "environment", "Dockerfile"), "FROM "+FallbackImage+"\nWORKDIR /app\n")
	writeTestFile(t, filepath.Join(task, "environment", "docker-compose.yaml"), `services:
  main:
    depends_on:
      side:
        condition: `+condition+`
  side:
    image: `+FallbackImage+`
`+side)
	writeTestFile(t, filepath.Join(task, "tests", "test.sh"), "echo 1 > /logs/verifier/reward.txt\n")
	writeTestFile(t, filepath.Join(task, "solution", "solve.sh"), "true\n")
	suiteFile := filepath.Join(dir, name+".yaml")
	writeTestFile(t, suiteFile, "tasks: ["+name+"]\nvariants: {oracle: {agent: oracle}}\nretries: 0\nresults: results\n")
	return suiteFile
}

// A service main waits for that fails its condition ends the trial in
// infra_error naming the service, with its output kept; nothing of the
// trial is left on the engine.
func TestEngineComposeServiceFails(t *testing.T) {
	t.Parallel()
	eng := requireEngine(t)
	tests := []struct{ name, side, condition, want, log string }{
		{"unhealthy", `    command: ["sh", "-c", "echo side up; exec sleep infinity"]
    healthcheck:
      test: ["CMD-SHELL", "echo not ready; exit 1"]
      interval: 200ms
      retries: 2
`, "service_healthy", "main waits for side to be healthy: service failed: its healthcheck failed (the last probe: exit 1: not ready)", "side up"},
		// A probe slower than its timeout reads as such: on a loaded
		// machine that is the task's timeout, not a service that is down.
		{"probe timeout", `    command: ["sleep", "infinity"]
    healthcheck:
      test: ["CMD-SHELL", "sleep 5"]
      interval: 200ms
      timeout: 300ms
      retries: 2
`, "service_healthy", "its healthcheck failed (the last probe: Health check exceeded timeout", ""},
		{"exited", `    command: ["sh", "-c", "echo side fails; exit 4"]
`, "service_completed_successfully", "main waits for side to be completed_successfully: service failed: it exited with code 4", "side fails"},
		{"no healthcheck", `    command: ["sleep", "infinity"]
`, "service_healthy", "it has no healthcheck", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			name := strings.ReplaceAll(tc.name, " ", "-")
			rec, res := runSuite(t, eng, composeTask(t, dir, name, tc.side, tc.condition), suite.Options{})
			r := res[name+"__oracle__1"]
			require.NotNil(t, r)
			assert.Equal(t, grader.OutcomeInfraError, r.Outcome)
			assert.Contains(t, r.Error, tc.want)
			assert.Contains(t, r.Error, "services/side.log")
			if tc.log != "" {
				assert.Contains(t, readFile(t, filepath.Join(rec.Dir, name+"__oracle__1", trialnet.ServicesDir, "side.log")), tc.log)
			}
			assertNoLeftovers(t, eng, rec.RunID)
		})
	}
}

// A service that completes successfully lets main start; the verifier
// reaches nothing of it, and the trial passes.
func TestEngineComposeServiceCompletes(t *testing.T) {
	t.Parallel()
	eng := requireEngine(t)
	dir := t.TempDir()
	rec, res := runSuite(t, eng, composeTask(t, dir, "completes", `    command: ["true"]
`, "service_completed_successfully"), suite.Options{})
	r := res["completes__oracle__1"]
	require.NotNil(t, r)
	assert.Equal(t, grader.OutcomePassed, r.Outcome, r.Error)
	assertNoLeftovers(t, eng, rec.RunID)
}

// A step's healthcheck that fails ends the steps before its agent, as a
// failed setup does: the step is not graded, and the trial's reward is the
// mean of the steps that were.
func TestEngineStepHealthcheckFails(t *testing.T) {
	t.Parallel()
	eng := requireEngine(t)
	dir := t.TempDir()
	task := filepath.Join(dir, "steps")
	writeTestFile(t, filepath.Join(task, "task.toml"), `multi_step_reward_strategy = "mean"

[verifier]
timeout_sec = 30.0

[[steps]]
name = "one"

[[steps]]
name = "two"
healthcheck = { command = "echo not ready; exit 1", interval_sec = 0.2, retries = 2 }
`)
	writeTestFile(t, filepath.Join(task, "instruction.md"), "Steps.\n")
	writeTestFile(t, filepath.Join(task, "environment", "Dockerfile"), "FROM "+FallbackImage+"\nWORKDIR /app\n")
	for _, step := range []string{"one", "two"} {
		writeTestFile(t, filepath.Join(task, "steps", step, "instruction.md"), "Step "+step+".\n")
	}
	writeTestFile(t, filepath.Join(task, "tests", "test.sh"), "echo 1 > /logs/verifier/reward.txt\n")
	writeTestFile(t, filepath.Join(task, "solution", "solve.sh"), "true\n")
	suiteFile := filepath.Join(dir, "s.yaml")
	writeTestFile(t, suiteFile, "tasks: [steps]\nvariants: {oracle: {agent: oracle}}\nretries: 0\nresults: results\n")
	rec, res := runSuite(t, eng, suiteFile, suite.Options{})
	r := res["steps__oracle__1"]
	require.NotNil(t, r)
	require.Len(t, r.Steps, 2, r.Error)
	assert.Contains(t, r.Steps[1].Error, "its healthcheck failed")
	assert.Nil(t, r.Steps[1].Reward, "the step is not graded")
	require.NotNil(t, r.Reward, r.Error)
	assert.Equal(t, 1.0, *r.Reward, "the mean of the graded step")
	assert.Contains(t, readFile(t, filepath.Join(rec.Dir, "steps__oracle__1", "steps", "two", "healthcheck.log")), "not ready")
	assertNoLeftovers(t, eng, rec.RunID)
}
