package results

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/testenv"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/runner/tamper"
)

var update = flag.Bool("update", false, "rewrite golden files from what the code produces")

// golden compares got with testdata/name, rewriting it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	testenv.Golden(t, filepath.Join("testdata", name), []byte(got), *update)
}

func reward(v float64) *float64 { return &v }

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// sampleResults: two tasks, two variants, two attempts; the variants differ
// only in an infra error.
func sampleResults() []*Result {
	mk := func(task, variant string, attempt int, outcome grader.Outcome, r *float64) *Result {
		res := &Result{Schema: ResultSchema, RunID: "run", Trial: trialID(task, variant, attempt), TaskID: task,
			Variant: variant, Attempt: attempt, Outcome: outcome, Reward: r,
			Started: t0, Finished: t0.Add(time.Duration(attempt) * time.Second)}
		switch outcome {
		case grader.OutcomeInfraError:
			res.OutcomeClass, res.Error = grader.SpecInfraError, "engine went away"
		case grader.OutcomePassed:
			res.OutcomeClass = grader.SpecPassed
		default:
			res.OutcomeClass = grader.SpecProduct
		}
		return res
	}
	return []*Result{
		mk("a", "base", 1, grader.OutcomePassed, reward(1)),
		mk("a", "base", 2, grader.OutcomeFailed, reward(0)),
		mk("b", "base", 1, grader.OutcomeFailed, reward(0.5)),
		mk("b", "base", 2, grader.OutcomeFailed, reward(0)),
		mk("a", "treat", 1, grader.OutcomePassed, reward(1)),
		mk("a", "treat", 2, grader.OutcomeFailed, reward(0)),
		mk("b", "treat", 1, grader.OutcomeFailed, reward(0.5)),
		mk("b", "treat", 2, grader.OutcomeFailed, reward(0)),
		mk("b", "treat", 3, grader.OutcomeInfraError, nil),
	}
}

func TestStatsLeaveInfraErrorsOut(t *testing.T) {
	variants := []suite.Variant{{Name: "base", Agent: suite.AgentNop}, {Name: "treat", Agent: suite.AgentNop}}
	st := computeStats(variants, 2, sampleResults())
	require.Len(t, st, 2)
	base, treat := st[0], st[1]
	assert.Equal(t, 4, base.Trials)
	assert.Equal(t, 5, treat.Trials)
	assert.Equal(t, 1, treat.Errors)
	assert.Equal(t, base.Graded, treat.Graded)
	assert.Equal(t, *base.PassRate, *treat.PassRate, "variants that differ only in infra errors have equal rates")
	assert.Equal(t, *base.MeanReward, *treat.MeanReward)
	assert.Equal(t, base.PassAtK, treat.PassAtK)
	assert.InDelta(t, 0.25, *base.PassRate, 1e-9)
	assert.InDelta(t, 0.375, *base.MeanReward, 1e-9)
	assert.InDelta(t, 0.25, base.PassAtK["pass@1"], 1e-9, "a: 1 of 2, b: 0 of 2")
	assert.InDelta(t, 0.5, base.PassAtK["pass@2"], 1e-9, "a passed once in 2, b never")
	assert.Equal(t, map[string]int{"passed": 1, "product": 3}, base.Classes)
}

func TestPassAtK(t *testing.T) {
	per := map[string][2]int{"x": {5, 2}, "y": {1, 1}}
	p, ok := passAtK(1, []string{"x", "y"}, per)
	require.True(t, ok)
	assert.InDelta(t, (0.4+1)/2, p, 1e-6)
	p, ok = passAtK(3, []string{"x", "y"}, per)
	require.True(t, ok, "y has too few attempts for k=3 and is left out")
	assert.InDelta(t, 1-1.0/10, p, 1e-6)
	_, ok = passAtK(9, []string{"x"}, per)
	assert.False(t, ok)
}

func TestExitCodeOrder(t *testing.T) {
	tests := []struct {
		expectation, task, infra bool
		want                     int
	}{
		{false, false, false, ExitOK},
		{true, true, true, ExitExpectation},
		{false, true, true, ExitTask},
		{false, false, true, ExitInfra},
		{true, false, false, ExitExpectation},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, ExitCode(tt.expectation, tt.task, tt.infra), "%+v", tt)
	}
}

