package results

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/flightdeck/flightdeck/grader"
)

func TestDelta(t *testing.T) {
	one, zero, half := 1.0, 0.0, 0.5
	src := func(r *float64) *Source { return &Source{Action: "regrade", Reward: r, Outcome: "passed"} }
	rs := []*Result{
		{Trial: "a", Outcome: grader.OutcomeFailed, Reward: &zero, RegradedFrom: src(&one)}, // down
		{Trial: "b", Outcome: grader.OutcomePassed, Reward: &one, RegradedFrom: src(&one)},  // same
		{Trial: "c", Outcome: grader.OutcomeFailed, Reward: &half, RegradedFrom: src(nil)},  // up from none
		{Trial: "d", Outcome: grader.OutcomeFailed, RegradedFrom: src(&zero)},               // 0 → none: changed, neither way
		{Trial: "e", Outcome: grader.OutcomeRefused, RegradedFrom: src(&one)},               // refused: left out
		{Trial: "f", Outcome: grader.OutcomePassed, Reward: &one},                           // not a regrade
	}
	d := Delta(rs)
	assert.Equal(t, 4, d.Trials)
	assert.Equal(t, 3, d.Changed)
	assert.Equal(t, 1, d.Up)
	assert.Equal(t, 1, d.Down)
	assert.InDelta(t, 0.5, d.MeanBefore, 1e-9)
	assert.InDelta(t, 0.375, d.MeanAfter, 1e-9)
	var buf bytes.Buffer
	WriteDelta(&buf, d)
	assert.Contains(t, buf.String(), "Regrade delta over 4 trial(s): 3 changed (1 up, 1 down), mean reward 0.500 → 0.375\n")
	assert.Contains(t, buf.String(), "not in the delta: 1 trial refused or ended without a grade")
	assert.Regexp(t, `(?m)^a +passed 1 +failed 0$`, buf.String())
	assert.Regexp(t, `(?m)^d +passed 0 +failed, no reward$`, buf.String())
	assert.NotContains(t, buf.String(), "\nb ")
	assert.NotContains(t, buf.String(), "rebuilt", "no trial was graded in a rebuilt work dir")

	rs[1].RegradedFrom.Reproduced = ReproducedWorkdir
	buf.Reset()
	WriteDelta(&buf, Delta(rs))
	assert.Contains(t, buf.String(), "graded in a work dir rebuilt from the recorded diff.patch: 1 trial; only the work dir is reproduced")

	buf.Reset()
	WriteDelta(&buf, Delta(rs[4:5]))
	assert.Equal(t, "\nNothing was regraded: every trial was refused or ended without a grade (the summary above says why)\n", buf.String(), "no delta over nothing")
}

// A trial that passed where its variant expects a failure is listed with
// why that is the finding; one that failed, with its error.
func TestWriteReasonsOfExpectations(t *testing.T) {
	var buf bytes.Buffer
	writeReasons(&buf, []TrialLine{
		{Trial: "t__nop__1", Outcome: grader.OutcomePassed},
		{Trial: "t__oracle__1", Outcome: grader.OutcomeFailed, Cause: "AssertionError: 41 != 42"},
		{Trial: "t__other__1", Outcome: grader.OutcomeFailed, Cause: "not listed"},
	}, []string{"t__nop__1", "t__oracle__1"})
	out := buf.String()
	assert.Contains(t, out, "  t__nop__1  passed, where its variant expects failed: it got the reward without the work a pass needs (for nop, the empty attempt: the tests are weak)\n")
	assert.Contains(t, out, "  t__oracle__1  failed: AssertionError: 41 != 42\n")
	assert.NotContains(t, out, "not listed")
}
