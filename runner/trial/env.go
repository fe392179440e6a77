package trial

import (
	"path/filepath"
	"time"

	"github.com/flightdeck/flightdeck/runner/agent"
	"github.com/flightdeck/flightdeck/runner/images"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/sandbox"
)

// Env is what a run gives each of its trials: the engine, where the
// trial's files go, the run's settings, and the run's shared services
// (task images, seeded work dirs, the tamper inspector, the progress).
// A trial knows nothing else of the run.
type Env struct {
	Engine sandbox.Engine
	RunID  string
	// Dir is the run's dir: a trial's files go to Dir/<trial id>.
	Dir string
	// Scratch is the run's private work dir: a trial's runner-only files
	// go to Scratch/<trial id>, removed when the trial ends unless Keep.
	Scratch string
	// Keep leaves the trial's containers and scratch files in place.
	Keep       bool
	Multiplier suite.Multipliers
	Owner      sandbox.Owner
	// Hurry closes when the user asks again to stop: the trial's cleanups
	// stop waiting (the run's removal by label takes over).
	Hurry <-chan struct{}
	// ClockOffset is the engine's clock minus this host's (the tamper
	// inspector compares the engine's file times with this host's).
	ClockOffset time.Duration
	Images      *images.Set
	Seeds       *Seeds
	Inspector   *Inspector
	Report      Reporter
	// Mask masks the run's secrets in what a trial writes (nil: none).
	Mask sandbox.OutputFilter
	// Agent, when set, is every trial's agent instead of its variant's;
	// with AgentOnly the trial ends after its agent phase, not graded
	// (task shell: a person at a terminal in the agent's place).
	Agent     agent.Agent
	AgentOnly bool
	// Later, when set, runs an attempt's engine removals (its containers,
	// networks and volumes: seconds on a slow engine) beside what follows,
	// once the attempt's result is complete; whoever sets it waits for
	// them before the run ends. Nil: the attempt removes them itself,
	// before it returns.
	Later func(removals func())
	// Tracer is flightdeck's executable: a variant's Trace grades under
	// its tracer ("": none to run, and the trial says so).
	Tracer string
}

// Reporter is where a trial says how it goes: the phase it is in, and
// notes worth the user's eye.
type Reporter interface {
	Phase(t *suite.Trial, phase string)
	Note(t *suite.Trial, msg string)
}

// touch records a use of an image the trial built (a service's, a
// separate verifier's, the egress gateway's) for the image cache.
func (s *Env) touch(img sandbox.Image) {
	if s.Images != nil && s.Images.Touch != nil {
		s.Images.Touch(img)
	}
}

// NewResult starts a trial's result.
func NewResult(runID string, t *suite.Trial) *results.Result {
	return &results.Result{
		Schema: results.ResultSchema, RunID: runID, Trial: t.ID, TaskID: t.Task.ID, TaskDir: t.Task.Dir,
		TaskDigest: t.Task.Digest, Variant: t.Variant.Name, Agent: t.Variant.Agent, Attempt: t.Attempt,
		CacheKey: t.Key, Native: !t.Harbor(), Started: time.Now().UTC(), Expect: t.Variant.Expect,
	}
}

// trialDirs are a trial's own dir and its scratch dir.
func (s *Env) trialDirs(t *suite.Trial) (dir, scratch string) {
	return filepath.Join(s.Dir, t.ID), filepath.Join(s.Scratch, t.ID)
}
