package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/runner/results"
)

// badInputs lays out the bad inputs the commands are given, in dir:
//
//	afile          a regular file
//	adir           an empty directory
//	missing        nothing
//	big-instr/     a task whose instruction.md is 10 MiB
//	empty-tests/   a task whose tests/ is empty (files_digest recorded for that)
//	dir-instr/     a task whose instruction.md is a directory
//	runs/r1/       a run whose run.json is a directory
//	s-*.yaml       suites over each of them
func badInputs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "afile"), []byte("not a task, a suite or JSON\n"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "adir"), 0o755))
	native := taskDir(t, nativeTask)

	big := copyTask(t, native, dir, "big-instr", nil)
	require.NoError(t, os.WriteFile(filepath.Join(big, "instruction.md"), []byte(strings.Repeat("Write calc.add.\n", 10<<20/16)), 0o644))

	empty := copyTask(t, native, dir, "empty-tests", nil)
	require.NoError(t, os.RemoveAll(filepath.Join(empty, "tests")))
	require.NoError(t, os.Mkdir(filepath.Join(empty, "tests"), 0o755))
	r := flightdeck(t, dir, nil, "task", "digest", "--write", empty)
	require.Equal(t, 0, r.code, r.stderr)

	di := copyTask(t, native, dir, "dir-instr", nil)
	require.NoError(t, os.Remove(filepath.Join(di, "instruction.md")))
	require.NoError(t, os.Mkdir(filepath.Join(di, "instruction.md"), 0o755))

	require.NoError(t, os.MkdirAll(filepath.Join(dir, "runs", "r1", "run.json"), 0o755))
	for name, task := range map[string]string{"missing": "missing", "afile": "afile", "big": big, "empty": empty, "dir": di} {
		suiteFile := fmt.Sprintf("name: s\ntasks: [%s]\nvariants:\n  c: {agent: command, command: \"true\"}\n  nop: {agent: nop}\nresults: res-%s\n", task, name)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "s-"+name+".yaml"), []byte(suiteFile), 0o644))
	}
	return dir
}

