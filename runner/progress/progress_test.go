package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
)

// On a terminal, the finished lines scroll above a status block that
// counts the outcomes, estimates the time left and lists the trials
// running with their phases; it is redrawn in place (cursor up, clear).
// Elsewhere the lines are the only output.
func TestProgressStatusBlock(t *testing.T) {
	var buf bytes.Buffer
	p := New(&buf, true, 4)
	p.Width = func() int { return 90 }
	p.jobs = 2
	a, b, c := &suite.Trial{ID: "task-a__oracle__1"}, &suite.Trial{ID: "task-b__oracle__1"}, &suite.Trial{ID: "task-c-" + strings.Repeat("long-", 20) + "_oracle__1"}
	p.Start(a)
	p.Start(b)
	p.phase(b, "grade")
	p.started[a.ID] = time.Now().Add(-10 * time.Second)
	p.Finished(a, &results.Result{Outcome: grader.OutcomePassed})
	p.Start(c)
	p.Cached(&suite.Trial{ID: "task-d__nop__1"}, &results.Result{Outcome: grader.OutcomeFailed})
	out := buf.String()
	screen := out[strings.LastIndex(out, "\033[J")+len("\033[J"):]
	lines := strings.Split(screen, "\n")
	assert.Equal(t, "cached   task-d__nop__1  failed reward -", lines[0], "the finished line first")
	assert.Regexp(t, `^\[2/4\] passed 1 · failed 1 · infra errors 0 · running 2 · about \d+s left$`, lines[1])
	assert.Regexp(t, `^  grade +\d+\.\ds  task-b__oracle__1$`, lines[2])
	assert.Regexp(t, `^  starting +\d+\.\ds  task-c-long-long-.*…$`, lines[3], "cut to the terminal's width")
	assert.Equal(t, 89, len([]rune(lines[3])))
	assert.Contains(t, out, "\033[2A\r\033[J", "the three-line block is replaced in place")
	p.Done()
	assert.True(t, strings.HasSuffix(buf.String(), "\033[J"), "done clears the block")

	buf.Reset()
	plain := New(&buf, false, 2)
	plain.Start(a)
	plain.phase(a, "agent")
	plain.Finished(a, &results.Result{Outcome: grader.OutcomePassed})
	plain.Done()
	assert.NotContains(t, buf.String(), "\033", "no control codes off a terminal")
	assert.Equal(t, 2, strings.Count(buf.String(), "\n"), "a start line and a finished line")
}
