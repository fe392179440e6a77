package runner

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/testenv"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/sandbox"
)

// writeHarborTask writes a small Harbor task under root: its answer.txt
// must hold 42. extra is appended to task.toml ([environment] gpus = 1
// refuses it, say); a toml that begins with "!" replaces task.toml whole.
func writeHarborTask(t *testing.T, root, name, extra string) string {
	t.Helper()
	dir := filepath.Join(root, name)
	toml := "schema_version = \"1.4\"\n\n[task]\nname = \"flightdeck-tests/" + name + "\"\n\n[verifier]\ntimeout_sec = 60.0\n\n[agent]\ntimeout_sec = 60.0\n" + extra
	if rest, ok := strings.CutPrefix(extra, "!"); ok {
		toml = rest
	}
	for rel, content := range map[string]string{
		"task.toml":              toml,
		"instruction.md":         "Write 42 into /app/answer.txt.\n",
		"environment/Dockerfile": "FROM " + FallbackImage + "\nWORKDIR /app\n",
		"tests/test.sh":          "#!/bin/bash\nmkdir -p /logs/verifier\nif [ \"$(cat /app/answer.txt 2>/dev/null)\" = 42 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n",
		"solution/solve.sh":      "#!/bin/bash\necho 42 > /app/answer.txt\n",
	} {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o755))
	}
	return dir
}

// A dataset's refused tasks are listed with the id they would have had;
// filters, --n-tasks and the unique-id rule apply to them as to the others.
func TestLoadTasksRefusedTasks(t *testing.T) {
	root := t.TempDir()
	writeHarborTask(t, root, "a-good", "")
	writeHarborTask(t, root, "b-gpus", "\n[environment]\ngpus = 1\n")
	writeHarborTask(t, root, "c-broken", "!this is [not toml\n")
	steps := writeHarborTask(t, root, "d-steps", "\n[[steps]]\nname = \"one\"\n[steps.healthcheck]\ninterval_sec = 1.0\n")
	writeHarborTask(t, root, "e-good", "")
	tests := []struct {
		name        string
		opts        suite.Options
		want        []string
		wantRefused []string // id: file (relative to root): field
		wantErr     string
	}{
		{name: "every task", opts: suite.Options{},
			want: []string{"a-good", "e-good"},
			wantRefused: []string{"b-gpus: b-gpus/task.toml: [environment].gpus", "c-broken: c-broken/task.toml: ",
				"d-steps: d-steps/task.toml: [[steps]][0].healthcheck.command"}},
		{name: "filters apply to refused ids", opts: suite.Options{Exclude: []string{"b-*", "c-*"}},
			want: []string{"a-good", "e-good"}, wantRefused: []string{"d-steps: d-steps/task.toml: [[steps]][0].healthcheck.command"}},
		{name: "--n-tasks counts refused tasks", opts: suite.Options{NTasks: 2},
			want: []string{"a-good"}, wantRefused: []string{"b-gpus: b-gpus/task.toml: [environment].gpus"}},
		{name: "only refused tasks left", opts: suite.Options{Include: []string{"b-*"}},
			wantRefused: []string{"b-gpus: b-gpus/task.toml: [environment].gpus"}},
		{name: "nothing left", opts: suite.Options{Include: []string{"z*"}}, wantErr: "no task is left"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.Cwd, opts.Retries, opts.Path = root, -1, []string{root}
			req, err := Prepare(t.Context(), "", opts)
			if tc.wantErr != "" {
				var ue *suite.UsageError
				require.ErrorAs(t, err, &ue)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, taskIDs(req.Tasks))
			var refused []string
			for _, rt := range req.Refused {
				rel, err := filepath.Rel(root, rt.File)
				require.NoError(t, err)
				refused = append(refused, fmt.Sprintf("%s: %s: %s", rt.ID, rel, rt.Field))
				assert.NotEmpty(t, rt.Rule, rt.ID)
				assert.Equal(t, filepath.Join(root, rt.ID), rt.Dir)
			}
			assert.Equal(t, tc.wantRefused, refused)
			assert.Len(t, req.Config.TaskDirs, len(tc.want)+len(tc.wantRefused), "refused tasks stay in the configuration, to be checked again on --resume")
		})
	}

	// A refused task named by [task].name keeps that id; one whose
	// task.toml does not parse is named by its directory.
	toml := readFile(t, filepath.Join(steps, "task.toml"))
	writeTestFile(t, filepath.Join(steps, "task.toml"), strings.Replace(toml, "flightdeck-tests/d-steps", "org/many-steps", 1))
	req, err := Prepare(t.Context(), "", suite.Options{Cwd: root, Retries: -1, Path: []string{root}, Include: []string{"many-*", "c-*"}})
	require.NoError(t, err)
	require.Len(t, req.Refused, 2)
	assert.Equal(t, "c-broken", req.Refused[0].ID)
	assert.Contains(t, req.Refused[0].Rule, "not valid TOML")
	assert.Equal(t, "many-steps", req.Refused[1].ID)

	// Ids stay unique across refused and runnable tasks.
	writeHarborTask(t, root, "f-dup", "!schema_version = \"1.4\"\n[task]\nname = \"org/a-good\"\n[[steps]]\nname = \"x\"\n")
	_, err = Prepare(t.Context(), "", suite.Options{Cwd: root, Retries: -1, Path: []string{root}})
	require.ErrorContains(t, err, "task id a-good is used by both")
}