func TestSetExpectationUngraded(t *testing.T) {
	for _, o := range []grader.Outcome{grader.OutcomeInfraError, grader.OutcomeTaskError, grader.OutcomeRefused} {
		r := &Result{Outcome: o}
		SetExpectation(r, suite.Variant{Expect: suite.ExpectPassed})
		assert.Nil(t, r.Expectation, "%s is held to no expectation", o)
	}
	r := &Result{Outcome: grader.OutcomeAgentTimeout}
	SetExpectation(r, suite.Variant{Expect: suite.ExpectFailed})
	require.NotNil(t, r.Expectation)
	assert.True(t, *r.Expectation, "a timed-out agent fails as nop must")
}

func TestResumeCommand(t *testing.T) {
	cwd := t.TempDir()
	rec := &RunRecord{RunID: "20260101-000000-abcdef", Dir: filepath.Join(cwd, "results", "20260101-000000-abcdef")}
	assert.Equal(t, "flightdeck run --resume 20260101-000000-abcdef", ResumeCommand(rec, cwd))
	rec.Dir = filepath.Join(cwd, "out", "my runs", "20260101-000000-abcdef")
	assert.Equal(t, "flightdeck run --resume 20260101-000000-abcdef --results 'out/my runs'", ResumeCommand(rec, cwd))
	rec.Dir = "/elsewhere/res/20260101-000000-abcdef"
	assert.Equal(t, "flightdeck run --resume 20260101-000000-abcdef --results /elsewhere/res", ResumeCommand(rec, cwd))
}

func TestFillRecordExitCode(t *testing.T) {
	variants := []suite.Variant{{Name: "base", Agent: suite.AgentNop}, {Name: "treat", Agent: suite.AgentNop}}
	rec := &RunRecord{}
	FillRecord(rec, variants, 2, sampleResults())
	assert.Equal(t, ExitInfra, rec.ExitCode, "an infra error fails the run")
	assert.Len(t, rec.Trials, 9)

	ok := sampleResults()[:4]
	rec = &RunRecord{}
	FillRecord(rec, variants, 2, ok)
	assert.Equal(t, 0, rec.ExitCode, "failed trials without expectations do not")

	held := false
	ok[0].Expect, ok[0].Expectation = suite.ExpectFailed, &held
	FillRecord(rec, variants, 2, ok)
	assert.Equal(t, ExitExpectation, rec.ExitCode, "a failed expectation does")
	assert.Equal(t, []string{"a__base__1"}, rec.Expectations)

	rec = &RunRecord{}
	FillRecord(rec, variants, 2, append(sampleResults()[:4], refusedSample()...))
	assert.Equal(t, ExitTask, rec.ExitCode, "a refused task does")
	require.Len(t, rec.Refused, 1, "listed once however many trials it has")
	assert.Equal(t, suite.RefusedTask{ID: "c", Dir: "/tasks/c", Refusal: suite.Refusal{File: "/tasks/c/task.toml", Field: "[[steps]]", Rule: "multi-step tasks are not supported yet"}},
		rec.Refused[0])
}

// refusedSample: task c, refused, under both variants.
func refusedSample() []*Result {
	var out []*Result
	for _, v := range []string{"base", "treat"} {
		out = append(out, &Result{Schema: ResultSchema, RunID: "run", Trial: trialID("c", v, 1), TaskID: "c", TaskDir: "/tasks/c",
			Variant: v, Attempt: 1, Outcome: grader.OutcomeRefused, OutcomeClass: grader.SpecRefused, Started: t0, Finished: t0,
			Error:   "refused: /tasks/c/task.toml: [[steps]]: multi-step tasks are not supported yet",
			Refusal: &suite.Refusal{File: "/tasks/c/task.toml", Field: "[[steps]]", Rule: "multi-step tasks are not supported yet"}})
	}
	return out
}

