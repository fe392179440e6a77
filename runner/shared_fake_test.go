package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
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
	case len(e.Cmd) > 5 && e.Cmd[2] == inspectScript:
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
