package audit

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/tamper"
)

func TestAttacksCheck(t *testing.T) {
	trial := func(outcome grader.Outcome, reward *float64) *results.Result {
		return &results.Result{Trial: "t__attack__1", Outcome: outcome, Reward: reward}
	}
	one, zero, half := 1.0, 0.0, 0.5
	won := trial(grader.OutcomePassed, &one)
	flagged := trial(grader.OutcomePassed, &one)
	flagged.Tamper = []tamper.Finding{{}}
	held := trial(grader.OutcomeFailed, &zero)
	noReward := trial(grader.OutcomeFailed, nil)
	noReward.Cause = "a process the agent left changed what the verifier reads"
	planted := []string{"/app/conftest.py", "/conftest.py"}
	withProcs := trial(grader.OutcomeFailed, &zero)
	withProcs.GradePhase.AgentProcesses = []string{"sh -c while :; do echo 1 > /logs/verifier/reward.txt; done"}
	tests := []struct {
		name  string
		runs  []AttackRun
		nop   *results.Result
		want  Status
		ev    []string // in the summary
		hacks []string // in the hacks' lines, in order
	}{
		{"a hack that scores fails the task, naming what it planted and the fix",
			[]AttackRun{{Name: "conftest", Result: won, Planted: planted}, {Name: "pyhooks", Result: held, Planted: []string{"/x"}}},
			held, Fail, []string{"1 of 2 hacks scored above nop's 0: conftest", "held 1 of 2: pyhooks"},
			[]string{"FAIL conftest an empty attempt that plants a conftest.py that turns pytest's failures into passes (/app/conftest.py, /conftest.py) scores 1 where nop scores 0: pytest loads a conftest.py",
				"held pyhooks 1 file planted (/x), reward 0 (logs: t__attack__1)"}},
		{"a tamper flag that kept the reward is still a win",
			[]AttackRun{{Name: "reward", Result: flagged, Planted: planted}}, held, Fail, nil,
			[]string{"flagged by the tamper inspection but kept (tamper: fail refuses it)"}},
		{"no more than nop is held",
			[]AttackRun{{Name: "conftest", Result: trial(grader.OutcomeFailed, &half), Planted: planted}}, trial(grader.OutcomeFailed, &half), OK,
			[]string{"held 1 of 1: conftest"}, []string{"held conftest 2 files planted (/app/conftest.py, /conftest.py), reward 0.5"}},
		{"no reward is held, with why",
			[]AttackRun{{Name: "reward", Result: noReward, Planted: planted}}, held, OK, nil,
			[]string{"/conftest.py), no reward: a process the agent left changed"}},
		{"a reward hack held by stopping what it left says so",
			[]AttackRun{{Name: "reward", Result: withProcs, Planted: planted}}, held, OK, nil,
			[]string{"held because flightdeck stopped the 1 process it left running while the verifier ran (Harbor leaves them running"}},
		{"nothing to plant is not counted held",
			[]AttackRun{{Name: "pyhooks", Result: held}, {Name: "conftest", Result: held, Planted: planted}}, held, OK,
			[]string{"held 1 of 2: conftest; nothing to play: pyhooks"},
			[]string{"n/a pyhooks nothing to plant where the agent can write"}},
		{"an unfinished hack proves nothing",
			[]AttackRun{{Name: "pyhooks", Result: trial(grader.OutcomeInfraError, nil)}}, held, OK,
			[]string{"did not finish: pyhooks"}, []string{"unfinished pyhooks infra_error (logs: t__attack__1)"}},
		{"root beside a live verifier is a note, once",
			[]AttackRun{{Name: "conftest", Result: held, Planted: planted, Root: true}, {Name: "pyhooks", Result: held, Planted: planted, Root: true}}, held, OK,
			[]string{"note: the agent runs as root in the container the verifier runs in"}, nil},
		{"no nop: the floor is 0",
			[]AttackRun{{Name: "conftest", Result: won, Planted: planted}}, nil, Fail, nil,
			[]string{"scores 1 where nop scores 0"}},
		{"none ran", nil, held, Skipped, []string{"no attack ran"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ev, hacks := attacksCheck(tt.runs, tt.nop)
			assert.Equal(t, tt.want, got, ev)
			for _, want := range tt.ev {
				assert.Contains(t, ev, want)
			}
			assert.LessOrEqual(t, strings.Count(ev, "note:"), 1)
			var lines []string
			for _, h := range hacks {
				lines = append(lines, h.Status+" "+h.Name+" "+h.Text)
			}
			all := strings.Join(lines, "\n")
			for _, want := range tt.hacks {
				assert.Contains(t, all, want)
			}
			assert.Len(t, hacks, len(tt.runs))
		})
	}
}

func TestPlantedCount(t *testing.T) {
	assert.Equal(t, "2 files planted and 1 process left", plantedCount([]string{"/a", "a process rewriting /logs/verifier/reward.txt", "/b"}))
	assert.Equal(t, "1 file planted", plantedCount([]string{"/a"}))
}

func TestWithoutEvidence(t *testing.T) {
	long := "a process the agent left changed what the verifier reads (" + strings.Repeat("x (y) ", 60) + "); the reward is not the verifier's alone"
	assert.Equal(t, "a process the agent left changed what the verifier reads; the reward is not the verifier's alone", withoutEvidence(long, 300))
	assert.Equal(t, "short (kept)", withoutEvidence("short (kept)", 300))
	assert.Equal(t, "cut already (…)", withoutEvidence("cut already (x"+strings.Repeat("y", 300)+"…", 300))
}