// goldenResults: sampleResults, a refused task, and a trial whose reward
// file has several keys.
func goldenResults() []*Result {
	results := append(sampleResults(), refusedSample()...)
	results[2].Rewards = map[string]float64{"correctness": 1, "performance": 0.5}
	results[4].Tamper = []tamper.Finding{{Path: "/usr/bin/python3", Kind: tamper.KindTool, Evidence: "replaced"},
		{Path: "/root/.bashrc", Kind: tamper.KindShellStartup, Evidence: "changed"}}
	results[0].MappedImages = []string{"python:3.12-slim=flightdeck/base:bookworm"}
	results[1].Cause = "failing tests: test_parse; AssertionError: 3 != 4 (/results/run/a__base__2/grader.log)"
	defect := *results[3]
	defect.Trial, defect.Attempt, defect.Outcome, defect.OutcomeClass, defect.Reward = "b__base__3", 3, grader.OutcomeTaskError, grader.SpecTaskError, nil
	defect.Error = "task error: tests/test.sh wrote reward.txt, which does not parse: \"abc\" is not a number"
	return append(results, &defect)
}

func TestStatsLeaveRefusedOut(t *testing.T) {
	variants := []suite.Variant{{Name: "base", Agent: suite.AgentNop}, {Name: "treat", Agent: suite.AgentNop}}
	plain := computeStats(variants, 2, sampleResults())
	with := computeStats(variants, 2, append(sampleResults(), refusedSample()...))
	for i := range variants {
		assert.Equal(t, plain[i].Trials+1, with[i].Trials)
		assert.Equal(t, 1, with[i].Refused)
		assert.Equal(t, plain[i].Graded, with[i].Graded, "a refused trial is not graded")
		assert.Equal(t, *plain[i].PassRate, *with[i].PassRate)
		assert.Equal(t, *plain[i].MeanReward, *with[i].MeanReward)
		assert.Equal(t, plain[i].PassAtK, with[i].PassAtK)
		assert.Equal(t, 1, with[i].Classes["refused"])
	}
}

// Per key of the reward files, the mean over the graded trials that wrote
// the key.
func TestStatsMeanPerRewardKey(t *testing.T) {
	mk := func(outcome grader.Outcome, keys map[string]float64) *Result {
		return &Result{TaskID: "a", Variant: "v", Attempt: 1, Outcome: outcome, Rewards: keys}
	}
	tests := []struct {
		name    string
		results []*Result
		want    map[string]float64
	}{
		{"no keys", []*Result{mk(grader.OutcomeFailed, nil)}, nil},
		{"reward.txt", []*Result{mk(grader.OutcomePassed, map[string]float64{"reward": 1}), mk(grader.OutcomeFailed, map[string]float64{"reward": 0})},
			map[string]float64{"reward": 0.5}},
		{"several keys", []*Result{
			mk(grader.OutcomeFailed, map[string]float64{"correctness": 1, "performance": 0}),
			mk(grader.OutcomePassed, map[string]float64{"correctness": 1, "performance": 1}),
			mk(grader.OutcomeFailed, map[string]float64{"correctness": 0.5}),
			mk(grader.OutcomeFailed, nil),
		}, map[string]float64{"correctness": 2.5 / 3, "performance": 0.5}},
		{"counts are summed, not averaged", []*Result{
			mk(grader.OutcomePassed, map[string]float64{"reward": 1, "passed": 116, "total": 116}),
			mk(grader.OutcomeFailed, map[string]float64{"reward": 0, "passed": 0, "total": 10}),
		}, map[string]float64{"reward": 0.5}},
		{"ungraded trials left out", []*Result{
			mk(grader.OutcomePassed, map[string]float64{"a": 1}),
			mk(grader.OutcomeInfraError, map[string]float64{"a": 0}),
			mk(grader.OutcomeRefused, map[string]float64{"a": 0}),
		}, map[string]float64{"a": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := computeStats([]suite.Variant{{Name: "v"}}, 1, tt.results)
			require.Len(t, st, 1)
			if tt.want == nil {
				assert.Empty(t, st[0].MeanRewards)
				return
			}
			require.Len(t, st[0].MeanRewards, len(tt.want))
			for k, v := range tt.want {
				assert.InDelta(t, v, st[0].MeanRewards[k], 1e-9, k)
			}
			if tt.name == "counts are summed, not averaged" {
				assert.Equal(t, map[string]float64{"passed": 116, "total": 126}, st[0].KeyTotals)
				var buf bytes.Buffer
				writeKeyMeans(&buf, st)
				assert.Contains(t, buf.String(), "  v: reward=0.500; summed (counts, not rewards): passed=116 total=126")
				assert.NotContains(t, buf.String(), "passed=58")
			}
		})
	}
}

