package htmlreport

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/runner/audit"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
)

// writeRun writes a run dir with one result per trial ("task/variant" →
// outcome), as a run leaves it.
func writeRun(t *testing.T, dir, runID string, outcomes map[string]grader.Outcome) string {
	t.Helper()
	runDir := filepath.Join(dir, runID)
	rec := &results.RunRecord{Schema: results.RunSchema, RunID: runID, Dir: runDir, Suite: "s", Status: results.StatusFinished,
		Config:  suite.Config{Variants: []suite.Variant{{Name: "a", Agent: "oracle"}, {Name: "b", Agent: "nop"}}, Attempts: 1},
		Started: time.Now().Add(-time.Minute), Finished: time.Now()}
	for key, o := range outcomes {
		task, variant, _ := strings.Cut(key, "/")
		trial := task + "__" + variant + "__1"
		start := time.Now().Add(-10 * time.Second)
		r := &results.Result{Schema: results.ResultSchema, RunID: runID, Trial: trial, TaskID: task, Variant: variant, Attempt: 1,
			Outcome: o, Started: start, Finished: start.Add(4 * time.Second), Tries: 1,
			Phases: []results.Phase{{Name: "agent", Start: start, End: start.Add(time.Second)}, {Name: "grade", Start: start.Add(time.Second), End: start.Add(4 * time.Second)}}}
		require.NoError(t, os.MkdirAll(filepath.Join(runDir, trial), 0o755))
		require.NoError(t, results.WriteJSONFile(filepath.Join(runDir, trial, results.ResultFile), r))
		rec.Trials = append(rec.Trials, results.TrialSummary{TrialLine: results.TrialLine{Trial: trial, TaskID: task, Variant: variant, Attempt: 1, Outcome: o}})
	}
	require.NoError(t, results.WriteJSONFile(filepath.Join(runDir, results.RunFile), rec))
	return runDir
}

// A log larger than the page holds is cut to its end, with a link to the
// file; HTML in a log is text, not markup.
func TestReportCutsLargeLogs(t *testing.T) {
	dir := writeRun(t, t.TempDir(), "run-1", map[string]grader.Outcome{"t/a": grader.OutcomePassed, "t/b": grader.OutcomeFailed})
	log := strings.Repeat("early line\n", 40000) + "<script>alert(1)</script>\nthe last line\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "t__b__1", results.GraderLog), []byte(log), 0o644))
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, dir, ""))
	page := buf.String()
	assert.Contains(t, page, `the whole log is <a href="t__b__1/grader.log">t__b__1/grader.log</a>`)
	assert.Contains(t, page, "the last line")
	assert.Less(t, len(page), 2*maxEmbed+64<<10, "the page holds the log's end, not all of it")
	assert.NotContains(t, page, "<script>alert(1)</script>", "escaped")
	assert.Contains(t, page, "&lt;script&gt;alert(1)&lt;/script&gt;")
	assert.Contains(t, page, `data-outcome="failed"`)
	assert.Contains(t, page, "0 task dirs, 2 variants, 1 attempt, 0 at once, 0 retries", "counts agree with their nouns")
}

// Two runs compared: the tasks and variants whose outcome changed.
func TestReportComparesRuns(t *testing.T) {
	root := t.TempDir()
	before := writeRun(t, root, "run-1", map[string]grader.Outcome{"x/a": grader.OutcomePassed, "y/a": grader.OutcomePassed, "x/b": grader.OutcomeFailed})
	now := writeRun(t, root, "run-2", map[string]grader.Outcome{"x/a": grader.OutcomeFailed, "y/a": grader.OutcomePassed, "x/b": grader.OutcomeFailed})
	a, err := load(now)
	require.NoError(t, err)
	b, err := load(before)
	require.NoError(t, err)
	d := compareRuns(a, b)
	require.Len(t, d, 1)
	assert.Equal(t, diff{Task: "x", Left: "run-1 a", Right: "run-2 a", From: "passed", To: "failed", RightA: "t-x__a__1"}, d[0])
	v := compareVariants(a)
	require.Len(t, v, 0, "x: failed under both a and b now")
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, now, before))
	assert.Contains(t, buf.String(), "Tasks whose outcome differs from run run-1")
}

// The agent's questions are marks on its trial's timeline, with the
// exchange as their title; the one that needed input stands out.
func TestReportMarksQuestions(t *testing.T) {
	dir := writeRun(t, t.TempDir(), "run-1", map[string]grader.Outcome{"t/a": grader.OutcomePassed, "t/b": grader.OutcomeNeedsInput})
	for trial, edit := range map[string]func(r *results.Result){
		"t__a__1": func(r *results.Result) {
			r.Questions = []results.Exchange{{ID: "1", Question: "which format?", Reply: "ISO 8601", At: r.Started.Add(2 * time.Second)}}
		},
		"t__b__1": func(r *results.Result) {
			r.NeedsInput = &results.NeedsInput{ID: "1", Question: "may I?", Reason: "no answer of the task's matches it", Asked: 1, At: r.Started.Add(time.Second)}
		},
	} {
		path := filepath.Join(dir, trial, results.ResultFile)
		r, err := results.ReadResult(path)
		require.NoError(t, err)
		edit(r)
		require.NoError(t, results.WriteJSONFile(path, r))
	}
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, dir, ""))
	page := buf.String()
	assert.Contains(t, page, `<span class="q" style="left: 50.00%" title="asked &#34;which format?&#34;, told &#34;ISO 8601&#34;">?</span>`)
	assert.Contains(t, page, `<span class="q open" style="left: 25.00%" title="asked &#34;may I?&#34;: needs input (no answer of the task&#39;s matches it)">?</span>`)
	assert.Contains(t, page, "needs input: asked <q>may I?</q>")
}

// A verify run's page shows its checks, each with its status and evidence;
// a run without an audit shows none.
func TestReportShowsTheAudit(t *testing.T) {
	dir := writeRun(t, t.TempDir(), "run-1", map[string]grader.Outcome{"t/a": grader.OutcomePassed, "t/b": grader.OutcomeFailed})
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, dir, ""))
	assert.NotContains(t, buf.String(), `id="checks"`)
	rep := &audit.Report{RunID: "run-1", Repeat: 1, Tasks: []audit.Task{{Task: "t", Dir: "/tasks/t", Checks: []audit.Check{
		{Name: audit.CheckOracle, Status: audit.OK, Evidence: "passed 1 of 1 runs"},
		{Name: audit.CheckAttacks, Status: audit.Fail, Evidence: "an empty attempt that plants <conftest.py> scores 1",
			Hacks: []audit.Hack{{Name: "reward", Status: audit.HackHeld, Text: "3 files planted, reward 0"}}},
	}}}}
	require.NoError(t, audit.Save(dir, rep))
	buf.Reset()
	require.NoError(t, Write(&buf, dir, ""))
	page := buf.String()
	assert.Contains(t, page, `id="checks"`)
	assert.Contains(t, page, `<span class="o-failed">FAIL</span> t`)
	assert.Contains(t, page, `<tr data-check="attacks" data-status="FAIL"><td>attacks</td><td class="err">FAIL</td><td>an empty attempt that plants &lt;conftest.py&gt; scores 1</td></tr>`)
	assert.Contains(t, page, `<tr data-hack="reward" data-status="held"><td>&nbsp;&nbsp;reward</td><td class="muted">held</td><td>3 files planted, reward 0</td></tr>`)
	assert.Contains(t, page, `data-check="oracle" data-status="ok"`)
}
