package main

import (
	"context"
	"fmt"
	"time"
)

// trialFigures are the per-trial figures, measured in interleaved rounds so
// that a change in the machine's load touches all of them alike.
type trialFigures struct {
	floor, floorAgent, floorGrader     samples
	floorStart, floorExec, floorRemove samples // per container
	cli                                samples // the CLI reference: agent's and grader's containers, as the floor
	cli1                               samples // the CLI reference in one container (Harbor's shape), on the Harbor task
	nop                                samples // flightdeck, nop agent, after the run's first trial
	nopFirst                           samples // the run's first trial, which also seeds the work dir copy
	cmd                                samples // flightdeck, command agent `true` (an agent's container)
	harbor                             samples // flightdeck, the Harbor task, nop agent, after the run's first trial
	harborFirst                        samples // the Harbor task's run's first trial
	// harborOracle is flightdeck's oracle trial of the Harbor task, a
	// run's later trial, tamper inspection on: the Harbor floor's work.
	harborOracle samples
	// harborFloor is the Harbor floor (harborFloorOnce): one Harbor-shape
	// oracle trial's engine calls and nothing else; harborFloorByCall
	// splits it by call, in harborFloorCalls order.
	harborFloor       samples
	harborFloorByCall []samples
	// harborWaited counts the Harbor task's trials that waited for an
	// entrypoint's start, of harborTrials: the task has no entrypoint of
	// its own, so the start rule must leave every one of them alone.
	harborWaited, harborTrials int
	oracle                     *oracleFigures
	nopBreakdown, cmdBreakdown breakdown
	harborBreakdown            breakdown
	harborOracleBreakdown      breakdown
}