// A key's kind is the run's: passed is a count in the oracle's trials
// (116), so nop's passed=0 is a count of 0 too, summed, not averaged as a
// reward.
func TestKeyKindIsTheRuns(t *testing.T) {
	mk := func(variant string, o grader.Outcome, rewards map[string]float64) *Result {
		return &Result{TaskID: "t", Variant: variant, Attempt: 1, Outcome: o, Rewards: rewards}
	}
	st := computeStats([]suite.Variant{{Name: "oracle"}, {Name: "nop"}}, 1, []*Result{
		mk("oracle", grader.OutcomePassed, map[string]float64{"reward": 1, "passed": 116, "total": 116}),
		mk("nop", grader.OutcomeFailed, map[string]float64{"reward": 0, "passed": 0, "total": 0}),
	})
	require.Len(t, st, 2)
	assert.Equal(t, map[string]float64{"passed": 0, "total": 0}, st[1].KeyTotals)
	assert.Equal(t, map[string]float64{"reward": 0}, st[1].MeanRewards)
	var buf bytes.Buffer
	writeKeyMeans(&buf, st)
	assert.Contains(t, buf.String(), "  nop: reward=0.000; summed (counts, not rewards): passed=0 total=0")
}

// A one-trial run has no value above 1 to show a key is a count: the
// RESULT line's passed and total declare it. A key the line does not
// carry, or carries with another value, stays a reward.
func TestKeyKindFromTheResultLine(t *testing.T) {
	tests := []struct {
		name    string
		summary *grader.Summary
		rewards map[string]float64
		totals  map[string]float64
		means   map[string]float64
	}{
		{"counts the line declares", &grader.Summary{Passed: 0, Total: 1},
			map[string]float64{"reward": 0, "passed": 0, "total": 1},
			map[string]float64{"passed": 0, "total": 1}, map[string]float64{"reward": 0}},
		{"no RESULT line", nil,
			map[string]float64{"reward": 0, "passed": 0, "total": 1},
			nil, map[string]float64{"reward": 0, "passed": 0, "total": 1}},
		{"another value than the line's", &grader.Summary{Passed: 3, Total: 4},
			map[string]float64{"reward": 0.75, "passed": 0.75, "total": 1},
			nil, map[string]float64{"reward": 0.75, "passed": 0.75, "total": 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &Result{TaskID: "t", Variant: "oracle", Attempt: 1, Outcome: grader.OutcomeFailed, Rewards: tc.rewards, Summary: tc.summary}
			st := computeStats([]suite.Variant{{Name: "oracle"}}, 1, []*Result{r})
			require.Len(t, st, 1)
			assert.Equal(t, tc.totals, st[0].KeyTotals)
			assert.Equal(t, tc.means, st[0].MeanRewards)
		})
	}
}

func TestSetExpectation(t *testing.T) {
	tests := []struct {
		expect  string
		outcome grader.Outcome
		held    *bool
	}{
		{suite.ExpectPassed, grader.OutcomePassed, ptr(true)},
		{suite.ExpectPassed, grader.OutcomeFailed, ptr(false)},
		{suite.ExpectFailed, grader.OutcomeFailed, ptr(true)},
		{suite.ExpectFailed, grader.OutcomeAgentTimeout, ptr(true)},
		{suite.ExpectFailed, grader.OutcomePassed, ptr(false)},
		{suite.ExpectFailed, grader.OutcomeInfraError, nil},
		{suite.ExpectPassed, grader.OutcomeTaskError, nil},
		{suite.ExpectPassed, grader.OutcomeRefused, nil},
		{suite.ExpectFailed, grader.OutcomeRefused, nil},
		{"", grader.OutcomeFailed, nil},
	}
	for _, tc := range tests {
		r := &Result{Outcome: tc.outcome}
		SetExpectation(r, suite.Variant{Expect: tc.expect})
		assert.Equal(t, tc.held, r.Expectation, "%s/%s", tc.expect, tc.outcome)
	}
}

func ptr[T any](v T) *T { return &v }

func TestJUnitGolden(t *testing.T) {
	results := goldenResults()
	held := false
	results[1].Expect, results[1].Expectation = suite.ExpectPassed, &held
	results[0].Cached = true
	rec := &RunRecord{RunID: "run", Suite: "sample", Config: suite.Config{Variants: []suite.Variant{{Name: "base"}, {Name: "treat"}}}}
	data, err := junitXML(rec, results)
	require.NoError(t, err)
	golden(t, "junit.golden.xml", string(data))
}

