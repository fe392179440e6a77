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
	require.Len(t, rec.Trials, 6)
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

	// The wrong answer's cell leads to its diff and its grader's log.
	sel := `#t-semver__wrong__1`
	require.NoError(t, chromedp.Do(bctx,
		chromedp.Click(chromedp.CSS(`#matrix a[data-trial="semver__wrong__1"]`)),
		chromedp.WaitVisible(chromedp.CSS(sel+` details.diff pre`))))
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
	assert.Equal(t, 2, visible, "each task has a failing trial (nop, wrong)")

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
