package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/internal/testenv"
	"github.com/flightdeck/flightdeck/runner"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/sandbox"
)

// phaseSpy watches a run's containers on the real engine: when a trial's
// grading container starts, it notes whether that trial's agent container
// still runs.
type phaseSpy struct {
	sandbox.Engine
	mu     sync.Mutex
	agents map[string]string // trial → agent container
	alive  []string          // "trial: agent container running at grade start"
	grades int
}

func (s *phaseSpy) Start(ctx context.Context, spec sandbox.ContainerSpec) (sandbox.Container, error) {
	if spec.Labels[sandbox.LabelPhase] == "grade" {
		s.mu.Lock()
		s.grades++
		id := s.agents[spec.TrialID]
		s.mu.Unlock()
		if id != "" {
			if st, err := s.Engine.State(ctx, id); err == nil && st.Running {
				s.mu.Lock()
				s.alive = append(s.alive, fmt.Sprintf("%s: the agent's container %.12s runs while the grade starts", spec.TrialID, id))
				s.mu.Unlock()
			}
		}
	}
	c, err := s.Engine.Start(ctx, spec)
	if spec.Labels[sandbox.LabelPhase] == "agent" && c.ID != "" {
		s.mu.Lock()
		s.agents[spec.TrialID] = c.ID
		s.mu.Unlock()
	}
	return c, err
}

// runInProcess runs a suite through the runner's API on eng.
func runInProcess(t *testing.T, eng sandbox.Engine, suiteFile string) *results.RunRecord {
	t.Helper()
	req, err := runner.Prepare(context.Background(), suiteFile, suite.Options{Cwd: filepath.Dir(suiteFile), Retries: -1})
	require.NoError(t, err)
	progress := &testenv.Buffer{}
	r := &runner.Runner{
		Open:     func(context.Context) (sandbox.Engine, error) { return eng, nil },
		Progress: progress,
		Version:  "e2e",
		Owner:    sandbox.Owner{UID: os.Getuid(), GID: os.Getgid()},
	}
	rec, err := r.Run(context.Background(), req)
	require.NoError(t, err, progress.String())
	return rec
}

// No process of the agent phase outlives it: when the grade starts, the
// agent's container no longer runs (invariant 7, and the condition for
// invariant 3 to mean anything: the graded work dir is the one the agent
// phase left).
func TestAgentProcessesEndBeforeGrading(t *testing.T) {
	eng := requireEngine(t)
	dir := t.TempDir()
	suiteFile := writeSuite(t, dir, suiteFile{
		Name:     "phases",
		Tasks:    []string{taskDir(t, nativeTask), taskDir(t, harborTask)},
		Variants: map[string]map[string]any{"idle": command("sleep 0.1")},
		Retries:  retries(0), Concurrency: 2,
	})
	spy := &phaseSpy{Engine: eng, agents: map[string]string{}}
	rec := runInProcess(t, spy, suiteFile)
	require.Len(t, rec.Trials, 2)
	// The native trial is graded in a container of its own; the Harbor
	// trial in its agent's container, as Harbor's shared mode does, where
	// what the agent left running still runs by design.
	assert.Equal(t, 1, spy.grades, "the native trial was graded in a grading container")
	for _, ts := range rec.Trials {
		res, err := results.ReadResult(filepath.Join(rec.Dir, ts.Trial, results.ResultFile))
		require.NoError(t, err)
		require.NotNil(t, res.Reward, ts.Trial)
		if res.Native {
			assert.Equal(t, "fresh", res.GradePhase.Mode, ts.Trial)
		} else {
			assert.Equal(t, "live", res.GradePhase.Mode, ts.Trial)
		}
	}
	assertNoLeftovers(t, rec.RunID)
	fixedBug(t, len(spy.alive) == 0, "the agent's container still runs while a native trial is graded", spy.alive)
}

// A first run into a results dir that does not exist yet gives no warning
// that bind mounts fail: the engine's preflight probes a directory that
// exists.
func TestFreshResultsDirNoFalseWarning(t *testing.T) {
	run := attackRun(t)
	const warning = "bind-mounted into a container is not visible there"
	fixedBug(t, !strings.Contains(run.cli.stderr, warning),
		"the engine's preflight probes bind mounts in the results dir before it exists, and warns that mounts fail",
		strings.SplitN(run.cli.stderr, "\n", 2)[0])
}