func TestSummaryGolden(t *testing.T) {
	rec := &RunRecord{RunID: "run", Dir: "/results/run", Suite: "sample",
		FallbackImages: []string{"python:3.12-slim=flightdeck/base:bookworm"},
		Images:         &ImageBudget{Budget: 20 << 30, Before: 21 << 30, After: 19 << 30, Freed: 2 << 30, Evicted: []string{"flightdeck/a:1", "flightdeck/b:2"}}}
	variants := []suite.Variant{{Name: "base", Agent: suite.AgentNop}, {Name: "treat", Agent: suite.AgentNop}}
	FillRecord(rec, variants, 2, goldenResults())
	var buf bytes.Buffer
	WriteSummary(&buf, rec)
	golden(t, "summary.golden.txt", buf.String())
}

func TestReadResultRefusesIncomplete(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"torn.json":    `{"schema": 1, "task_id": "a"`,
		"partial.json": `{"schema": 1, "task_id": "a", "variant": "v"}`,
		"old.json":     `{"schema": 0, "task_id": "a", "variant": "v", "attempt": 1, "outcome": "passed"}`,
	} {
		writeTestFile(t, filepath.Join(dir, name), content)
		_, err := ReadResult(filepath.Join(dir, name))
		assert.Error(t, err, name)
	}
}

func TestApplyRewardKey(t *testing.T) {
	keys := map[string]float64{"correctness": 1, "performance": 0}
	tests := []struct {
		name      string
		in        Result
		key       string
		outcome   grader.Outcome
		class     grader.SpecOutcome
		reward    *float64
		errKind   string
		errSubstr string
	}{
		{name: "no key: as graded", in: Result{Outcome: grader.OutcomeFailed, Reward: reward(0), Rewards: keys, RewardSource: "reward.json"},
			outcome: grader.OutcomeFailed, class: "", reward: reward(0)},
		{name: "a passing key passes", in: Result{Outcome: grader.OutcomeFailed, Reward: reward(0), Rewards: keys, RewardSource: "reward.json"},
			key: "correctness", outcome: grader.OutcomePassed, class: grader.SpecPassed, reward: reward(1)},
		{name: "a failing key fails", in: Result{Outcome: grader.OutcomePassed, Reward: reward(1), Rewards: map[string]float64{"reward": 1, "style": 0.25}, RewardSource: "reward.json"},
			key: "style", outcome: grader.OutcomeFailed, class: grader.SpecProduct, reward: reward(0.25)},
		{name: "a missing key fails naming it", in: Result{Outcome: grader.OutcomePassed, Reward: reward(1), Rewards: map[string]float64{"reward": 1}, RewardSource: "reward.txt"},
			key: "correctness", outcome: grader.OutcomeFailed, class: grader.SpecUnavailable, errKind: grader.RewardMissingKey, errSubstr: `"correctness"`},
		{name: "an agent timeout stays one", in: Result{Outcome: grader.OutcomeAgentTimeout, Reward: reward(0), Rewards: keys, RewardSource: "reward.json", Error: "the agent timed out"},
			key: "correctness", outcome: grader.OutcomeAgentTimeout, class: grader.SpecPassed, reward: reward(1)},
		{name: "no reward: left as it is", in: Result{Outcome: grader.OutcomeFailed, OutcomeClass: grader.SpecUnavailable, RewardError: &RewardProblem{Kind: grader.RewardMissing}},
			key: "correctness", outcome: grader.OutcomeFailed, class: grader.SpecUnavailable, errKind: grader.RewardMissing},
		{name: "an infra error: left as it is", in: Result{Outcome: grader.OutcomeInfraError, OutcomeClass: grader.SpecInfraError},
			key: "correctness", outcome: grader.OutcomeInfraError, class: grader.SpecInfraError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.in
			ApplyRewardKey(&r, tt.key, "/run/trial/verifier")
			assert.Equal(t, tt.outcome, r.Outcome)
			assert.Equal(t, tt.class, r.OutcomeClass)
			assert.Equal(t, tt.reward, r.Reward)
			assert.Equal(t, tt.in.Rewards, r.Rewards, "every key stays recorded")
			if tt.errKind == "" {
				assert.Nil(t, r.RewardError)
				return
			}
			require.NotNil(t, r.RewardError)
			assert.Equal(t, tt.errKind, r.RewardError.Kind)
			if tt.errSubstr != "" {
				assert.Contains(t, r.RewardError.Detail, tt.errSubstr)
				assert.Equal(t, filepath.Join("/run/trial/verifier", tt.in.RewardSource), r.RewardError.File)
				assert.Contains(t, r.Error, "no reward: ")
				assert.Contains(t, r.Error, tt.errSubstr)
			}
		})
	}
}

