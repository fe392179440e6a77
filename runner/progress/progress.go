// Package progress reports a run as it goes (Progress).
package progress

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/text"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
)

// Progress reports a run as it goes: one line per event; on a terminal
// also a live status block under them (trials done, passed, failed, infra
// errors, an estimate of the time left, and each trial running with its
// phase and elapsed time), redrawn as things change and every second.
type Progress struct {
	mu      sync.Mutex
	w       io.Writer
	tty     bool
	Width   func() int // the terminal's columns (tty); nil: 100
	total   int
	settled int
	running map[string]string // trial → phase
	started map[string]time.Time
	lines   int // lines of the status block on screen
	// Counts and the finished trials' times, for the block.
	passed, failed, errors int
	ran                    []time.Duration
	jobs                   int // trials at once, for the estimate
	stop                   chan struct{}
	// Quiet leaves out the run's and the trials' own lines (a shell's
	// run): what is printed is notes, image builds and problems.
	Quiet bool
}

func New(w io.Writer, tty bool, total int) *Progress {
	if w == nil {
		w = io.Discard
	}
	return &Progress{w: w, tty: tty, total: total, running: map[string]string{}, started: map[string]time.Time{}, jobs: 1}
}

// SetJobs says how many trials run at once, for the estimate of the
// time left.
func (p *Progress) SetJobs(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.jobs = max(1, n)
}

// Tick redraws the block every second until done, so that the elapsed
// times move while nothing else happens.
func (p *Progress) Tick() {
	if !p.tty || p.stop != nil {
		return
	}
	p.stop = make(chan struct{})
	go func(stop chan struct{}) {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				p.mu.Lock()
				if len(p.running) > 0 {
					p.emit("")
				}
				p.mu.Unlock()
			}
		}
	}(p.stop)
}

// emit prints a permanent line and redraws the status block.
func (p *Progress) emit(line string) {
	if p.lines > 0 {
		// Up to the block's first line, and clear to the end of the screen.
		if p.lines > 1 {
			fmt.Fprintf(p.w, "\033[%dA", p.lines-1)
		}
		fmt.Fprint(p.w, "\r\033[J")
		p.lines = 0
	}
	if line != "" {
		fmt.Fprintln(p.w, line)
	}
	if p.tty && len(p.running) > 0 {
		block := p.block()
		fmt.Fprint(p.w, strings.Join(block, "\n"))
		p.lines = len(block)
	}
}

// maxRunningLines bounds the trials the block lists one per line.
const maxRunningLines = 12

// block is the status block: a summary line, then the trials running.
func (p *Progress) block() []string {
	width := 100
	if p.Width != nil {
		if w := p.Width(); w > 20 {
			width = w
		}
	}
	cut := func(s string) string {
		if r := []rune(s); len(r) > width-1 {
			return string(r[:width-2]) + "…"
		}
		return s
	}
	head := fmt.Sprintf("[%d/%d] passed %d · failed %d · infra errors %d · running %d", p.settled, p.total,
		p.passed, p.failed, p.errors, len(p.running))
	if eta, ok := p.eta(); ok {
		head += " · about " + eta.Round(time.Second).String() + " left"
	}
	out := []string{cut(head)}
	ids := slices.SortedFunc(maps.Keys(p.running), func(a, b string) int { return p.started[a].Compare(p.started[b]) })
	for i, id := range ids {
		if i == maxRunningLines {
			out = append(out, fmt.Sprintf("  … and %d more", len(ids)-i))
			break
		}
		out = append(out, cut(fmt.Sprintf("  %-10s %6.1fs  %s", p.running[id], time.Since(p.started[id]).Seconds(), id)))
	}
	return out
}

// eta estimates the time left from the finished trials' mean duration and
// the trials at once; none before a trial has finished.
func (p *Progress) eta() (time.Duration, bool) {
	if len(p.ran) == 0 {
		return 0, false
	}
	var sum time.Duration
	for _, d := range p.ran {
		sum += d
	}
	mean := sum / time.Duration(len(p.ran))
	left := p.total - p.settled
	jobs := max(1, min(p.jobs, left))
	var elapsed time.Duration
	for _, st := range p.started {
		elapsed += time.Since(st)
	}
	est := time.Duration(left)*mean/time.Duration(jobs) - elapsed/time.Duration(jobs)
	return max(est, 0), true
}

func (p *Progress) Line(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.emit(s)
}

func (p *Progress) Start(t *suite.Trial) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running[t.ID] = "starting"
	p.started[t.ID] = time.Now()
	if !p.Quiet {
		p.emit(fmt.Sprintf("start    %s", t.ID))
	}
}

func (p *Progress) phase(t *suite.Trial, phase string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running[t.ID] = phase
	if p.tty {
		p.emit("")
	}
}

func (p *Progress) note(t *suite.Trial, msg string) {
	p.Line(fmt.Sprintf("         %s: %s", t.ID, msg))
}

func (p *Progress) Retry(t *suite.Trial, why string) {
	p.Line(fmt.Sprintf("retry    %s: infra_error: %s", t.ID, why))
}

func (p *Progress) Interrupted(t *suite.Trial) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.running, t.ID)
	delete(p.started, t.ID)
	if !p.Quiet {
		p.emit(fmt.Sprintf("stopped  %s: interrupted, no result", t.ID))
	}
}

func (p *Progress) Finished(t *suite.Trial, r *results.Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.running, t.ID)
	p.settled++
	p.count(r)
	ran := time.Since(p.started[t.ID])
	delete(p.started, t.ID)
	p.ran = append(p.ran, ran)
	took := ran.Round(100 * time.Millisecond)
	if p.Quiet {
		return
	}
	p.emit(fmt.Sprintf("%-8s %s  %s  %s%s%s", r.Outcome, t.ID, results.RewardText(r), took, results.ExpectText(r), results.SubstituteText(r)))
}

func (p *Progress) Cached(t *suite.Trial, r *results.Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.settled++
	p.count(r)
	p.emit(fmt.Sprintf("cached   %s  %s %s%s%s", t.ID, r.Outcome, results.RewardText(r), results.ExpectText(r), results.SubstituteText(r)))
}

func (p *Progress) Kept(t *suite.Trial, r *results.Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.settled++
	p.count(r)
	p.emit(fmt.Sprintf("kept     %s  %s %s", t.ID, r.Outcome, results.RewardText(r)))
}

func (p *Progress) Refused(t *suite.Trial, r *results.Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.settled++
	p.emit(fmt.Sprintf("refused  %s  %s", t.ID, text.OneLine(r.Refusal.String(), 600)))
}

// count adds a settled trial to the block's counts.
func (p *Progress) count(r *results.Result) {
	switch r.Outcome {
	case grader.OutcomePassed:
		p.passed++
	case grader.OutcomeInfraError, grader.OutcomeTaskError:
		p.errors++
	case grader.OutcomeRefused, grader.OutcomeNeedsInput:
	default:
		p.failed++
	}
}

func (p *Progress) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stop != nil {
		close(p.stop)
		p.stop = nil
	}
	p.running = map[string]string{}
	p.emit("")
}

// Phase and Note are the trials' Reporter (trial.Reporter).
func (p *Progress) Phase(t *suite.Trial, phase string) { p.phase(t, phase) }
func (p *Progress) Note(t *suite.Trial, msg string)    { p.note(t, msg) }