// trialRounds measures, per round: the floor; the CLI reference runner's
// trial of the native task (two containers) and of the Harbor task (one
// container); one in-process flightdeck run of `attempts` nop trials then
// as many command-agent trials of the native task, and one of `attempts`
// nop trials of the Harbor task, at --jobs 1; the Harbor floor; one
// `flightdeck run` of one oracle trial of the Harbor task, and its CLI
// re-enactment.
func (b *bench) trialRounds(ctx context.Context, rounds, attempts int) (*trialFigures, error) {
	suite, _, err := b.ws.suite("rounds", attempts, 1, nopVariant, cmdVariant)
	if err != nil {
		return nil, err
	}
	harborSuite, _, err := b.ws.suiteOf("harbor", b.ws.harbor, attempts, 1, nopVariant, oracleVariant)
	if err != nil {
		return nil, err
	}
	if err := b.warmUp(ctx, harborSuite); err != nil {
		return nil, err
	}
	f := &trialFigures{oracle: newOracleFigures()}
	var nopSamples, cmdSamples, harborSamples, harborOracleSamples []sample
	steps := []func() error{
		func() error {
			s, err := b.floorOnce(ctx)
			f.floor = append(f.floor, s.total().Seconds())
			f.floorAgent = append(f.floorAgent, s.agent.total().Seconds())
			f.floorGrader = append(f.floorGrader, s.grader.total().Seconds())
			for _, c := range []containerTimes{s.agent, s.grader} {
				f.floorStart = append(f.floorStart, c.start.Seconds())
				f.floorExec = append(f.floorExec, c.exec.Seconds())
				f.floorRemove = append(f.floorRemove, c.remove.Seconds())
			}
			return err
		},
		func() error {
			d, err := b.cliReferenceOnce(ctx, b.ws.task, false)
			f.cli = append(f.cli, d.Seconds())
			return err
		},
		func() error {
			d, err := b.cliReferenceOnce(ctx, b.ws.harbor, true)
			f.cli1 = append(f.cli1, d.Seconds())
			return err
		},
		func() error {
			byTrial, err := b.ws.freshResults("rounds")
			if err != nil {
				return err
			}
			r, err := b.runInProcess(ctx, suite, byTrial, true)
			if err != nil {
				return err
			}
			for i, t := range r.trialsOf(nopVariant.name) {
				if i == 0 {
					f.nopFirst = append(f.nopFirst, r.trialTime(t).Seconds())
					continue
				}
				f.nop = append(f.nop, r.trialTime(t).Seconds())
				nopSamples = append(nopSamples, sampleOf(r, t))
			}
			for _, t := range r.trialsOf(cmdVariant.name) {
				f.cmd = append(f.cmd, r.trialTime(t).Seconds())
				cmdSamples = append(cmdSamples, sampleOf(r, t))
			}
			return nil
		},
		func() error {
			byTrial, err := b.ws.freshResults("harbor")
			if err != nil {
				return err
			}
			r, err := b.runInProcess(ctx, harborSuite, byTrial, true)
			if err != nil {
				return err
			}
			for i, t := range r.trialsOf(nopVariant.name) {
				f.harborTrials++
				if r.byTrial[t].StartWait != nil {
					f.harborWaited++
				}
				if i == 0 {
					f.harborFirst = append(f.harborFirst, r.trialTime(t).Seconds())
					continue
				}
				f.harbor = append(f.harbor, r.trialTime(t).Seconds())
				harborSamples = append(harborSamples, sampleOf(r, t))
			}
			// The oracle's trials come after the run's first (a nop's):
			// each is a later trial, inspected after its agent.
			for _, t := range r.trialsOf(oracleVariant.name) {
				if r.byTrial[t].TamperCheck == nil || !r.byTrial[t].TamperCheck.Checked {
					return fmt.Errorf("the Harbor task's oracle trial %s was not inspected", t)
				}
				f.harborOracle = append(f.harborOracle, r.trialTime(t).Seconds())
				harborOracleSamples = append(harborOracleSamples, sampleOf(r, t))
			}
			return nil
		},
		func() error {
			took, err := b.harborFloorOnce(ctx)
			if err == nil {
				f.addHarborFloor(took)
			}
			return err
		},
		func() error {
			wall, res, err := b.oracleRunOnce(ctx)
			if err == nil {
				f.oracle.addRun(wall, res)
			}
			return err
		},
		func() error {
			steps, err := b.oracleCLIOnce(ctx)
			if err == nil {
				f.oracle.addCLI(steps)
			}
			return err
		},
	}
	for i := range rounds {
		b.logf("trial round %d/%d", i+1, rounds)
		// Rotate the order so no figure always follows the same one.
		for j := range steps {
			if err := steps[(i+j)%len(steps)](); err != nil {
				return nil, fmt.Errorf("round %d: %w", i+1, err)
			}
		}
	}
	f.nopBreakdown = newBreakdown(nopSamples)
	f.cmdBreakdown = newBreakdown(cmdSamples)
	f.harborBreakdown = newBreakdown(harborSamples)
	f.harborOracleBreakdown = newBreakdown(harborOracleSamples)
	return f, nil
}

// warmUp runs each figure of the rounds once, unmeasured: the reference
// runner's first builds, the runner's image lookups, the binary's first
// start and the engine's caches.
func (b *bench) warmUp(ctx context.Context, harborSuite string) error {
	b.logf("warming up")
	if _, err := b.cliReferenceOnce(ctx, b.ws.task, false); err != nil {
		return err
	}
	if _, err := b.cliReferenceOnce(ctx, b.ws.harbor, true); err != nil {
		return err
	}
	if _, err := b.floorOnce(ctx); err != nil {
		return err
	}
	if _, err := b.harborFloorOnce(ctx); err != nil {
		return err
	}
	byTrial, err := b.ws.freshResults("harbor")
	if err != nil {
		return err
	}
	if _, err := b.runInProcess(ctx, harborSuite, byTrial, true); err != nil {
		return err
	}
	if _, _, err := b.oracleRunOnce(ctx); err != nil {
		return err
	}
	_, err = b.oracleCLIOnce(ctx)
	return err
}

// elapsed runs f and returns its wall-clock time.
func elapsed(f func() error) (time.Duration, error) {
	start := time.Now()
	err := f()
	return time.Since(start), err
}