func TestRewardsText(t *testing.T) {
	for _, tt := range []struct {
		in   map[string]float64
		want string
	}{
		{nil, ""},
		{map[string]float64{"reward": 1}, ""},
		{map[string]float64{"score": 0.25}, "[score=0.25]"},
		{map[string]float64{"b": 1, "a": 0.123456}, "[a=0.123 b=1]"},
	} {
		assert.Equal(t, tt.want, rewardsText(tt.in), "%v", tt.in)
	}
}

func TestRewardText(t *testing.T) {
	one, half := 1.0, 0.5
	tests := []struct {
		name string
		r    Result
		want string
	}{
		{"no reward", Result{Outcome: "failed"}, "reward -"},
		{"infra error", Result{Outcome: "infra_error", Error: "engine gone\nmore"}, "error: engine gone more"},
		{"reward only", Result{Outcome: "passed", Reward: &one}, "reward 1"},
		{"with the grader's count", Result{Outcome: "failed", Reward: &half, Summary: &grader.Summary{Passed: 58, Total: 116}}, "reward 0.5 (58/116)"},
		{"an empty count is left out", Result{Outcome: "failed", Reward: &half, Summary: &grader.Summary{}}, "reward 0.5"},
		{"every key", Result{Outcome: "failed", Reward: &half, Rewards: map[string]float64{"style": 1, "correctness": 0.5}}, "reward 0.5 [correctness=0.5 style=1]"},
		{"every key and the count", Result{Outcome: "failed", Reward: &half, Rewards: map[string]float64{"b": 1, "a": 0.5}, Summary: &grader.Summary{Passed: 1, Total: 2}},
			"reward 0.5 [a=0.5 b=1] (1/2)"},
		{"the reward key alone is the reward", Result{Outcome: "passed", Reward: &one, Rewards: map[string]float64{"reward": 1}}, "reward 1"},
		{"the reward key among others", Result{Outcome: "passed", Reward: &one, Rewards: map[string]float64{"reward": 1, "tests": 12}}, "reward 1 [reward=1 tests=12]"},
		{"keys that restate the count are left out", Result{Outcome: "passed", Reward: &one,
			Rewards: map[string]float64{"reward": 1, "passed": 116, "total": 116}, Summary: &grader.Summary{Passed: 116, Total: 116}}, "reward 1 (116/116)"},
		{"why there is no reward", Result{Outcome: "failed", Error: "no reward: tests/test.sh exited 2 without writing reward.json or reward.txt: line 3: syntax error"},
			"no reward: tests/test.sh exited 2 without writing reward.json or reward.txt: line 3: syntax error"},
		{"a task error", Result{Outcome: "task_error", Error: "task error: tests/test.sh wrote reward.txt, which does not parse"},
			"task error: tests/test.sh wrote reward.txt, which does not parse"},
		{"why a graded trial failed", Result{Outcome: "agent_timeout", Reward: &half, Error: "the agent timed out"}, "reward 0.5; the agent timed out"},
		{"refused", Result{Outcome: "refused", Error: "refused: t/task.toml: [[steps]]: multi-step",
			Refusal: &suite.Refusal{File: "t/task.toml", Field: "[[steps]]", Rule: "multi-step\ntasks"}}, "reason: t/task.toml: [[steps]]: multi-step tasks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, RewardText(&tt.r))
		})
	}
}