// Every command given a missing path, a file for a directory, a directory
// for a file, a 10 MiB instruction or an empty tests/: an error that names
// the path (and the rule, where the test can tell), never a panic, and no
// file written.
func TestBadInput(t *testing.T) {
	dir := badInputs(t)
	tests := []struct {
		name string
		args []string
		code int      // 0: any non-zero code
		want []string // in stdout or stderr
	}{
		{"task new over a file", []string{"task", "new", "afile"}, 2, []string{"afile", "not a directory"}},
		{"task new under a file", []string{"task", "new", "afile/sub"}, 2, []string{"afile/sub", "not a directory"}},
		{"task new over a task", []string{"task", "new", "big-instr"}, 2, []string{"big-instr", "not empty"}},
		{"task check missing", []string{"task", "check", "missing"}, 1, []string{"missing", "does not exist"}},
		{"task check file", []string{"task", "check", "afile"}, 1, []string{"afile", "not a directory"}},
		{"task check instruction dir", []string{"task", "check", "dir-instr"}, 1, []string{"dir-instr/instruction.md", "not a regular file"}},
		{"task check big instruction", []string{"task", "check", "big-instr"}, 1, []string{"big-instr/instruction.md", "64000"}},
		{"task check empty tests", []string{"task", "check", "empty-tests"}, 1, []string{"empty-tests/tests/test.sh", "missing"}},
		{"task digest missing", []string{"task", "digest", "missing"}, 0, []string{"missing/task.toml"}},
		{"task digest file", []string{"task", "digest", "afile"}, 0, []string{"afile"}},
		{"task digest instruction dir", []string{"task", "digest", "dir-instr"}, 0, []string{"dir-instr/instruction.md", "not a regular file"}},
		{"task digest --write file", []string{"task", "digest", "--write", "afile"}, 0, []string{"afile"}},
		{"task verify missing", []string{"task", "verify", "missing"}, 2, []string{"missing"}},
		{"task verify file", []string{"task", "verify", "afile"}, 2, []string{"afile", "not a task directory"}},
		{"task verify instruction dir", []string{"task", "verify", "dir-instr"}, results.ExitTask, []string{"dir-instr/instruction.md", "not a regular file"}},
		{"import-aidlc missing", []string{"task", "import-aidlc", "missing", "--out", "out"}, 2, []string{"missing", "nothing was written"}},
		{"import-aidlc dir", []string{"task", "import-aidlc", "adir", "--out", "out"}, 2, []string{"adir", "is a directory"}},
		{"import-aidlc not JSON", []string{"task", "import-aidlc", "afile", "--out", "out"}, 0, []string{"afile", "not valid JSON"}},
		{"import-aidlc out is a file", []string{"task", "import-aidlc", aidlcSuite(t), "--out", "afile"}, 2, []string{"afile", "not a directory"}},
		{"run missing suite", []string{"run", "missing"}, 2, []string{"missing"}},
		{"run dir as suite", []string{"run", "adir"}, 2, []string{"adir", "is a directory", "--path adir"}},
		{"run file as suite", []string{"run", "afile"}, 2, []string{"afile:1", "mapping"}},
		{"run missing task", []string{"run", "s-missing.yaml"}, 2, []string{"missing"}},
		{"run file as task", []string{"run", "s-afile.yaml"}, 2, []string{"afile"}},
		{"report missing run", []string{"report", "--results", "runs", "nope"}, 2, []string{"nope", "run.json not found"}},
		{"report run.json dir", []string{"report", "--results", "runs", "r1"}, 2, []string{"runs/r1/run.json", "is a directory"}},
		{"report results file", []string{"report", "--results", "afile", "r1"}, 2, []string{"afile"}},
		{"spec record missing run", []string{"spec", "record", "--results", "runs", "nope", "t__v__1", "s", "pass", "--note", "n"}, 2, []string{"nope"}},
		{"spec record bad trial", []string{"spec", "record", "--results", "runs", "r1", "t", "s", "pass", "--note", "n"}, 2, []string{`"t"`, "TASK__VARIANT__ATTEMPT"}},
		{"hangar export missing", []string{"hangar", "export", "--dry-run", "missing"}, 2, []string{"missing", "no such file"}},
		{"hangar export file", []string{"hangar", "export", "--dry-run", "afile"}, 2, []string{"afile"}},
		{"hangar export dir", []string{"hangar", "export", "--dry-run", "adir"}, 2, []string{"adir", "task directory"}},
		{"hangar export big instruction", []string{"hangar", "export", "--out", "out", "big-instr"}, 1, []string{"big-instr/instruction.md", "64000", "nothing written"}},
		{"hangar export empty tests", []string{"hangar", "export", "--out", "out", "empty-tests"}, 1, []string{"empty-tests/tests", "no files", "nothing written"}},
		{"hangar export out is a file", []string{"hangar", "export", "--out", "afile", "big-instr"}, 0, []string{"nothing written"}},
		{"gc with an argument", []string{"gc", "missing"}, 2, []string{"missing", "no arguments"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tree(t, dir)
			r := flightdeck(t, dir, nil, tc.args...)
			out := r.stdout + r.stderr
			if tc.code != 0 {
				assert.Equal(t, tc.code, r.code, out)
			} else {
				assert.NotZero(t, r.code, out)
			}
			for _, w := range tc.want {
				assert.Contains(t, out, w)
			}
			assertNoPanic(t, out)
			assert.Equal(t, before, tree(t, dir), "files were written")
		})
	}
}

