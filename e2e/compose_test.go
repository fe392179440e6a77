package e2e

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/runner/results"
)

// composeRun starts a run of two gated trials of the compose-sidecar
// fixture at once (main plus a store service, a network and a volume per
// trial), waits until both trials' services and main containers run, and
// returns the process, its run id and dir, and the two main containers,
// whose agents go on once their gates are opened (openGate).
func composeRun(t *testing.T) (*process, string, string, []string) {
	t.Helper()
	requireSlow(t)
	requireEngine(t)
	dir := t.TempDir()
	task, err := filepath.Abs(filepath.Join("..", "fixtures", "harbor", "tasks", "compose-sidecar"))
	require.NoError(t, err)
	suiteFile := writeSuite(t, dir, suiteFile{
		Name: "compose", Tasks: []string{task}, Concurrency: 2, Retries: retries(0),
		// One trial's agent waits at its gate for as long as the other's
		// services take to start.
		Timeouts: map[string]float64{"agent": 10},
		Variants: map[string]map[string]any{
			"slow1": command(gate + "true"), "slow2": command(gate + "true"),
		},
		Images: map[string]string{"python:3.12-slim": "flightdeck/base:bookworm"},
	})
	p := startFlightdeck(t, dir, nil, "run", suiteFile)
	id := p.runID(t)
	var mains []string
	for _, v := range []string{"slow1", "slow2"} {
		trial := "compose-sidecar__" + v + "__1"
		waitContainer(t, id, trial, "service", 5*time.Minute)
		mains = append(mains, waitContainer(t, id, trial, "agent", 5*time.Minute))
	}
	return p, id, dir, mains
}

// Two trials of a compose task at once (--jobs 2): each has its own
// network, volume and services, labelled with the run, so they never meet;
// both are graded, and nothing is left.
func TestComposeTrialsApart(t *testing.T) {
	p, id, dir, mains := composeRun(t)
	f := "label=flightdeck.run=" + id
	assert.Len(t, docker(t, "network", "ls", "-q", "--filter", f), 2, "one network per trial")
	assert.Len(t, docker(t, "volume", "ls", "-q", "--filter", f), 2, "one store volume per trial")
	assert.Len(t, docker(t, "ps", "-q", "--filter", f, "--filter", "label=flightdeck.service=store"), 2, "one store per trial")
	for _, c := range mains {
		openGate(t, c)
	}
	r := p.wait(t, cliTimeout)
	require.False(t, r.signaled, r.stderr)
	for _, v := range []string{"slow1", "slow2"} {
		res, err := results.ReadResult(filepath.Join(dir, "results", id, "compose-sidecar__"+v+"__1", results.ResultFile))
		require.NoError(t, err, v)
		// The agents left the store empty: graded, and failed.
		assert.Equal(t, grader.OutcomeFailed, res.Outcome, "%s: %s", v, res.Error)
		if assert.NotNil(t, res.Reward, "%s is graded", v) {
			assert.Equal(t, 0.0, *res.Reward, v)
		}
	}
	assertNoLeftovers(t, id)
}

// Ctrl-C during compose trials removes every container, network and
// volume of the run; after SIGKILL, `flightdeck gc` does.
func TestFaultComposeInterruptAndKill(t *testing.T) {
	t.Run("SIGINT", func(t *testing.T) {
		p, id, _, _ := composeRun(t)
		p.signal(t, syscall.SIGINT)
		r := p.wait(t, 2*time.Minute)
		assert.Equal(t, results.ExitInterrupted, r.code, r.stderr)
		assertNoLeftovers(t, id)
	})
	t.Run("SIGKILL and gc", func(t *testing.T) {
		p, id, dir, _ := composeRun(t)
		p.signal(t, syscall.SIGKILL)
		r := p.wait(t, time.Minute)
		require.True(t, r.signaled)
		left := leftovers(t, id)
		assert.Len(t, filterPrefix(left, "network "), 2, "a killed run leaves its networks: %v", left)
		assert.Len(t, filterPrefix(left, "volume "), 2, "and its volumes: %v", left)
		gc := flightdeck(t, dir, nil, "gc", "--run", id)
		assert.Equal(t, 0, gc.code, gc.stderr)
		assertNoLeftovers(t, id)
	})
}

func filterPrefix(list []string, prefix string) []string {
	var out []string
	for _, s := range list {
		if len(s) >= len(prefix) && s[:len(prefix)] == prefix {
			out = append(out, s)
		}
	}
	return out
}
