// Package htmlreport writes a run (or two runs, compared) as one
// self-contained HTML page: no script, style or font is fetched, so it
// works from file:// and offline. It shows the run, per-variant
// statistics, a task × variant matrix coloured by outcome, and for each
// trial its phases on a timeline, its reward, spec verdicts, tamper
// findings, diff and logs; large files are cut with a link to the file.
package htmlreport

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/atomicfile"
	itext "github.com/flightdeck/flightdeck/internal/text"
	"github.com/flightdeck/flightdeck/runner/audit"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
)

// File is the report's name in a run's directory.
const File = results.ReportPage

// maxEmbed is the most of one file (a log, a diff) the page holds whole;
// past it the page holds the end and links to the file.
const maxEmbed = 256 << 10

// tailLines is how many last lines of a log are shown first.
const tailLines = 40

// pageBudget bounds what a page holds whole: past it (a run of thousands
// of trials), a file shows its last lines and links to the rest.
const pageBudget = 32 << 20

//go:embed report.html.tmpl
var pageTemplate string

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"pct":    pct,
	"metric": results.MetricText,
	// count is n and its noun, plural unless n is 1: "1 attempt", "2
	// attempts"; a plural that is not the noun and an s comes after it.
	"count": func(n int, noun string, plural ...string) string {
		if n == 1 {
			return "1 " + noun
		}
		if len(plural) > 0 {
			return fmt.Sprintf("%d %s", n, plural[0])
		}
		return fmt.Sprintf("%d %ss", n, noun)
	},
	"first": func(n int, xs []string) []string { return xs[:min(n, len(xs))] },
	"deref": func(p *float64) float64 {
		if p == nil {
			return 0
		}
		return *p
	},
	"reward":    rewardText,
	"suiteFile": suite.FromFile,
	"seconds":   func(f float64) string { return fmt.Sprintf("%.1fs", f) },
	"when":      func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"diffline": func(line string) string {
		switch {
		case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"), strings.HasPrefix(line, "diff "):
			return "dh"
		case strings.HasPrefix(line, "+"):
			return "da"
		case strings.HasPrefix(line, "-"):
			return "dd"
		case strings.HasPrefix(line, "@@"):
			return "dc"
		}
		return ""
	},
}).Parse(pageTemplate))

