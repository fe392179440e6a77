package audit

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/vtrace"
	"github.com/flightdeck/flightdeck/runner/results"
)

// The traced oracle's record plans the rewrite (with what each file's run
// printed) and, beside an oracle that scores, the files of the verifier's
// data the oracle-hidden run probes.
func TestRewritePlan(t *testing.T) {
	trace := `{"op":"exec","path":"/usr/bin/python3","argv":["python3","/app/verify.py"],"cwd":"/app"}
{"op":"open","path":"/app/verify.py"}
{"op":"open","path":"/opt/task/expected.sha256"}
{"op":"out","path":"/app/verify.py","data":"SUCCESS\n"}
`
	plan := func(reward float64) (dir string) {
		dir = t.TempDir()
		require.NoError(t, results.WriteJSONFile(filepath.Join(dir, results.ResultFile), &results.Result{Schema: results.ResultSchema, TaskID: "t", Variant: results.VerifyTraced, Attempt: 1, Outcome: grader.OutcomePassed, Reward: &reward, WorkDir: "/app"}))
		require.NoError(t, os.WriteFile(filepath.Join(dir, grader.TraceFile), []byte(trace), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, results.GraderLog), []byte("grading\n"), 0o644))
		return dir
	}
	rw := RewritePlan(plan(1))
	require.Empty(t, rw.Note)
	assert.Equal(t, []string{"/app/verify.py"}, rw.Files)
	assert.Equal(t, map[string]string{"/app/verify.py": "SUCCESS\n"}, rw.Printed)
	assert.Equal(t, "grading\n", rw.Output)
	assert.Equal(t, []string{"/opt/task/expected.sha256"}, rw.Data)

	rw = RewritePlan(plan(0))
	assert.Equal(t, []string{"/app/verify.py"}, rw.Files)
	assert.Empty(t, rw.Data, "no verdict to fall beside an oracle that scores 0")
}

// The verifier's own code outside the system's and /tests, the oracle's
// work included, read from the trace the leaks check has already.
func TestVerifierCode(t *testing.T) {
	g := &Grading{Events: []vtrace.Event{
		{Op: "exec", Path: "/usr/bin/python3", Argv: []string{"python3", "/tests/check.py"}, Cwd: "/"},
		{Op: "open", Path: "/tests/check.py"},
		{Op: "open", Path: "/app/solution.py"},
		{Op: "open", Path: "/opt/expected.json"},
	}}
	assert.Equal(t, []string{"/app/solution.py"}, g.VerifierCode())
	assert.Nil(t, (*Grading)(nil).VerifierCode())
}