// A suite file that cannot be parsed, an unknown variant or a missing task
// directory still fail the run before it starts, refused tasks or not.
func TestPrepareUsersMistakesStillFail(t *testing.T) {
	root := t.TempDir()
	writeHarborTask(t, root, "gpus", "\n[environment]\ngpus = 1\n")
	tests := []struct{ name, suiteFile, want string }{
		{"a suite that does not parse", "tasks: [gpus\n", "suite.yaml"},
		{"an unknown variant key", "tasks: [gpus]\nvariants: {o: {agent: oracle, model: x}}\n", `unknown key "model" in variant o`},
		{"a missing task dir", "tasks: [gpus, nope]\nvariants: {o: {agent: oracle}}\n", `tasks[1] "nope": no such directory`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			suiteFile := filepath.Join(root, "suite.yaml")
			writeTestFile(t, suiteFile, tc.suiteFile)
			_, err := Prepare(t.Context(), suiteFile, suite.Options{Cwd: root, Retries: -1})
			var ue *suite.UsageError
			require.ErrorAs(t, err, &ue)
			assert.Contains(t, err.Error(), tc.want)
		})
	}

	// A task dir recorded in a run and gone when it resumes.
	cfg := suite.Config{TaskDirs: []string{filepath.Join(root, "gone")}, Variants: []suite.Variant{{Name: "o", Agent: suite.AgentOracle}}, Attempts: 1}
	_, err := load(cfg, nil, suite.Options{Cwd: root})
	var ue *suite.UsageError
	require.ErrorAs(t, err, &ue)
	assert.Contains(t, err.Error(), "no such task directory")
}

// refusedSuite runs the answer fixture and, before it, a copy of it that
// asks for a GPU (refused), under two variants and two attempts.
func refusedSuite(t *testing.T) (suiteFile, gpus string) {
	t.Helper()
	abs, err := filepath.Abs(fixturesDir)
	require.NoError(t, err)
	dir := t.TempDir()
	gpus = filepath.Join(dir, "gpus")
	require.NoError(t, os.CopyFS(gpus, os.DirFS(filepath.Join(abs, "answer"))))
	toml := readFile(t, filepath.Join(gpus, "task.toml"))
	toml = strings.Replace(toml, "flightdeck-fixtures/answer", "flightdeck-fixtures/gpus", 1)
	writeTestFile(t, filepath.Join(gpus, "task.toml"), toml+"\n[environment]\ngpus = 1\n")
	suiteFile = filepath.Join(dir, "suite.yaml")
	writeTestFile(t, suiteFile, fmt.Sprintf(`
name: refused
tasks: [%s, %s]
variants:
  right: {agent: command, command: "echo 42", expect: passed}
  again: {agent: command, command: "printf 42"}
attempts: 2
concurrency: 1
results: results
`, gpus, filepath.Join(abs, "answer")))
	return suiteFile, gpus
}