// Write writes the page for the run in dir, compared with the run in
// against when that is not "" (the tasks whose outcome differs).
func Write(w io.Writer, dir, against string) error {
	run, err := load(dir)
	if err != nil {
		return err
	}
	data := pageData{Run: run, Generated: time.Now().UTC()}
	if data.Audit, err = audit.Load(dir); err != nil {
		return err
	}
	if against != "" {
		other, err := load(against)
		if err != nil {
			return err
		}
		data.Other = other
		data.Diffs = compareRuns(run, other)
	} else {
		data.Diffs = compareVariants(run)
	}
	var buf bytes.Buffer
	if err := page.Execute(&buf, data); err != nil {
		return fmt.Errorf("write the report of %s: %w", dir, err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// WriteFile writes the page to path atomically. Links to trial files are
// relative to the run's directory: the page is meant to sit in it.
func WriteFile(path, dir, against string) error {
	var buf bytes.Buffer
	if err := Write(&buf, dir, against); err != nil {
		return err
	}
	return atomicfile.WriteFile(path, buf.Bytes())
}

type pageData struct {
	Run       *run
	Audit     *audit.Report // task verify's checks, when the run is one
	Other     *run          // the run compared with, or nil
	Diffs     []diff        // tasks whose outcome differs (between variants, or between runs)
	Generated time.Time
}

type run struct {
	Rec      *results.RunRecord
	Dir      string
	Variants []results.VariantStats
	Tasks    []string    // in the record's order
	Columns  []string    // variants
	Cells    [][]cellSet // [task][variant]
	Trials   []*trial
	Missing  []string
}

// cellSet is one matrix cell: a task's trials of one variant, one per
// attempt.
type cellSet []*trial

type trial struct {
	R        *results.Result
	Anchor   string
	Class    string // the outcome's CSS class
	Marks    []string
	Timeline []bar
	// Asked marks the questions the agent asked on the timeline.
	Asked    []mark
	Duration float64
	Diff     *text
	Logs     []*text
}

// mark is a moment on a trial's timeline.
type mark struct {
	Left  float64 // % of the trial's time
	Title string
	Open  bool // the question got no reply
}

type bar struct {
	Name        string
	Left, Width float64 // percent of the trial
	Seconds     float64
}

// text is a file of the trial's, as the page shows it.
type text struct {
	Name  string
	Path  string // relative to the run's dir, for the link
	Tail  string // the last lines
	Whole string // the whole file, when it fits; "" when cut
	Cut   bool   // larger than maxEmbed: Whole holds its end
	Lines []string
	Size  int64
}

type diff struct {
	Task   string
	Left   string // "variant" or "run A variant"
	Right  string
	From   string // outcomes
	To     string
	LeftA  string // anchors
	RightA string
}

func load(dir string) (*run, error) {
	rec, rs, err := results.LoadResults(dir)
	if err != nil {
		return nil, err
	}
	rep, err := results.LoadReport(dir)
	if err != nil {
		return nil, err
	}
	r := &run{Rec: rec, Dir: dir, Variants: rep.Variants, Missing: rep.Missing}
	ran := map[string]bool{}
	for _, res := range rs {
		ran[res.Variant] = true
	}
	// A finished run's variant without a trial is one no task needed
	// (task verify's checks that apply to some tasks only): it is left
	// out, not drawn as an empty column. An interrupted run keeps it:
	// that nothing of it ran is the news.
	keep := func(name string) bool { return ran[name] || rec.Status == results.StatusInterrupted }
	r.Variants = slices.DeleteFunc(slices.Clone(r.Variants), func(v results.VariantStats) bool { return !keep(v.Variant) })
	for _, v := range rec.Config.Variants {
		if keep(v.Name) {
			r.Columns = append(r.Columns, v.Name)
		}
	}
	taskIdx := map[string]int{}
	for _, res := range rs {
		if _, ok := taskIdx[res.TaskID]; !ok {
			taskIdx[res.TaskID] = len(r.Tasks)
			r.Tasks = append(r.Tasks, res.TaskID)
		}
		if !slices.Contains(r.Columns, res.Variant) {
			r.Columns = append(r.Columns, res.Variant)
		}
	}
	r.Cells = make([][]cellSet, len(r.Tasks))
	for i := range r.Cells {
		r.Cells[i] = make([]cellSet, len(r.Columns))
	}
	budget := int64(pageBudget)
	for _, res := range rs {
		t := newTrial(dir, res, &budget)
		r.Trials = append(r.Trials, t)
		col := slices.Index(r.Columns, res.Variant)
		row := taskIdx[res.TaskID]
		r.Cells[row][col] = append(r.Cells[row][col], t)
	}
	for _, row := range r.Cells {
		for _, c := range row {
			sort.Slice(c, func(i, j int) bool { return c[i].R.Attempt < c[j].R.Attempt })
		}
	}
	return r, nil
}

func newTrial(dir string, res *results.Result, budget *int64) *trial {
	t := &trial{R: res, Anchor: "t-" + res.Trial, Class: "o-" + string(res.Outcome)}
	if res.Cached {
		t.Marks = append(t.Marks, "cached")
	}
	if res.Tries > 1 {
		t.Marks = append(t.Marks, fmt.Sprintf("retried ×%d", res.Tries-1))
	}
	if len(res.Tamper) > 0 {
		t.Marks = append(t.Marks, "tamper")
	}
	switch {
	case res.Expectation != nil && !*res.Expectation:
		t.Marks = append(t.Marks, "unexpected")
	case res.Expectation != nil && res.Outcome != grader.OutcomePassed:
		// The variant expects this failure (a nop, task verify's empty
		// attempt): drawn apart from a failure that is news.
		t.Class += " expected"
		t.Marks = append(t.Marks, "expected")
	}
	if !res.Started.IsZero() && res.Finished.After(res.Started) {
		t.Duration = res.Finished.Sub(res.Started).Seconds()
		for _, p := range res.Phases {
			if p.End.Before(p.Start) {
				continue
			}
			name := p.Name
			if p.Step != "" {
				name += " (" + p.Step + ")"
			}
			t.Timeline = append(t.Timeline, bar{Name: name, Seconds: p.End.Sub(p.Start).Seconds(),
				Left:  100 * p.Start.Sub(res.Started).Seconds() / t.Duration,
				Width: max(0.5, 100*p.End.Sub(p.Start).Seconds()/t.Duration)})
		}
		at := func(when time.Time) float64 {
			return min(100, max(0, 100*when.Sub(res.Started).Seconds()/t.Duration))
		}
		for _, x := range res.Questions {
			if !x.At.IsZero() {
				t.Asked = append(t.Asked, mark{Left: at(x.At), Title: fmt.Sprintf("asked %q, told %q", x.Question, x.Reply)})
			}
		}
		if n := res.NeedsInput; n != nil && !n.At.IsZero() {
			t.Asked = append(t.Asked, mark{Left: at(n.At), Title: fmt.Sprintf("asked %q: needs input (%s)", n.Question, n.Reason), Open: true})
		}
	}
	tdir := filepath.Join(dir, res.Trial)
	t.Diff = readText(dir, tdir, results.DiffPatch, budget)
	for _, name := range []string{results.GraderLog, results.AgentLog, "verifier/test-stdout.txt", "logs/verifier/test-stdout.txt", results.BuildLog} {
		if x := readText(dir, tdir, name, budget); x != nil {
			t.Logs = append(t.Logs, x)
		}
	}
	return t
}

// readText reads a trial's file for the page; nil when it is missing or
// empty. What it holds whole comes out of budget; once that is spent, a
// file is its last lines and a link.
func readText(runDir, tdir, name string, budget *int64) *text {
	path := filepath.Join(tdir, filepath.FromSlash(name))
	info, err := os.Stat(path)
	if err != nil || !info.Mode().IsRegular() || info.Size() == 0 {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	x := &text{Name: name, Size: info.Size()}
	if rel, err := filepath.Rel(runDir, path); err == nil {
		x.Path = filepath.ToSlash(rel)
	}
	var data []byte
	if limit := min(maxEmbed, max(*budget, 4<<10)); info.Size() > limit {
		x.Cut = true
		data = make([]byte, limit)
		if _, err := f.ReadAt(data, info.Size()-limit); err != nil && err != io.EOF {
			return nil
		}
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	} else if data, err = io.ReadAll(f); err != nil {
		return nil
	}
	*budget -= int64(len(data))
	// Logs are text: a file written by a task's own scripts (Harbor's
	// test-stdout.txt) may still hold terminal escapes.
	s := strings.ToValidUTF8(itext.StripANSI(string(data)), "\uFFFD")
	x.Whole = s
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	x.Lines = lines
	if len(lines) > tailLines {
		lines = lines[len(lines)-tailLines:]
	}
	x.Tail = strings.Join(lines, "\n")
	return x
}

// outcomeOf is a cell's outcome for comparisons: its first attempt's.
func outcomeOf(c cellSet) (string, string) {
	if len(c) == 0 {
		return "", ""
	}
	return string(c[0].R.Outcome), c[0].Anchor
}

// compareVariants lists, for each task, the variants whose outcome differs
// from the first variant's.
func compareVariants(r *run) []diff {
	var out []diff
	if len(r.Columns) < 2 {
		return nil
	}
	for i, task := range r.Tasks {
		base, baseA := outcomeOf(r.Cells[i][0])
		for j := 1; j < len(r.Columns); j++ {
			o, a := outcomeOf(r.Cells[i][j])
			if base != "" && o != "" && o != base {
				out = append(out, diff{Task: task, Left: r.Columns[0], Right: r.Columns[j], From: base, To: o, LeftA: baseA, RightA: a})
			}
		}
	}
	return out
}

// compareRuns lists the task and variant pairs whose outcome differs
// between two runs.
func compareRuns(a, b *run) []diff {
	var out []diff
	for i, task := range a.Tasks {
		bi := slices.Index(b.Tasks, task)
		if bi < 0 {
			continue
		}
		for j, v := range a.Columns {
			bj := slices.Index(b.Columns, v)
			if bj < 0 {
				continue
			}
			oa, aa := outcomeOf(a.Cells[i][j])
			ob, _ := outcomeOf(b.Cells[bi][bj])
			if oa != "" && ob != "" && oa != ob {
				out = append(out, diff{Task: task, Left: b.Rec.RunID + " " + v, Right: a.Rec.RunID + " " + v, From: ob, To: oa, RightA: aa})
			}
		}
	}
	return out
}

func pct(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100**p)
}

func rewardText(r *results.Result) string {
	if r.Reward == nil {
		if r.RewardError != nil {
			return "none (" + r.RewardError.Kind + ")"
		}
		return "none"
	}
	s := fmt.Sprintf("%.3g", *r.Reward)
	if len(r.Rewards) > 1 {
		var keys []string
		for _, k := range slices.Sorted(mapKeys(r.Rewards)) {
			keys = append(keys, fmt.Sprintf("%s=%.3g", k, r.Rewards[k]))
		}
		s += " (" + strings.Join(keys, ", ") + ")"
	}
	return s
}

func mapKeys(m map[string]float64) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
