package trial

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/runner/agent"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
)

// A failed grade's cause: the failed tests, the grader's most telling
// line, and the log's path.
func TestFailureCause(t *testing.T) {
	pytest := `test.sh: app is missing from the work dir

==================================== ERRORS ====================================
_______________________ ERROR collecting test_hidden.py ________________________
ImportError while importing test module '/tmp/grade.UGH5f0sR/test_hidden.py'.
Traceback:
test_hidden.py:2: in <module>
    import app
E   ModuleNotFoundError: No module named 'app'
=========================== short test summary info ============================
ERROR test_hidden.py
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
1 error in 0.07s
RESULT {"reward": 0, "passed": 0, "total": 1, "runner": "pytest", "failed": ["test_hidden"]}
`
	tests := []struct {
		name, log string
		sum       *grader.Summary
		want      string
	}{
		{"pytest's detail", pytest, &grader.Summary{Failed: []string{"test_hidden"}},
			"failing tests: test_hidden; ModuleNotFoundError: No module named 'app'"},
		{"an exception", "checking\nTraceback (most recent call last):\n  File \"x.py\", line 1\nValueError: bad row 3\n", nil,
			"ValueError: bad row 3"},
		{"a plain complaint", "comparing\noutput differs from expected at line 4\nbye\n", nil, "output differs from expected at line 4"},
		{"only the reward", "RESULT {\"reward\": 0}\n", nil, ""},
		{"the RESULT line's error", "test.sh: copying\nRESULT {\"reward\": 0, \"error\": \"app/README is missing\"}\n",
			&grader.Summary{Error: "app/README is missing"}, "the grader says: app/README is missing; test.sh: copying"},
		{"many failed tests", "", &grader.Summary{Failed: []string{"a", "b", "c", "d", "e", "f", "g"}},
			"failing tests: a, b, c, d, e and 2 more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.log != "" {
				assert.NoError(t, os.WriteFile(filepath.Join(dir, results.GraderLog), []byte(tt.log), 0o644))
			}
			got := failureCause(tt.sum, dir)
			if tt.want == "" {
				assert.Empty(t, got)
				return
			}
			assert.Equal(t, tt.want+" ("+filepath.Join(dir, results.GraderLog)+")", got)
		})
	}
}

// An oracle that failed half way is said before the tests that then fail.
func TestAgentCause(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, results.AgentLog)
	assert.NoError(t, os.WriteFile(log, []byte("=== oracle: bash /solution/solve.sh\ncp: cannot stat '/nonexistent/file.py': No such file or directory\n=== exit 1\n"), 0o644))
	one, zero := 1, 0
	oracle, nop := suite.Variant{Agent: suite.AgentOracle}, suite.Variant{Agent: suite.AgentNop}
	assert.Equal(t, "the oracle (solution/) exited 1: cp: cannot stat '/nonexistent/file.py': No such file or directory ("+log+")",
		agentCause(oracle, agent.Result{ExitCode: &one}, dir))
	assert.Empty(t, agentCause(oracle, agent.Result{ExitCode: &zero}, dir), "exit 0 says nothing")
	assert.Empty(t, agentCause(nop, agent.Result{ExitCode: &one}, dir), "nop did nothing")
	assert.Equal(t, "a; then b", joinCause("a", "", "b"))
}