// A refused task's trials are recorded refused with the reason, in
// result.json, run.json, the summary, the report and JUnit; the other
// task runs; refused trials stay out of every rate, and the run exits 1.
func TestRunRecordsRefusedTasks(t *testing.T) {
	testenv.Tool(t, "git")
	suiteFile, gpus := refusedSuite(t)
	req, err := Prepare(t.Context(), suiteFile, suite.Options{Cwd: filepath.Dir(suiteFile), Retries: -1})
	require.NoError(t, err)
	eng := newFake(t)
	eng.agent = answerAgent
	rec := fakeRun(t, eng, context.Background(), req)

	assert.Equal(t, results.ExitTask, rec.ExitCode, "a refused task fails the run")
	assert.Equal(t, results.StatusFinished, rec.Status)
	assert.Empty(t, rec.NotRun)
	assert.Empty(t, rec.Expectations, "a refused trial is held to no expectation")
	require.Len(t, rec.Trials, 8)
	assert.Equal(t, "gpus__right__1", rec.Trials[0].Trial, "trials are in the tasks' order")
	reason := filepath.Join(gpus, "task.toml") + ": [environment].gpus: GPUs are not supported"
	assertRefusedTrials(t, rec, eng, gpus, reason)
	assertRefusedReports(t, rec, reason)

	// The next run reuses the answer's results and checks the refused task
	// again: nothing of it is cached.
	again := fakeRun(t, newFake(t), context.Background(), req)
	assert.Equal(t, results.ExitTask, again.ExitCode)
	for _, tr := range again.Trials {
		assert.Equal(t, !strings.HasPrefix(tr.Trial, "gpus__"), tr.Cached, tr.Trial)
	}
}

// assertRefusedTrials checks each trial of the refused run, its result.json
// and its variants' rates, and that nothing of the refused task ran.
func assertRefusedTrials(t *testing.T, rec *results.RunRecord, eng *fakeEngine, gpus, reason string) {
	t.Helper()
	for _, tr := range rec.Trials {
		if !strings.HasPrefix(tr.Trial, "gpus__") {
			assert.Equal(t, grader.OutcomePassed, tr.Outcome, tr.Trial)
			continue
		}
		assert.Equal(t, grader.OutcomeRefused, tr.Outcome, tr.Trial)
		assert.Equal(t, grader.SpecRefused, tr.OutcomeClass, tr.Trial)
		assert.Contains(t, tr.Error, reason, tr.Trial)
		res, err := results.ReadResult(filepath.Join(rec.Dir, tr.Trial, results.ResultFile))
		require.NoError(t, err)
		require.NotNil(t, res.Refusal)
		assert.Equal(t, suite.Refusal{File: filepath.Join(gpus, "task.toml"), Field: "[environment].gpus"}, suite.Refusal{File: res.Refusal.File, Field: res.Refusal.Field})
		assert.Contains(t, res.Refusal.Rule, "GPUs are not supported")
		assert.Empty(t, res.CacheKey, "a refused trial has no cache key")
		assert.Nil(t, res.Reward)
	}
	require.Len(t, rec.Refused, 1)
	assert.Equal(t, "gpus", rec.Refused[0].ID)
	assert.Equal(t, gpus, rec.Refused[0].Dir)
	assert.Equal(t, "[environment].gpus", rec.Refused[0].Field)
	for _, c := range eng.Containers() {
		assert.False(t, strings.HasPrefix(c.Spec.TrialID, "gpus__"), "nothing of the refused task ran: %s", c.Spec.TrialID)
	}
	for _, v := range rec.Variants {
		assert.Equal(t, 4, v.Trials, v.Variant)
		assert.Equal(t, 2, v.Refused, v.Variant)
		assert.Equal(t, 2, v.Graded, v.Variant)
		if assert.NotNil(t, v.PassRate) {
			assert.Equal(t, 1.0, *v.PassRate, "%s: refused trials stay out of the rate", v.Variant)
		}
		assert.Equal(t, 2, v.Classes["refused"], v.Variant)
	}
}