// A result.json is read whole or refused: whatever the bytes, ReadResult
// does not panic, and what it accepts is complete and reads back the same
// once written again.
func FuzzReadResult(f *testing.F) {
	f.Add([]byte(`{"schema": 1, "task_id": "t", "variant": "v", "attempt": 1, "outcome": "passed"}`))
	f.Add([]byte(`{"schema": 1, "task_id": "t", "variant": "v", "attempt": 0, "outcome": "passed"}`))
	f.Add([]byte(`{"schema": 1, "task_id": "t", "variant": "v", "attempt": 2, "outcome": "failed", "reward": {"value": 0.5}, "started": "2026-01-02T03:04:05+01:00"}`))
	f.Add([]byte(`{"schema": 1`))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), ResultFile)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := ReadResult(path)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("the error does not name the file: %v", err)
			}
			return
		}
		if r.Schema != ResultSchema || r.TaskID == "" || r.Variant == "" || r.Attempt < 1 || r.Outcome == "" {
			t.Fatalf("accepted an incomplete result: %+v", r)
		}
		roundTrip(t, r, path, func(p string) (any, error) { return ReadResult(p) })
	})
}

// The same for a run's run.json.
func FuzzReadRunRecord(f *testing.F) {
	f.Add([]byte(`{"schema": 1, "run_id": "r1"}`))
	f.Add([]byte(`{"schema": 1, "run_id": ""}`))
	f.Add([]byte(`{"schema": 1, "run_id": "r", "trials": [{"trial": "a"}], "started": "2026-01-02T03:04:05Z"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, RunFile)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		rec, err := ReadRunRecord(dir)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("the error does not name the file: %v", err)
			}
			return
		}
		if rec.Schema != RunSchema || rec.RunID == "" {
			t.Fatalf("accepted an incomplete run record: %+v", rec)
		}
		roundTrip(t, rec, path, func(string) (any, error) { return ReadRunRecord(dir) })
	})
}

// roundTrip writes v as flightdeck writes it, reads it back with read, and
// wants the same JSON.
func roundTrip(t *testing.T, v any, path string, read func(string) (any, error)) {
	t.Helper()
	want, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("an accepted file does not encode: %v", err)
	}
	if err := WriteJSONFile(path, v); err != nil {
		t.Fatal(err)
	}
	again, err := read(path)
	if err != nil {
		t.Fatalf("a file flightdeck wrote from an accepted one is refused: %v", err)
	}
	got, _ := json.Marshal(again)
	if !bytes.Equal(got, want) {
		t.Fatalf("read back differently:\n%s\n%s", want, got)
	}
}

// The words of `flightdeck report RUN`: every trial's reason, the failed
// expectations and the run's exit code with what it means.
func TestReportGolden(t *testing.T) {
	rep := goldenReport(goldenResults())
	var buf bytes.Buffer
	WriteReport(&buf, rep)
	golden(t, "report.golden.txt", buf.String())
	assert.NotContains(t, buf.String(), "unused")
}

// The words of `flightdeck report A B`: the trials that differ, before and
// after, and each variant's counts in both.
func TestComparisonGolden(t *testing.T) {
	a := goldenReport(goldenResults())
	later := goldenResults()
	one := 1.0
	later[1].Outcome, later[1].OutcomeClass, later[1].Reward = grader.OutcomePassed, grader.SpecPassed, &one
	b := goldenReport(later[:len(later)-1])
	b.RunID, b.ExitCode, b.Expectations = "run-b", ExitTask, nil
	var buf bytes.Buffer
	WriteComparison(&buf, a, b)
	golden(t, "compare.golden.txt", buf.String())
	assert.Contains(t, buf.String(), "(1 up, 0 down)")
}

func goldenReport(results []*Result) *Report {
	// "unused" ran no trial (a check with nothing to run): no row of zeros.
	variants := []suite.Variant{{Name: "base", Agent: suite.AgentNop}, {Name: "treat", Agent: suite.AgentNop}, {Name: "unused", Agent: suite.AgentNop}}
	rep := &Report{RunID: "run", Suite: "sample", Dir: "/results/run", Status: StatusFinished, ExitCode: ExitExpectation,
		Expectations: []string{results[1].Trial}}
	for _, r := range results {
		rep.Trials = append(rep.Trials, ReportTrial{TrialLine: lineOf(r), Refusal: r.Refusal, Specs: r.Specs})
	}
	rep.Variants = computeStats(variants, 2, results)
	rep.Refused = refusedTasks(results)
	return rep
}

// An interrupted run's junit.xml lists every planned trial: one without a
// result is a skipped case that says why.
func TestJUnitListsTrialsNotRun(t *testing.T) {
	rec := &RunRecord{RunID: "run-1", Suite: "sample", Status: StatusInterrupted,
		Config: suite.Config{Variants: []suite.Variant{{Name: "base"}, {Name: "treat"}}},
		NotRun: []string{"a__base__2", "my__task__treat__1"}}
	data, err := junitXML(rec, sampleResults()[:1])
	require.NoError(t, err)
	out := string(data)
	assert.Contains(t, out, `tests="3"`)
	assert.Contains(t, out, `skipped="2"`)
	assert.Contains(t, out, `<testcase name="a#2" classname="base"`)
	assert.Contains(t, out, `<testcase name="my__task#1" classname="treat"`)
	assert.Contains(t, out, `message="interrupted: no result; finish with flightdeck run --resume run-1"`)

	rec.Status, rec.MissingShards, rec.Shards = StatusFinished, []int{2}, []string{"1/3 run-a", "3/3 run-c"}
	data, err = junitXML(rec, nil)
	require.NoError(t, err)
	assert.Contains(t, string(data), `message="not run: shard 2 of 3 is missing"`)
}

// What a run kept with --keep, and how to look at it and remove it.
func TestKeptText(t *testing.T) {
	tests := []struct {
		name string
		kept Kept
		want string
	}{
		{"on the engine and on disk", Kept{Containers: 2, Networks: 1, WorkDir: "/r/run/.work", Cached: 1},
			"kept (--keep): 2 containers, 1 network of run run on the engine, the trials' work dirs in /r/run/.work; " +
				"a shell in a trial's: flightdeck trial shell run TRIAL; remove them: flightdeck gc --run run and rm -rf /r/run/.work; " +
				"1 trial came from the results cache and kept nothing"},
		{"every trial cached", Kept{Cached: 3},
			"kept nothing (--keep): every trial came from the results cache; --no-cache --keep runs them again and keeps what they leave"},
		{"work dirs alone", Kept{WorkDir: "/r/run/.work"},
			"kept (--keep): nothing on the engine, the trials' work dirs in /r/run/.work; a shell in a trial's: flightdeck trial shell run TRIAL; " +
				"remove them: flightdeck gc --run run and rm -rf /r/run/.work"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.kept.Text("run"))
		})
	}
}

// After an interrupt, a task whose trials have no result still has its
// row: "not run", not a header without rows.
func TestSummaryRowsOfTrialsNotRun(t *testing.T) {
	rec := &RunRecord{RunID: "run", Dir: "/results/run", Status: StatusInterrupted,
		NotRun: []string{"slow__oracle__1", "a__base__2"}}
	FillRecord(rec, []suite.Variant{{Name: "base"}, {Name: "oracle"}}, 1, sampleResults()[:1])
	rec.NotRun = []string{"slow__oracle__1", "a__base__2"}
	var buf bytes.Buffer
	WriteSummary(&buf, rec)
	out := buf.String()
	assert.Regexp(t, `(?m)^slow +- +interrupted$`, out)
	assert.Regexp(t, `(?m)^a +passed 1, 1 interrupted +-$`, out)
	assert.Contains(t, out, "2 trials without a result (interrupted)")
}

// The summary says why each trial whose expectation failed ended so: the
// progress lines may have gone to another stream.
func TestSummarySaysWhyAnExpectationFailed(t *testing.T) {
	rs := goldenResults()
	held, failed := true, false
	rs[0].Expect, rs[0].Expectation = suite.ExpectPassed, &held
	rs[1].Expect, rs[1].Expectation = suite.ExpectPassed, &failed
	rec := &RunRecord{RunID: "run", Dir: "/results/run"}
	FillRecord(rec, []suite.Variant{{Name: "base"}, {Name: "treat"}}, 2, rs)
	var buf bytes.Buffer
	WriteSummary(&buf, rec)
	out := buf.String()
	assert.Contains(t, out, "expectations failed: a__base__2\n\nwhy:\n  a__base__2  failed: failing tests: test_parse; AssertionError: 3 != 4 (/results/run/a__base__2/grader.log)\n")
	assert.NotContains(t, out, "b__treat__3  infra_error", "only the failed expectations' reasons")
}
