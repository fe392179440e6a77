package runner

import (
	"context"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/sandbox"
)

// Harbor's container model on the real engine: after a Harbor task's trial
// (kept with --keep) the container's changes against its image are the
// agent's and the verifier's only, and what Harbor itself puts there.
func TestEngineHarborContainerHoldsNothingOfFlightdecks(t *testing.T) {
	t.Parallel()
	eng := requireEngine(t)
	exp := readHarborExpected(t)
	root := harborFixtureDir(t)
	suiteFile := writeSuite(t, `
variants: {oracle: {agent: oracle}}
images: `+imagesYAML(exp.ImageMap)+`
results: RESULTS
`)
	rec, res := runSuite(t, eng, suiteFile, suite.Options{Path: []string{filepath.Join(root, "tasks")}, Include: []string{"reward-txt"}, Keep: true})
	t.Cleanup(func() { eng.Reap(context.Background(), sandbox.ReapOptions{RunID: rec.RunID}) })
	r := res["reward-txt__oracle__1"]
	require.NotNil(t, r)
	require.Equal(t, grader.OutcomePassed, r.Outcome, r.Error)
	assert.Equal(t, "live", r.GradePhase.Mode)

	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label="+sandbox.LabelRun+"="+rec.RunID,
		"--filter", "label="+sandbox.LabelPhase+"=agent").Output()
	require.NoError(t, err)
	ids := strings.Fields(string(out))
	require.Len(t, ids, 1, "one container held the agent and the verifier")
	changes, err := eng.Changes(context.Background(), ids[0])
	require.NoError(t, err)
	var paths []string
	for _, c := range changes {
		paths = append(paths, c.Kind+" "+c.Path)
	}
	sort.Strings(paths)
	// The oracle's answer, Harbor's own dirs (/logs with the agent's logs
	// mount, /tests, /solution) and nothing else: no .git in the work dir,
	// no file of flightdeck's anywhere.
	allowed := func(p string) bool {
		for _, prefix := range []string{"/logs", "/tests", "/solution"} {
			if p == prefix || strings.HasPrefix(p, prefix+"/") {
				return true
			}
		}
		return p == "/app" || p == "/app/sum.txt"
	}
	for _, c := range changes {
		assert.True(t, allowed(c.Path), "%s %s is neither the agent's, the verifier's nor Harbor's; all changes:\n%s",
			c.Kind, c.Path, strings.Join(paths, "\n"))
	}
	assert.Contains(t, paths, "A /app/sum.txt", "the agent's change is seen")
	assert.Contains(t, paths, "A /tests/test.sh", "the verifier's tests were copied in")
}

// A reward.json with several keys and no "reward" key: every key is
// recorded, and the trial passes only when every key is 1.
func TestEngineHarborRewardKeys(t *testing.T) {
	t.Parallel()
	eng := requireEngine(t)
	exp := readHarborExpected(t)
	root := harborFixtureDir(t)
	suiteFile := writeSuite(t, `
variants:
  oracle: {agent: oracle}
  nop: {agent: nop}
  partial: {agent: command, command: "echo correct > /app/answer.txt"}
images: `+imagesYAML(exp.ImageMap)+`
results: RESULTS
`)
	rec, res := runSuite(t, eng, suiteFile, suite.Options{Path: []string{filepath.Join(root, "tasks")}, Include: []string{"reward-keys"}})
	for _, tc := range []struct {
		variant string
		outcome grader.Outcome
		reward  float64
		rewards map[string]float64
	}{
		{"oracle", grader.OutcomePassed, 1, map[string]float64{"correctness": 1, "performance": 1}},
		{"nop", grader.OutcomeFailed, 0, map[string]float64{"correctness": 0, "performance": 0}},
		{"partial", grader.OutcomeFailed, 0, map[string]float64{"correctness": 1, "performance": 0}},
	} {
		r := res["reward-keys__"+tc.variant+"__1"]
		require.NotNil(t, r, tc.variant)
		assert.Equal(t, tc.outcome, r.Outcome, "%s: %s", tc.variant, r.Error)
		if assert.NotNil(t, r.Reward, "%s: %s", tc.variant, r.Error) {
			assert.Equal(t, tc.reward, *r.Reward, tc.variant)
		}
		assert.Equal(t, tc.rewards, r.Rewards, tc.variant)
		assert.Nil(t, r.RewardError, tc.variant)
	}
	assertNoLeftovers(t, eng, rec.RunID)
}