// A run whose only task cannot be loaded (its instruction.md is a
// directory) is not refused as a whole: the task's trials are recorded
// refused with the reason, the summary names it, and the run exits 4 (a
// task refused) without needing the engine.
func TestBadInputRunRefusedTask(t *testing.T) {
	dir := badInputs(t)
	r := flightdeck(t, dir, nil, "run", "s-dir.yaml")
	out := r.stdout + r.stderr
	assertNoPanic(t, out)
	assert.Equal(t, results.ExitTask, r.code, out)
	for _, w := range []string{"refused tasks", "dir-instr/instruction.md", "not a regular file"} {
		assert.Contains(t, r.stdout, w)
	}
	run := readRun(t, r, filepath.Join(dir, "res-dir"))
	require.Len(t, run.resultsDir, 2, "a trial per variant")
	for name, res := range run.resultsDir {
		assert.Equal(t, grader.OutcomeRefused, res.Outcome, name)
		assert.Contains(t, res.Error, "dir-instr/instruction.md", name)
	}
}

// A file that cannot be read by permission; root reads it anyway, so the
// case is skipped when the tests run as root.
func TestBadInputUnreadable(t *testing.T) {
	if os.Getuid() == 0 {
		t.Skip("running as root: a file's mode does not stop root reading it")
	}
	dir := badInputs(t)
	task := copyTask(t, taskDir(t, nativeTask), dir, "unreadable", nil)
	toml := filepath.Join(task, "task.toml")
	require.NoError(t, os.Chmod(toml, 0))
	t.Cleanup(func() { os.Chmod(toml, 0o644) })
	for _, args := range [][]string{{"task", "check", task}, {"task", "digest", task}, {"task", "verify", task}, {"hangar", "export", "--dry-run", task}} {
		r := flightdeck(t, dir, nil, args...)
		assert.NotZero(t, r.code)
		assert.Contains(t, r.stdout+r.stderr, "task.toml")
		assertNoPanic(t, r.stdout+r.stderr)
	}
}

// A run of a task whose instruction is 10 MiB, and of a task whose tests/
// is empty: neither may end as the agent's failure. The empty tests/ must
// be refused, naming the path: before the run (exit 2), or as the task's
// refused trials (exit 1); the big instruction may be refused the same way,
// or given to the agent (which then runs).
func TestBadInputRunTasks(t *testing.T) {
	requireEngine(t)
	dir := badInputs(t)
	for _, tc := range []struct {
		suiteFile, resultsDir, path, bug string
		mayRun                           bool
	}{
		{"s-big.yaml", "res-big", "big-instr/instruction.md",
			"a 10 MiB instruction is passed in FLIGHTDECK_INSTRUCTION, the exec fails (exit 126) and the trial counts as the agent's failure",
			true},
		{"s-empty.yaml", "res-empty", "empty-tests/tests",
			"a task with an empty tests/ is run, and every trial fails for want of a reward",
			false},
	} {
		t.Run(tc.suiteFile, func(t *testing.T) {
			r := flightdeck(t, dir, nil, "run", tc.suiteFile)
			out := r.stdout + r.stderr
			assertNoPanic(t, out)
			ok := r.code == 2 && strings.Contains(out, tc.path)
			if r.code != 2 {
				run := readRun(t, r, filepath.Join(dir, tc.resultsDir))
				assertNoLeftovers(t, run.id)
				ran, refused := tc.mayRun, r.code == results.ExitTask && len(run.resultsDir) > 0
				for _, res := range run.resultsDir {
					assert.NotEqual(t, grader.OutcomePassed, res.Outcome)
					if res.Agent == "command" {
						ran = ran && res.AgentPhase.ExitCode != nil && *res.AgentPhase.ExitCode == 0
					}
					refused = refused && res.Outcome == grader.OutcomeRefused && strings.Contains(res.Error, tc.path)
				}
				ok = ran || refused
			}
			fixedBug(t, ok, tc.bug, fmt.Sprintf("exit %d", r.code))
		})
	}
}

func assertNoPanic(t *testing.T, out string) {
	t.Helper()
	assert.NotContains(t, out, "panic:")
	assert.NotContains(t, out, "goroutine ")
}

// aidlcSuite is a valid ai-dlc suite from the repository's fixtures.
func aidlcSuite(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "fixtures", "aidlc", "smoke", "suite.json"))
	require.NoError(t, err)
	return p
}