// assertRefusedReports checks that the summary, the report and JUnit of
// the refused run name the refused task and why.
func assertRefusedReports(t *testing.T, rec *results.RunRecord, reason string) {
	t.Helper()
	var summary strings.Builder
	results.WriteSummary(&summary, rec)
	t.Logf("summary:\n%s", summary.String())
	assert.Contains(t, summary.String(), "refused tasks (not run, left out of every rate):\n  gpus: "+reason)
	assert.Regexp(t, `(?m)^gpus +refused +refused$`, summary.String())

	rep, err := results.LoadReport(rec.Dir)
	require.NoError(t, err)
	require.Len(t, rep.Refused, 1)
	var report strings.Builder
	results.WriteReport(&report, rep)
	t.Logf("report:\n%s", report.String())
	assert.Contains(t, report.String(), "  gpus: "+reason)
	assert.Regexp(t, `(?m)^gpus +right +1 +refused +refused +-`, report.String())

	var doc struct {
		Errors int `xml:"errors,attr"`
		Suites []struct {
			Cases []struct {
				Name  string `xml:"name,attr"`
				Error *struct {
					Type    string `xml:"type,attr"`
					Message string `xml:"message,attr"`
				} `xml:"error"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal([]byte(readFile(t, filepath.Join(rec.Dir, results.JUnitFile))), &doc))
	assert.Equal(t, 4, doc.Errors, "each refused trial is an error case")
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			if strings.HasPrefix(c.Name, "gpus#") && assert.NotNil(t, c.Error, c.Name) {
				assert.Equal(t, "refused", c.Error.Type)
				assert.Contains(t, c.Error.Message, "GPUs are not supported")
			}
		}
	}
}

// A run whose every task is refused needs no engine, and exits 1.
func TestRunOnlyRefusedOpensNoEngine(t *testing.T) {
	root := t.TempDir()
	writeHarborTask(t, root, "steps", "\n[[steps]]\nname = \"one\"\n")
	req, err := Prepare(t.Context(), "", suite.Options{Cwd: root, Retries: -1, Path: []string{root}, Results: filepath.Join(root, "results")})
	require.NoError(t, err)
	r := &Runner{Open: func(context.Context) (sandbox.Engine, error) {
		t.Error("a run of refused tasks opened the engine")
		return nil, errors.New("no engine")
	}}
	rec, err := r.Run(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, results.ExitTask, rec.ExitCode)
	require.Len(t, rec.Trials, 1)
	assert.Equal(t, grader.OutcomeRefused, rec.Trials[0].Outcome)
	assert.FileExists(t, filepath.Join(rec.Dir, "steps__oracle__1", results.ResultFile))
	assert.FileExists(t, filepath.Join(rec.Dir, results.JUnitFile))
}

// --resume checks a refused task again: still refused, it is recorded
// refused again without running; made runnable, it runs.
func TestResumeChecksRefusedTasksAgain(t *testing.T) {
	testenv.Tool(t, "git")
	suiteFile, gpus := refusedSuite(t)
	req, err := Prepare(t.Context(), suiteFile, suite.Options{Cwd: filepath.Dir(suiteFile), Retries: -1, Variants: []string{"right"}, Attempts: 1})
	require.NoError(t, err)
	eng := newFake(t)
	rec := fakeRun(t, eng, context.Background(), req)
	require.Equal(t, results.ExitExpectation, rec.ExitCode)

	still, err := PrepareResume(req.Config.Results, rec.RunID, suite.Options{})
	require.NoError(t, err)
	require.Len(t, still.Refused, 1)
	eng2 := newFake(t)
	rec2 := fakeRun(t, eng2, context.Background(), still)
	assert.Equal(t, results.ExitExpectation, rec2.ExitCode)
	assert.Zero(t, eng2.starts, "kept results and a refused task start nothing")
	assert.Equal(t, rec.Refused, rec2.Refused)

	toml := readFile(t, filepath.Join(gpus, "task.toml"))
	writeTestFile(t, filepath.Join(gpus, "task.toml"), strings.Replace(toml, "gpus = 1", "gpus = 0", 1))
	fixed, err := PrepareResume(req.Config.Results, rec.RunID, suite.Options{})
	require.NoError(t, err)
	assert.Empty(t, fixed.Refused)
	eng3 := newFake(t)
	eng3.agent = answerAgent
	rec3 := fakeRun(t, eng3, context.Background(), fixed)
	assert.Empty(t, rec3.Refused)
	for _, tr := range rec3.Trials {
		assert.NotEqual(t, grader.OutcomeRefused, tr.Outcome, tr.Trial)
	}
	assert.NotZero(t, eng3.starts, "the task that loads now runs")
}
