package htmlreport_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/internal/testenv"
	"github.com/flightdeck/flightdeck/runner"
	"github.com/flightdeck/flightdeck/runner/htmlreport"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/sandbox"
)

// ArtifactsEnv names a directory where the test leaves the screenshot of
// the report for people to look at (CI keeps it); without it, the test's
// temporary directory.
const ArtifactsEnv = "FLIGHTDECK_ARTIFACTS"

// The report of a real run of the default suite (its two tasks, oracle and
// nop, and a variant that answers wrongly), in headless Chromium: one
// matrix cell per trial with its outcome, a failing trial's diff and
// grader log reachable from its cell, no network request but the page
// itself, and a screenshot saved.
func TestReportInBrowser(t *testing.T) {
	testenv.Short(t)
	chromium := testenv.Tool(t, "chromium")
	eng := testenv.Engine(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	dir := t.TempDir()
	suiteFile := filepath.Join(dir, "local-plus.yaml")
	require.NoError(t, os.WriteFile(suiteFile, []byte(`name: local-plus
tasks: [`+filepath.Join(root, "tasks", "smoke", "semver")+`, `+filepath.Join(root, "tasks", "fixtures", "csv-validator")+`]
variants:
  oracle: {agent: oracle, expect: passed}
  nop: {agent: nop, expect: failed}
  wrong: {agent: command, command: "echo 'a wrong answer' > WRONG.txt", expect: failed}
  hopeful: {agent: nop, expect: passed}
retries: 0
results: `+filepath.Join(dir, "results")+`
`), 0o644))
	ctx := context.Background()
	req, err := runner.Prepare(ctx, suiteFile, suite.Options{Cwd: dir, Retries: -1})
	require.NoError(t, err)
	r := &runner.Runner{Open: func(context.Context) (sandbox.Engine, error) { return eng, nil }, Version: "test",
		Owner: sandbox.Owner{UID: os.Getuid(), GID: os.Getgid()}}
	rec, err := r.Run(ctx, req)
	require.NoError(t, err)
	require.Len(t, rec.Trials, 8)
	page := filepath.Join(rec.Dir, htmlreport.File)
	require.FileExists(t, page, "written at the end of the run")

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium),
		chromedp.NoSandbox, chromedp.WindowSize(1400, 1000))
	actx, cancel := chromedp.NewExecAllocator(ctx, opts...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	bctx, cancel = context.WithTimeout(bctx, 2*time.Minute)
	defer cancel()

	var mu sync.Mutex
	var requests []string
	require.NoError(t, chromedp.Listen(bctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			mu.Lock()
			requests = append(requests, e.Request.URL)
			mu.Unlock()
		}
	}))
	_, err = chromedp.Call(bctx, network.Enable, network.EnableParams{})
	require.NoError(t, err)
	url := "file://" + page
	require.NoError(t, chromedp.Do(bctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("#matrix"))))
	cells, err := chromedp.Run(bctx, chromedp.Evaluate[[]map[string]string](
		`Array.from(document.querySelectorAll('#matrix a.t')).map(a => ({trial: a.dataset.trial, outcome: a.dataset.outcome}))`))
	require.NoError(t, err)

	got := map[string]string{}
	for _, c := range cells {
		got[c["trial"]] = c["outcome"]
	}
	want := map[string]string{}
	for _, tl := range rec.Trials {
		want[tl.Trial] = string(tl.Outcome)
	}
	assert.Len(t, cells, len(rec.Trials), "one cell per trial")
	assert.Equal(t, want, got, "each cell shows its trial's outcome")
	assert.Equal(t, "passed", got["semver__oracle__1"])
	assert.Equal(t, "failed", got["semver__wrong__1"])

	// A failure the variant expects (nop) is drawn apart from one it
	// does not (hopeful: a nop expected to pass).
	colour := func(trial string) string {
		c, err := chromedp.Run(bctx, chromedp.Evaluate[string](
			`getComputedStyle(document.querySelector('#matrix a[data-trial="`+trial+`"]')).backgroundColor`))
		require.NoError(t, err)
		return c
	}
	assert.Equal(t, "rgb(207, 34, 46)", colour("semver__hopeful__1"), "an unexpected failure is red")
	assert.Equal(t, "rgb(140, 149, 159)", colour("semver__nop__1"), "an expected failure is grey")
	assert.Equal(t, colour("semver__nop__1"), colour("semver__wrong__1"))

	// The wrong answer's cell leads to its diff and its grader's log.
	sel := `#t-semver__wrong__1`
	require.NoError(t, chromedp.Do(bctx,
		chromedp.Click(chromedp.CSS(`#matrix a[data-trial="semver__wrong__1"]`)),
		chromedp.WaitVisible(chromedp.CSS(sel+` details.diff pre`)),
		// The page opens the trial's details on the hash change, which a
		// busy browser runs after the click returns: wait for the log too.
		chromedp.WaitVisible(chromedp.CSS(sel+` details.log[data-log="grader.log"] pre`))))
	diffText, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel+` details.diff pre`)))
	require.NoError(t, err)
	logOpen, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`document.querySelector('`+sel+` details.log[data-log="grader.log"]').open`))
	require.NoError(t, err)
	logText, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel+` details.log[data-log="grader.log"] pre`)))
	require.NoError(t, err)
	trialShot, err := chromedp.Run(bctx, chromedp.Screenshot(chromedp.CSS(sel)))
	require.NoError(t, err)
	assert.Contains(t, diffText, "+a wrong answer", "the diff, rendered")
	assert.True(t, logOpen, "following a cell's link opens the trial's logs")
	assert.NotEmpty(t, strings.TrimSpace(logText), "the grader's log")

	// The filter hides the rows that passed everywhere.
	require.NoError(t, chromedp.Do(bctx, chromedp.Click(chromedp.ID("only-failing"))))
	visible, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll('#matrix tr[data-task]:not(.hidden)').length`))
	require.NoError(t, err)
	assert.Equal(t, 2, visible, "each task has a failing trial (nop, wrong, hopeful)")

	require.NoError(t, chromedp.Do(bctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("#matrix"))))
	shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	out := os.Getenv(ArtifactsEnv)
	if out == "" {
		out = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(out, 0o755))
	shotPath := filepath.Join(out, "report.png")
	require.NoError(t, os.WriteFile(shotPath, shot, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(out, "report-failing-trial.png"), trialShot, 0o644))
	t.Logf("screenshot of the report: %s", shotPath)

	mu.Lock()
	defer mu.Unlock()
	for _, u := range requests {
		assert.True(t, strings.HasPrefix(u, url), "the page fetched %s", u)
	}
	assert.NotEmpty(t, requests, "the page itself was seen")
}

// task verify's page: the variants it ran for the task, none of the
// checks that did not apply to it (no empty variant), and the empty
// attempt's expected failure drawn apart.
func TestVerifyReportInBrowser(t *testing.T) {
	testenv.Short(t)
	chromium := testenv.Tool(t, "chromium")
	eng := testenv.Engine(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	dir := t.TempDir()
	ctx := context.Background()
	req, err := runner.PrepareVerify(ctx, []string{filepath.Join(root, "tasks", "fixtures", "csv-validator")},
		suite.Options{Cwd: dir, Results: filepath.Join(dir, "results"), Retries: -1}, runner.VerifyOptions{Repeat: 1})
	require.NoError(t, err)
	var configured []string
	for _, v := range req.Config.Variants {
		configured = append(configured, v.Name)
	}
	r := &runner.Runner{Open: func(context.Context) (sandbox.Engine, error) { return eng, nil }, Version: "test",
		Owner: sandbox.Owner{UID: os.Getuid(), GID: os.Getgid()}}
	rec, err := r.Run(ctx, req)
	require.NoError(t, err)
	ran := map[string]bool{}
	for _, tl := range rec.Trials {
		ran[tl.Variant] = true
	}
	require.Less(t, len(ran), len(configured), "some of verify's variants did not apply to this task: %v", configured)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox)
	actx, cancel := chromedp.NewExecAllocator(ctx, opts...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	bctx, cancel = context.WithTimeout(bctx, 2*time.Minute)
	defer cancel()
	require.NoError(t, chromedp.Do(bctx, chromedp.Navigate("file://"+filepath.Join(rec.Dir, htmlreport.File)),
		chromedp.WaitVisible(chromedp.CSS("#matrix"))))
	rows, err := chromedp.Run(bctx, chromedp.Evaluate[[]map[string]string](
		`Array.from(document.querySelectorAll('#variants tr')).slice(1).map(tr => ({variant: tr.cells[0].textContent, trials: tr.cells[2].textContent}))`))
	require.NoError(t, err)
	require.Len(t, rows, len(ran), "one row per variant that ran")
	for _, row := range rows {
		assert.True(t, ran[row["variant"]], "variant %s ran", row["variant"])
		assert.NotEqual(t, "0", row["trials"], "no empty variant")
	}
	columns, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll('#matrix tr:first-child th').length - 1`))
	require.NoError(t, err)
	assert.Equal(t, len(ran), columns, "one column per variant that ran")
	nop, err := chromedp.Run(bctx, chromedp.Evaluate[string](
		`document.querySelector('#matrix a[data-outcome="failed"]').className`))
	require.NoError(t, err)
	assert.Contains(t, nop, "expected", "the empty attempt's failure is the expected one")
}
