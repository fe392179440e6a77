package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Targets, from issue 8.
const (
	floorTarget  = 1.3   // flightdeck's trial ≤ 1.3 × the floor
	cliTarget    = 0.5   // ≤ 0.5 × the CLI reference runner's
	cachedTarget = 0.020 // seconds per trial of a cached rerun
	digestTarget = 0.8   // task_digest ≥ 0.8 × raw SHA-256
	jobsTarget   = 1.5   // --jobs 2 ≥ 1.5 × --jobs 1
	memoryTarget = 100.0 // MB (10^6 bytes) peak for a 200-trial run
	// attacksTarget: task verify with its attacks ≤ 1.5 × without them
	// (issue 44).
	attacksTarget = 1.5
)

// Targets from issue #34, "Speed at the engine's floor": a trial is held
// to the engine calls it cannot avoid, made with nothing around them.
const (
	// issue34OracleCLI and issue34OracleFloor: one `flightdeck run` of one
	// oracle trial, the whole process (the number a user feels with
	// `task verify DIR`), ≤ 1.0 × the same trial as docker CLI commands
	// and ≤ 1.5 × the Harbor floor.
	issue34OracleCLI   = 1.0
	issue34OracleFloor = 1.5
	// issue34HarborFloor: a steady-state Harbor-shape trial (a run's later
	// trials, tamper inspection on) ≤ 1.25 × the Harbor floor.
	issue34HarborFloor = 1.25
	// issue34NativeFloor: a native trial with an agent's container and a
	// grading container ≤ 1.25 × the two-container floor.
	issue34NativeFloor = 1.25
)

// report is everything measured, ready to write as BENCHMARKS.md.
type report struct {
	plan          plan
	quick         bool
	machine       machine
	runID         string
	took          time.Duration
	load          samples
	containers    samples
	foreign       samples // running containers without flightdeck's label
	trials        *trialFigures
	compose       *composeFigures
	profile       *trialProfile
	startup       *startupFigures
	image         *imageFigures
	imagesLs      *imagesLsFigures
	digest        *digestFigures
	jobs          *jobsFigures
	memory        *memoryFigures
	cachedProfile []string
	timeline      *oracleTimeline // one oracle run's engine calls
	verify        *verifyFigures
	scale         []*scaleFigures   // throughput by --jobs, single- and multi-container, with the engine's floor
	datasets      []*datasetFigures // dataset runs of tiny tasks at --jobs auto
}

// target is one row of the targets table.
type target struct {
	name, measured, goal, ratio string
	met                         bool
	section                     string // where a missed target is explained
}

func verdict(met bool) string {
	if met {
		return "MET"
	}
	return "MISSED"
}

func (r *report) targets() []target {
	t := r.trials
	nop, floor, cli, cli1 := t.nop.median(), t.floor.median(), t.cli.median(), t.cli1.median()
	hb, ho, orun, ocli, hfloor := t.harbor.median(), t.harborOracle.median(), t.oracle.run.median(), t.oracle.cli.median(), t.harborFloor.median()
	dMBps := mbps(r.digest.bytes, r.digest.digest.median())
	rMBps := mbps(r.digest.bytes, r.digest.raw.median())
	j1, j2 := r.jobs.perMin[1].median(), r.jobs.perMin[2].median()
	memMB := float64(r.memory.vmHWM) * 1024 / 1e6
	out := []target{
		{
			name: "one `flightdeck run` of one oracle trial, the whole process (the Harbor task; the binary, a fresh results dir, the image cached) " +
				"vs the same trial as docker CLI commands and vs the Harbor floor (its engine calls alone)",
			measured: fmt.Sprintf("run %s, CLI %s, Harbor floor %s", ms(orun), ms(ocli), ms(hfloor)),
			goal:     fmt.Sprintf("≤ %.1f × CLI and ≤ %.1f × Harbor floor", issue34OracleCLI, issue34OracleFloor),
			ratio:    fmt.Sprintf("%.2f × CLI, %.2f × Harbor floor", orun/ocli, orun/hfloor),
			met:      orun <= issue34OracleCLI*ocli && orun <= issue34OracleFloor*hfloor,
			section:  "#one-oracle-run-vs-the-cli-and-the-harbor-floor",
		},
		{
			name:     "Harbor-shape trial (the Harbor task, oracle agent, a run's later trials, tamper inspection on) vs the Harbor floor (the same work as engine calls alone)",
			measured: fmt.Sprintf("trial %s, Harbor floor %s", ms(ho), ms(hfloor)),
			goal:     fmt.Sprintf("≤ %.2f × Harbor floor", issue34HarborFloor),
			ratio:    fmt.Sprintf("%.2f ×", ho/hfloor),
			met:      ho <= issue34HarborFloor*hfloor,
			section:  "#the-harbor-trial-vs-the-harbor-floor-call-by-call",
		},
		{
			name:     "trial vs the floor",
			measured: fmt.Sprintf("trial %s, floor %s", ms(nop), ms(floor)),
			goal:     fmt.Sprintf("≤ %.1f × floor", floorTarget),
			ratio:    fmt.Sprintf("%.2f ×", nop/floor),
			met:      nop <= floorTarget*floor,
			section:  "#the-trivial-trial-phase-by-phase",
		},
		{
			name:     "native trial (command agent `true`: an agent's container and a grading container) vs the floor (two bare containers)",
			measured: fmt.Sprintf("trial %s, floor %s", ms(t.cmd.median()), ms(floor)),
			goal:     fmt.Sprintf("≤ %.2f × floor", issue34NativeFloor),
			ratio:    fmt.Sprintf("%.2f ×", t.cmd.median()/floor),
			met:      t.cmd.median() <= issue34NativeFloor*floor,
			section:  "#command-agent-trial-vs-the-floor",
		},
		{
			name:     "trial vs the CLI reference (the same trial: agent's and grader's containers)",
			measured: fmt.Sprintf("trial %s, CLI %s", ms(nop), ms(cli)),
			goal:     fmt.Sprintf("≤ %.1f × CLI", cliTarget),
			ratio:    fmt.Sprintf("%.2f ×", nop/cli),
			met:      nop <= cliTarget*cli,
			section:  "#trial-vs-the-cli-reference",
		},
		{
			name:     "Harbor-task trial vs the CLI reference in one container (Harbor's shape, --one-container, the same task)",
			measured: fmt.Sprintf("trial %s, CLI %s", ms(hb), ms(cli1)),
			goal:     fmt.Sprintf("≤ %.1f × CLI", cliTarget),
			ratio:    fmt.Sprintf("%.2f ×", hb/cli1),
			met:      hb <= cliTarget*cli1,
			section:  "#trial-vs-the-cli-reference",
		},
		{
			name:     "Harbor task with no entrypoint of its own: trials that waited for an entrypoint's start (the wait is for images with one)",
			measured: fmt.Sprintf("%d of %d", t.harborWaited, t.harborTrials),
			goal:     "none",
			ratio:    "-",
			met:      t.harborWaited == 0 && t.harborTrials > 0,
			section:  "#trial-vs-the-cli-reference",
		},
		{
			name:     "cached rerun, per trial",
			measured: ms(r.jobs.cached.median()),
			goal:     fmt.Sprintf("≤ %s", ms(cachedTarget)),
			ratio:    fmt.Sprintf("%.2f × target", r.jobs.cached.median()/cachedTarget),
			met:      r.jobs.cached.median() <= cachedTarget,
			section:  "#cached-rerun",
		},
		{
			name:     "task_digest vs raw SHA-256",
			measured: fmt.Sprintf("%.0f MB/s vs %.0f MB/s", dMBps, rMBps),
			goal:     fmt.Sprintf("≥ %.1f × raw", digestTarget),
			ratio:    fmt.Sprintf("%.2f ×", dMBps/rMBps),
			met:      dMBps >= digestTarget*rMBps,
			section:  "#task_digest",
		},
		{
			name:     "--jobs 2 vs --jobs 1",
			measured: fmt.Sprintf("%.1f vs %.1f trials/min", j2, j1),
			goal:     fmt.Sprintf("≥ %.1f ×", jobsTarget),
			ratio:    fmt.Sprintf("%.2f ×", j2/j1),
			met:      j2 >= jobsTarget*j1,
			section:  "#throughput-by---jobs",
		},
		{
			name:     fmt.Sprintf("peak memory, %d trials", r.memory.trials),
			measured: fmt.Sprintf("%.1f MB", memMB),
			goal:     fmt.Sprintf("≤ %.0f MB", memoryTarget),
			ratio:    fmt.Sprintf("%.2f × target", memMB/memoryTarget),
			met:      memMB <= memoryTarget && r.memory.trials >= 200,
			section:  "#peak-memory",
		},
	}
	if r.compose != nil {
		out = append(out, r.compose.target())
	}
	if r.imagesLs != nil {
		out = append(out, r.imagesLs.targets()...)
	}
	if r.verify != nil {
		out = append(out, r.verify.target())
	}
	return out
}

// target is the attacks' row of the targets table.
func (v *verifyFigures) target() target {
	full, without := v.full.median(), v.noAttacks.median()
	return target{
		name:     "`task verify` of the Harbor bench task, the whole process, with its attacks vs without them (--skip attacks)",
		measured: fmt.Sprintf("with %s, without %s", secs(full), secs(without)),
		goal:     fmt.Sprintf("≤ %.1f × without", attacksTarget),
		ratio:    fmt.Sprintf("%.2f ×", full/without),
		met:      full <= attacksTarget*without,
		section:  "#task-verify-and-its-attacks",
	}
}

func (r *report) writeVerify(w writer) {
	v := r.verify
	if v == nil {
		return
	}
	w("## task verify and its attacks\n\n")
	w("`flightdeck task verify` (the binary) of the Harbor bench task, the whole process in a fresh results dir\n")
	w("(nothing cached; the image built), the three configurations interleaved. The bench task's tests are weak on\n")
	w("purpose (nop scores 1), so each verify ends with findings (exit 1): a finished audit.\n\n")
	w("| configuration | time |\n|---|---|\n")
	w("| every check | %s |\n", v.full.spreadWith(secs))
	w("| --skip attacks (the traced oracle still runs, for leaks) | %s |\n", v.noAttacks.spreadWith(secs))
	w("| --skip attacks,leaks (no traced oracle: the checks before either) | %s |\n\n", v.before.spreadWith(secs))
	w("The attacks add %.2f × to a verify without them; the traced oracle adds %.2f × to one without it.\n\n",
		v.full.median()/v.noAttacks.median(), v.noAttacks.median()/v.before.median())
}

// secs formats seconds.
func secs(s float64) string { return fmt.Sprintf("%.1f s", s) }

// target is the compose comparison's row of the targets table.
func (c *composeFigures) target() target {
	run, cli := c.run.median(), c.cli.median()
	return target{
		name:     "one `flightdeck run` of one oracle trial of a multi-container task (main and one service), the whole process, vs the same trial as docker-compose up/exec/cp/down",
		measured: fmt.Sprintf("run %s, docker-compose %s", ms(run), ms(cli)),
		goal:     fmt.Sprintf("≤ %.1f × docker-compose", composeTarget),
		ratio:    fmt.Sprintf("%.2f ×", run/cli),
		met:      run <= composeTarget*cli,
		section:  "#a-multi-container-trial",
	}
}

// busy says whether the machine was loaded while the bench ran: by the
// bench's own containers, other work, or both.
func (r *report) busy() bool {
	return r.load.median() > 0.5*float64(r.machine.cpus)
}

func (r *report) markdown() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	m := r.machine
	mode := "full"
	if r.quick {
		mode = "quick (-quick: fewer repetitions)"
	}
	w("# Benchmarks\n\n")
	w("Written by `make bench` (scripts/bench) on %s, %s mode, in %.1f minutes. Every figure below was\n",
		m.started.Format("2006-01-02 15:04 MST"), mode, r.took.Minutes())
	w("measured in that one run on this machine; each is the median of its repetitions, with the range and\n")
	w("the number of repetitions as `median (min–max, n=N)`. Run `make bench` again to refresh this file;\n")
	w("do not edit it by hand.\n\n")

	w("## Machine\n\n")
	w("| | |\n|---|---|\n")
	w("| CPU | %d cores, %s |\n", m.cpus, orUnknown(m.cpuModel))
	w("| memory | %d MiB |\n", m.memTotalMB)
	w("| kernel | %s |\n", orUnknown(m.kernel))
	w("| engine | Docker %s, API %s, storage driver %s, cgroup v%s |\n", m.engine.ServerVersion, m.engine.APIVersion, m.engine.StorageDriver, m.engine.CgroupVersion)
	w("| Go | %s |\n", m.goVersion)
	w("| flightdeck | %s |\n", orUnknown(m.flightdeck))
	w("| load average (1, 5, 15 min) | before %s; after %s |\n", m.loadBefore, m.loadAfter)
	w("| 1-min load during the bench | median %.2f, max %.2f (%d samples, every 10 s) |\n", r.load.median(), r.load.max(), len(r.load))
	w("| running containers during the bench | median %.0f, max %.0f (the bench's own included); without flightdeck's label (another program's, or an image build's step): max %.0f |\n\n",
		r.containers.median(), r.containers.max(), r.foreign.max())
	before := "unknown"
	if l := load1(m.loadBefore); l >= 0 {
		before = fmt.Sprintf("%.1f", l)
	}
	if r.busy() {
		others := ""
		switch n := r.foreign.max(); {
		case n == 1:
			others = ", and a container without flightdeck's label (another program's, or an image build's step) ran beside them"
		case n > 1:
			others = fmt.Sprintf(", and up to %.0f containers without flightdeck's label (another program's, or an image build's step) ran beside them", n)
		}
		w("%s\n\n", wrap(fmt.Sprintf("**The machine was loaded**: the 1-minute load average stayed around %.1f on %d cores "+
			"while the bench ran (%s before it started). The bench's own containers count in it%s. Absolute times "+
			"are inflated and noisier than on an idle machine; the floor, the CLI reference and flightdeck were "+
			"measured in interleaved rounds, so their ratios are fairer than their absolute values.",
			r.load.median(), m.cpus, before, others), 105))
	} else {
		w("%s\n\n", wrap(fmt.Sprintf("The machine was not loaded: the 1-minute load average stayed around %.1f on %d cores "+
			"(%s before the bench started).", r.load.median(), m.cpus, before), 105))
	}

	w("## Targets\n\n")
	w("| target | measured (medians) | goal | ratio | |\n|---|---|---|---|---|\n")
	for _, t := range r.targets() {
		res := verdict(t.met)
		if !t.met {
			res = fmt.Sprintf("[%s](%s)", res, t.section)
		}
		w("| %s | %s | %s | %s | **%s** |\n", t.name, t.measured, t.goal, t.ratio, res)
	}
	w("\n")
	r.writeOracle(w)
	r.writeCompose(w)
	r.writeScale(w)
	r.writeTrial(w)
	r.writeStartup(w)
	r.writeCached(w)
	r.writeImage(w)
	if r.imagesLs != nil {
		r.imagesLs.markdown(w)
	}
	r.writeDigest(w)
	r.writeJobs(w)
	r.writeMemory(w)
	r.writeVerify(w)
	r.writeWhere(w)
	return b.String()
}

type writer func(format string, args ...any)

func (r *report) writeOracle(w writer) {
	o := r.trials.oracle
	w("## One oracle trial, the whole process\n\n")
	w("%s\n\n", wrap(fmt.Sprintf("What a user feels first: `flightdeck run -p fixtures/bench/harbor --variant oracle "+
		"--results DIR`, the built binary timed from its start to its exit, a fresh results dir each time, the task's "+
		"image already built. Beside it, the same trial as the docker CLI commands Harbor's procedure comes to, one "+
		"process after the other, on the same image. Both are measured in the %d interleaved rounds of the trials below.",
		r.plan.rounds), 103))
	w("| figure | time |\n|---|---|\n")
	w("| **`flightdeck run`, one oracle trial, the whole process** | **%s** |\n", o.run.spread())
	w("| of which the trial (run.json: its start to its result) | %s |\n", o.trial.spread())
	w("| of which the rest: process start, task load, preflight, orphan reap, image lookup, run.json and reports | %s |\n", o.process.spread())
	w("| **the same trial as docker CLI commands** | **%s** |\n", o.cli.spread())
	for i, name := range oracleSteps {
		w("| %s | %s |\n", name, o.steps[i].spread())
	}
	w("| **the Harbor floor: the same trial's engine calls through the API, nothing else** | **%s** |\n", r.trials.harborFloor.spread())
	w("| `flightdeck run` / CLI | %.2f × |\n", o.run.median()/o.cli.median())
	w("| `flightdeck run` / Harbor floor | %.2f × |\n\n", o.run.median()/r.trials.harborFloor.median())
	w("- **fixtures/bench/harbor** is a Harbor-format task (no `[flightdeck]` table): an image FROM the base image\n")
	w("  with one small file in /app, no network, a solve.sh that writes one file and a test.sh that writes\n")
	w("  reward 1. flightdeck runs it in Harbor's container model: one container from the image (its entrypoint,\n")
	w("  the keep-alive as its command, no init), solution/ copied in and solve.sh run, the work dir copied out\n")
	w("  for evidence, tests/ copied to a fresh /tests and test.sh run with a fresh /logs/verifier, the reward\n")
	w("  copied out, the container removed; and it writes the trial's result, logs and the run's reports.\n")
	w("- **the docker CLI commands**: `docker run -d` (the image's entrypoint with `sleep infinity`, no init, no\n")
	w("  network), `docker cp` solution/ to /solution, `docker exec` solve.sh in /app, `docker cp` tests/ to /tests,\n")
	w("  `docker exec` test.sh after `mkdir -p /logs/verifier`, `docker cp` the reward out, `docker rm -f`. No\n")
	w("  `docker build` (the image is cached; flightdeck only looks it up), no evidence, no logs kept. Harbor\n")
	w("  itself drives docker compose (`up`, `exec`, `cp`, `down`); the re-enactment uses the plain docker CLI\n")
	w("  and leaves compose's project handling out.\n")
	w("- **the Harbor floor**: the same steps as `sandbox.Docker` calls in this process, one after the other:\n")
	w("  Start (create + start: the image's entrypoint with the keep-alive, no init, no network, the task's\n")
	w("  limits), CopyIn solution/, Exec solve.sh, CopyIn tests/, Exec test.sh (after `mkdir -p /logs/verifier`),\n")
	w("  CopyOut the reward, Remove. No process start, no CLI, no flightdeck trial code: what the engine takes\n")
	w("  for the trial, call by call in [the Harbor trial vs the Harbor floor](#the-harbor-trial-vs-the-harbor-floor-call-by-call).\n\n")
	if r.timeline != nil {
		r.timeline.markdown(w)
	}
}

func (r *report) writeTrial(w writer) {
	t := r.trials
	w("## One trial: the floor, flightdeck and the CLI reference\n\n")
	w("%s\n\n", wrap(fmt.Sprintf("The trivial task is fixtures/bench/nop: an image FROM flightdeck/base:bookworm with one "+
		"small file in its work dir, no network (as the floor's and the CLI reference's containers), a nop agent, and a "+
		"grader (tests/test.sh) that only writes reward 1. fixtures/bench/harbor is the same trial as a Harbor-format "+
		"task, which flightdeck runs in Harbor's container model. Both images are built before anything is measured "+
		"(cached). Measured in %d interleaved rounds; each round takes one floor sample, one Harbor floor sample, one CLI reference trial of "+
		"each task (the native task's in two containers, the Harbor task's in one), one in-process flightdeck run of "+
		"%d nop trials then %d command-agent trials of the native task and one of %d nop trials of the Harbor task at "+
		"--jobs 1, and the oracle run and its CLI commands above (the round's order rotates).",
		r.plan.rounds, r.plan.attempts, r.plan.attempts, r.plan.attempts), 103))
	w("| figure | time |\n|---|---|\n")
	w("| floor: agent's + grader's container | %s |\n", t.floor.spread())
	w("| floor: agent's container alone | %s |\n", t.floorAgent.spread())
	w("| floor: grader's container alone | %s |\n", t.floorGrader.spread())
	w("| **flightdeck trial, nop agent** (a run's 2nd and later trials) | **%s** |\n", t.nop.spread())
	w("| overhead = trial − floor | %s |\n", signedMs(t.nop.median()-t.floor.median()))
	w("| flightdeck trial, nop, a run's first trial (also seeds the run's work dir copy) | %s |\n", t.nopFirst.spread())
	w("| flightdeck trial, command agent `true` (starts an agent's container) | %s |\n", t.cmd.spread())
	w("| overhead of the command-agent trial = trial − floor | %s (%.2f × floor) |\n", signedMs(t.cmd.median()-t.floor.median()), t.cmd.median()/t.floor.median())
	w("| **CLI reference trial** (scripts/cli-reference.sh: agent's container, then a fresh grader's) | **%s** |\n", t.cli.spread())
	w("| **flightdeck trial of the Harbor task, nop agent** (a run's 2nd and later trials) | **%s** |\n", t.harbor.spread())
	w("| flightdeck trial of the Harbor task, a run's first trial (also seeds the run's copy of the image's work dir) | %s |\n", t.harborFirst.spread())
	w("| **Harbor floor** (the Harbor task's oracle trial as engine calls alone, one container) | **%s** |\n", t.harborFloor.spread())
	w("| **flightdeck trial of the Harbor task, oracle agent** (a run's later trials, inspected after the agent) | **%s** |\n", t.harborOracle.spread())
	w("| flightdeck oracle trial of the Harbor task / Harbor floor (the same work) | %.2f × |\n", t.harborOracle.median()/t.harborFloor.median())
	w("| **CLI reference trial, --one-container (Harbor's shape), the Harbor task** | **%s** |\n", t.cli1.spread())
	w("| flightdeck command-agent trial / CLI reference (both run an agent's `true` and grade in a fresh container) | %.2f × |\n\n", t.cmd.median()/t.cli.median())
	w("- **floor**: two bare container runs of the task image through the engine API, as `sandbox.Docker`\n")
	w("  Start (create + start, keep-alive entrypoint, no network, init, pids limit) + Exec (`true` for the\n")
	w("  agent; writing a reward file for the grader) + Remove (force), one container after the other.\n")
	w("- **Harbor floor**: the Harbor task's oracle trial in Harbor's shape as `sandbox.Docker` calls alone\n")
	w("  (the oracle section above): Start, CopyIn solution/, Exec solve.sh, CopyIn tests/, Exec test.sh,\n")
	w("  CopyOut the reward, Remove.\n")
	w("- **flightdeck trial**: the runner package's `Runner.Run` in this process, as `flightdeck run` calls\n")
	w("  it, --no-cache, a fresh results dir per run; a trial's time runs from its `start` progress line to\n")
	w("  its result line (after result.json and the cache index are written). A nop agent on a native task\n")
	w("  starts no agent container: the trial is the work dir (a host copy of the image's work dir, seeded\n")
	w("  once per run, plus `git init` and base commits), evidence (git diff) and one grading container.\n")
	w("- **CLI reference**: scripts/cli-reference.sh, each step a separate docker CLI process. By default the\n")
	w("  same trial as the floor's and flightdeck's: `docker build` (cached); the agent's container: `run -d`,\n")
	w("  `cp` the instruction in, `exec` the agent (`true`), `cp` the work dir out, `rm -f`; the grader's\n")
	w("  container, fresh from the image: `run -d`, `cp` the work dir in, `cp` tests in, `exec` the grader,\n")
	w("  `cp` the reward out, `rm -f`. With --one-container it takes Harbor's shape, grading in the agent's\n")
	w("  container with a nop agent that runs nothing: `build`, `run -d`, `cp` tests in, `exec` the grader,\n")
	w("  `cp` the reward out, `rm -f` — one container, so less than the floor's two, and no fresh grading\n")
	w("  container. It runs on the Harbor task (whose test.sh writes its reward to $FLIGHTDECK_REWARD_DIR, which\n")
	w("  the reference sets, else to /logs/verifier) and is held to the same target as the native trial.\n")
	w("- **flightdeck trial of the Harbor task**: the same in-process run; the trial is Harbor's container\n")
	w("  model: one container (Start with the image's entrypoint and the keep-alive, no init), the nop agent\n")
	w("  running nothing, the work dir copied out for evidence (git diff against the run's copy of the image's,\n")
	w("  on the host), then in the live container /tests and /logs/verifier made anew, tests copied in, test.sh\n")
	w("  run, the reward copied out, and the container removed. The reference's container differs in two ways:\n")
	w("  it has an init (`--init`), and `sleep` replaces the entrypoint (the base image has none, so the same\n")
	w("  command runs).\n\n")
}

func (r *report) writeStartup(w writer) {
	s := r.startup
	w("## Process start and a one-trial run\n\n")
	w("The built binary, as a user runs it.\n\n")
	w("| figure | time |\n|---|---|\n")
	w("| `flightdeck version` (process start and exit) | %s |\n", s.version.spread())
	w("| `flightdeck run` of one nop trial, --no-cache (load, preflight, orphan reap, seeding, trial, reports) | %s |\n\n", s.single.spread())
}

func (r *report) writeCached(w writer) {
	j := r.jobs
	w("## Cached rerun\n\n")
	w("The %d-trial suite of the throughput runs (the trivial task, nop, attempts: %d), run again without\n", j.cachedTrials, j.cachedTrials)
	w("--no-cache into the same results dir: every trial is served from the result cache and no engine is\n")
	w("opened. Per trial = the whole command's wall-clock time / %d.\n\n", j.cachedTrials)
	w("| figure | per trial |\n|---|---|\n")
	w("| `flightdeck run` (the binary: process start included) | %s |\n", j.cached.spread())
	w("| `Runner.Run` in this process (suite and task load included) | %s |\n\n", j.cachedInProc.spread())
}

func (r *report) writeImage(w writer) {
	im := r.image
	w("## Image cache\n\n")
	w("fixtures/bench/image-env (FROM the base image, one COPY, one RUN) through `sandbox.Docker.EnsureImage`,\n")
	w("as the runner gets a task's image: cold after removing its tag (and with it its layers), then again\n")
	w("with the tag present.\n\n")
	w("| figure | time |\n|---|---|\n")
	w("| cold build | %s |\n", im.cold.spread())
	w("| cache hit | %s |\n", im.hit.spread())
	w("| hit / cold | %.3f |\n\n", im.hit.median()/im.cold.median())
}

func (r *report) writeDigest(w writer) {
	d := r.digest
	w("## task_digest\n\n")
	w("A generated task of %.0f MB in %d files under environment/ (60%% of the files source-like text of\n", float64(d.bytes)/1e6, d.files)
	w("4 KiB–512 KiB, 40%% random binary of 64 KiB–4 MiB). Both read from the page cache (one warm-up pass each).\n\n")
	w("| figure | time | throughput |\n|---|---|---|\n")
	w("| `tasks.TaskDigest` | %s | %.0f MB/s |\n", d.digest.spread(), mbps(d.bytes, d.digest.median()))
	w("| raw SHA-256: read every file, one SHA-256 over all bytes | %s | %.0f MB/s |\n", d.raw.spread(), mbps(d.bytes, d.raw.median()))
	w("| SHA-256 alone, bytes already in memory | %s | %.0f MB/s |\n\n", d.rawMemory.spread(), mbps(d.bytes, d.rawMemory.median()))
	w("One `TaskDigest` of this task allocates %.0f MB (Go heap, total allocated).\n\n", float64(d.allocPerDigest)/1e6)
	w("`go test -bench TaskDigest ./tasks` measures the same on a smaller task (BenchmarkTaskDigest).\n\n")
}

func (r *report) writeJobs(w writer) {
	j := r.jobs
	w("## Throughput by --jobs\n\n")
	w("`flightdeck run` (the binary) of %d nop trials of the trivial task, --no-cache, at each --jobs level,\n", j.trials)
	w("levels interleaved; trials/min = %d / the whole command's wall-clock time (process start, preflight and\n", j.trials)
	w("seeding included).\n\n")
	w("| --jobs | wall | trials/min | vs --jobs 1 | one trial's own time (run.json), median of all |\n|---|---|---|---|---|\n")
	base := j.perMin[1].median()
	for _, n := range j.levels {
		w("| %d | %s | %s | %.2f × | %s |\n", n, j.wall[n].spread(), j.perMin[n].spreadWith(func(v float64) string { return fmt.Sprintf("%.1f", v) }),
			j.perMin[n].median()/base, ms(j.trialSec[n].median()))
	}
	w("\nA trial's own time grows with --jobs as trials share the two cores and the engine. Each repetition\n")
	w("runs the levels back to back; the ratio of each repetition's --jobs 2 to its --jobs 1, whose runs were\n")
	w("minutes apart at most, is %s × as a median (range, repetitions): less touched by bursts of other load than\n",
		paired(j.perMin[2], j.perMin[1]).spreadWith(func(v float64) string { return fmt.Sprintf("%.2f", v) }))
	w("the ratio of the medians, which the target uses.\n\n")
}

func (r *report) writeMemory(w writer) {
	m := r.memory
	w("## Peak memory\n\n")
	w("`flightdeck run` (the binary) of %d nop trials of the trivial task at --jobs %d, --no-cache, one run\n", m.trials, m.jobs)
	w("(%.0f s, %.1f trials/min).\n\n", m.wall, float64(m.trials)/(m.wall/60))
	w("| figure | peak |\n|---|---|\n")
	w("| VmHWM of the flightdeck process (/proc/PID/status, polled every 50 ms) | %.1f MB |\n\n", float64(m.vmHWM)*1024/1e6)
	w("MB = 10^6 bytes. The child's ru_maxrss is not used: on Linux it also counts the bench's own memory,\n")
	w("which the child shares between fork and exec.\n\n")
}

func (r *report) writeWhere(w writer) {
	t := r.trials
	w("## Where the time goes\n\n")
	w("### The trivial trial, phase by phase\n\n")
	w("Medians over the %d nop trials of the rounds (a run's first trial left out), split by the runner's\n", t.nopBreakdown.trials)
	w("phases (result.json `phases`) and, within each phase, by engine call (timed around the `sandbox.Engine`\n")
	w("the runner was given); \"host work\" is the rest of the phase: git, file copies, JSON. The floor's\n")
	w("grader container alone takes %s.\n\n", ms(t.floorGrader.median()))
	writeBreakdown(w, t.nopBreakdown)
	w("The command-agent trial (`true`), the same way:\n\n")
	writeBreakdown(w, t.cmdBreakdown)
	w("The Harbor task's nop trial (%d trials, a run's first left out), the same way:\n\n", t.harborBreakdown.trials)
	writeBreakdown(w, t.harborBreakdown)
	w("The Harbor task's oracle trial (%d trials, each a run's later trial, inspected after its agent), the same way:\n\n",
		t.harborOracleBreakdown.trials)
	writeBreakdown(w, t.harborOracleBreakdown)
	w("The floor's bare containers, per container: Start %s, Exec %s, Remove %s. flightdeck's containers also\n",
		ms(t.floorStart.median()), ms(t.floorExec.median()), ms(t.floorRemove.median()))
	w("carry bind mounts (the work dir, the reward dir) and its Exec captures output to a log file.\n\n")
	r.writeHarborFloor(w)

	p := r.profile
	w("### CPU profile of the trial\n\n")
	w("%d nop trials at --jobs 1 in this process under `runtime/pprof` (%.1f s wall): flightdeck used %.2f s of\n", r.plan.profileTrials, p.wall, p.cpu.self)
	w("CPU in its own process and %.2f s in the processes it started (host git: %s per trial), i.e. %.0f%% of\n", p.cpu.children, ms(p.cpu.children/float64(r.plan.profileTrials)), 100*(p.cpu.self+p.cpu.children)/p.wall)
	w("one core:")
	w(" the trial's wall-clock time is spent waiting on the engine, not computing. The functions with the most\n")
	w("samples, flat then cumulative (`go tool pprof -top`):\n\n")
	w("```\n%s```\n\n", strings.Join(p.top, "\n"))

	cliDone := false
	for _, tg := range r.targets() {
		if tg.met {
			continue
		}
		switch tg.section {
		case "#one-oracle-run-vs-the-cli-and-the-harbor-floor":
			r.whereOracle(w)
		case "#trial-vs-the-cli-reference":
			if !cliDone {
				r.whereCLI(w)
			}
			cliDone = true
		case "#command-agent-trial-vs-the-floor":
			w("### Command-agent trial vs the floor\n\n")
			w("The command-agent trial (%s) starts the same two containers as the floor (%s). Beyond their Start,\n", ms(t.cmd.median()), ms(t.floor.median()))
			w("Exec and Remove it spends (medians per trial): %s.\n\n", strings.Join(extraCosts(t.cmdBreakdown), "; "))
		case "#the-trivial-trial-phase-by-phase":
			w("### Trial vs the floor\n\n")
			w("Beyond the grader's container's Start, Exec and Remove, the nop trial spends (medians per trial): %s.\n\n",
				strings.Join(extraCosts(t.nopBreakdown), "; "))
		case "#task_digest":
			d := r.digest
			w("### task_digest missed\n\n")
			w("Both hash the same bytes with the same SHA-256, so the gap is in how the bytes are read. The raw\n")
			w("figure streams every file through one 1 MiB buffer; one `TaskDigest` allocated %.0f MB for the\n", float64(d.allocPerDigest)/1e6)
			w("%.0f MB task", float64(d.bytes)/1e6)
			if float64(d.allocPerDigest) >= 0.5*float64(d.bytes) {
				w(", i.e. it reads each file whole into a new buffer and holds them all until it hashes: the\n")
				w("difference is fresh memory (page faults, zeroing: `memclrNoHeapPointers`, `madvise` below) and the\n")
				w("GC, on top of the reads and SHA-256 that both pay")
			}
			w(". CPU profile of 3 digests of the %.0f MB task:\n\n```\n%s```\n\n", float64(d.bytes)/1e6, strings.Join(d.profile, "\n"))
		case "#throughput-by---jobs":
			j := r.jobs
			w("### --jobs 2 missed\n\n")
			w("At --jobs 2 a trial's own time was %s against %s at --jobs 1 (%.2f ×): two trials at once share the\n",
				ms(j.trialSec[2].median()), ms(j.trialSec[1].median()), j.trialSec[2].median()/j.trialSec[1].median())
			w("two cores with the engine (dockerd, containerd, runc, fuse-overlayfs)")
			if r.busy() {
				w(", while the 1-minute load stayed around %.1f", r.load.median())
			}
			w(". Per trial flightdeck itself used %s of CPU and host git %s (the profile above): the cores go to the\n",
				ms(r.profile.cpu.self/float64(r.plan.profileTrials)), ms(r.profile.cpu.children/float64(r.plan.profileTrials)))
			w("engine's work for each container, which --jobs cannot overlap beyond the cores.\n\n")
		case "#cached-rerun":
			w("### Cached rerun missed\n\n")
			w("CPU profile of one in-process cached rerun:\n\n```\n%s```\n\n", strings.Join(r.cachedProfile, "\n"))
		}
	}
}

// whereCLI compares flightdeck's trials with the CLI references.
func (r *report) whereCLI(w writer) {
	t := r.trials
	w("### Trial vs the CLI reference\n\n")
	for _, c := range []struct {
		ref, trial   string
		refS, trialS samples
	}{
		{"the CLI reference (two containers)", "flightdeck's nop trial", t.cli, t.nop},
		{"the one-container CLI reference on the Harbor task", "flightdeck's trial of that task", t.cli1, t.harbor},
	} {
		goal := cliTarget * c.refS.median()
		w("- %s takes %s, so the goal is a trial of at most %s; %s takes %s", c.ref, ms(c.refS.median()), ms(goal), c.trial, ms(c.trialS.median()))
		if c.trialS.median() <= goal {
			w(" (met).\n")
			continue
		}
		w(", %s too many.", ms(c.trialS.median()-goal))
		if lb := t.floorGrader.median(); lb > goal {
			w(" No trial that grades in a container can meet it here: the floor's one bare grading container\n")
			w("  (Start + Exec + Remove through the API) alone takes %s = %.2f × %s.", ms(lb), lb/c.refS.median(), c.ref)
		}
		w("\n")
	}
	w("\nflightdeck's nop trial of the native task starts one container, the grader's; its trial of the Harbor\n")
	w("task starts one too, for the agent and the verifier. Beyond what the bare container needs (Start, Exec,\n")
	w("Remove), their phases spend (medians per trial):\n\n")
	w("- native: %s.\n", strings.Join(extraCosts(t.nopBreakdown), "; "))
	w("- Harbor: %s.\n\n", strings.Join(extraCosts(t.harborBreakdown), "; "))
}

// whereOracle explains a whole-process oracle run slower than its CLI
// commands.
func (r *report) whereOracle(w writer) {
	o, t := r.trials.oracle, r.trials
	floor := t.harborFloor.median()
	w("### One oracle run vs the CLI and the Harbor floor\n\n")
	w("%s\n\n", wrap(fmt.Sprintf("The run took %s: %.2f × the CLI commands' %s (goal ≤ %.1f ×) and %.2f × the Harbor "+
		"floor's %s (goal ≤ %.1f ×). Of the run, the trial itself took %s (%s against the floor's engine calls "+
		"alone) and the rest of the process %s: process start (`flightdeck version` takes %s), task load, the "+
		"engine's preflight and orphan reap, the image lookup, run.json, junit.xml and the summary.",
		ms(o.run.median()), o.run.median()/o.cli.median(), ms(o.cli.median()), issue34OracleCLI,
		o.run.median()/floor, ms(floor), issue34OracleFloor, ms(o.trial.median()), signedMs(o.trial.median()-floor),
		ms(o.process.median()), ms(r.startup.version.median())), 103))
	var parts []string
	for _, p := range o.phases {
		parts = append(parts, fmt.Sprintf("%s %s", p.name, ms(p.took.median())))
	}
	if len(parts) == 0 {
		return
	}
	text := fmt.Sprintf("The trial's phases (result.json, medians): %s.", strings.Join(parts, ", "))
	if seed, ok := phaseMedian(o.phases, "workdir"); ok && seed >= 0.001 {
		later, _ := phaseMedian(t.harborBreakdown.phases, "workdir")
		text += fmt.Sprintf(" Its workdir phase takes the run's copy of the image's work dir (the base the "+
			"evidence is compared with) through a short-lived container of its own (created, copied out of, "+
			"removed), beside the agent's phase once the trial's container has started: a run's first trial "+
			"makes that engine work, so a one-trial run always does; a later trial of a run skips it (the Harbor "+
			"task's later trials above: workdir %s).", ms(later))
	}
	text += " Beyond the CLI's steps, the trial also copies the work dir out for evidence, makes /tests and " +
		"/logs/verifier anew with an exec of its own, lists the container's processes before the agent, " +
		"inspects the container after it (an exec in the tamper inspector, which lists its processes again), " +
		"and keeps the agent's and the verifier's output."
	w("%s\n\n", wrap(text, 103))
}

// writeHarborFloor sets the Harbor floor, call by call, beside the engine
// calls of flightdeck's Harbor trial by method, so that the distance left
// to the floor shows call by call.
func (r *report) writeHarborFloor(w writer) {
	t := r.trials
	w("### The Harbor trial vs the Harbor floor, call by call\n\n")
	w("%s\n\n", wrap(fmt.Sprintf("The Harbor floor (%d samples, from the rounds) is one oracle trial of the Harbor "+
		"task made as `sandbox.Docker` calls alone, one after the other, each timed:", len(t.harborFloor)), 103))
	w("| call | method | time |\n|---|---|---|\n")
	for i, c := range harborFloorCalls {
		var took samples
		if i < len(t.harborFloorByCall) {
			took = t.harborFloorByCall[i]
		}
		w("| %s | %s | %s |\n", c.name, c.method, took.spread())
	}
	w("| **Harbor floor** | | **%s** |\n\n", t.harborFloor.spread())
	w("%s\n\n", wrap(fmt.Sprintf("Beside it, the engine calls of one flightdeck oracle trial of the Harbor task (%d "+
		"trials, each a run's later trial, tamper inspection on: the floor's work and flightdeck's own), every call "+
		"of the trial summed by method wherever it was made (its phases above, the tamper inspector's container "+
		"included), and the floor's calls the same way; medians per trial, which need not add up to the totals.",
		t.harborOracleBreakdown.trials), 103))
	writeMethodTable(w, t.harborOracleBreakdown, t.harborFloorMethods(), t.harborOracle.median(), t.harborFloor.median())
}

// writeMethodTable writes a trial's engine calls by method beside a
// floor's: the floor's methods first, in its order, then the trial's others.
func writeMethodTable(w writer, b breakdown, floor []callRow, trial, floorTotal float64) {
	w("| method | Harbor trial: calls | Harbor trial: time | Harbor floor: calls | Harbor floor: time | trial − floor |\n")
	w("|---|---|---|---|---|---|\n")
	rows := slices.Clone(floor)
	for _, c := range b.methods {
		if !slices.ContainsFunc(rows, func(r callRow) bool { return r.method == c.method }) {
			rows = append(rows, callRow{method: c.method})
		}
	}
	for _, f := range rows {
		var tc callRow
		if i := slices.IndexFunc(b.methods, func(r callRow) bool { return r.method == f.method }); i >= 0 {
			tc = b.methods[i]
		}
		w("| %s | %.1f | %s | %.0f | %s | %s |\n", f.method, tc.count, ms(tc.took.median()), f.count,
			ms(f.took.median()), signedMs(tc.took.median()-f.took.median()))
	}
	w("| the trial's time besides its engine calls: host work (git, files, JSON, logs) | | %s | | | %s |\n",
		ms(b.rest.median()), signedMs(b.rest.median()))
	w("| **total** | | **%s** | | **%s** | **%s** |\n\n", ms(trial), ms(floorTotal), signedMs(trial-floorTotal))
}

// phaseMedian is the median time of the named phase.
func phaseMedian(phases []phaseRow, name string) (float64, bool) {
	for _, p := range phases {
		if p.name == name {
			return p.took.median(), true
		}
	}
	return 0, false
}

// extraCosts lists what a trial spends beyond one bare container's Start,
// Exec and Remove: other engine calls and host work, by phase.
func extraCosts(b breakdown) []string {
	bare := map[string]bool{"Start": true, "Exec": true, "Remove": true}
	var out []string
	for _, p := range b.phases {
		var parts []string
		for _, c := range p.calls {
			if !bare[c.method] && c.took.median() >= 0.001 {
				parts = append(parts, fmt.Sprintf("%s %s", c.method, ms(c.took.median())))
			}
		}
		if h := p.host.median(); h >= 0.001 {
			parts = append(parts, "host work "+ms(h))
		}
		if len(parts) > 0 {
			out = append(out, p.name+": "+strings.Join(parts, ", "))
		}
	}
	var parts []string
	var inCalls float64
	for _, c := range b.outsideCalls {
		inCalls += c.took.median()
		if !bare[c.method] {
			parts = append(parts, fmt.Sprintf("%s %s", c.method, ms(c.took.median())))
		}
	}
	if o := b.outside.median() - inCalls; o >= 0.001 {
		parts = append(parts, "host work "+ms(o))
	}
	if len(parts) > 0 {
		out = append(out, "outside the phases: "+strings.Join(parts, ", "))
	}
	return out
}

func writeBreakdown(w writer, b breakdown) {
	w("| phase | median | of which |\n|---|---|---|\n")
	for _, p := range b.phases {
		var parts []string
		for _, c := range p.calls {
			parts = append(parts, fmt.Sprintf("%s %s (%.1f×)", c.method, ms(c.took.median()), c.count))
		}
		if len(p.calls) > 0 {
			parts = append(parts, "host work "+ms(p.host.median()))
		}
		w("| %s | %s | %s |\n", p.name, ms(p.took.median()), strings.Join(parts, ", "))
	}
	var parts []string
	for _, c := range b.outsideCalls {
		parts = append(parts, fmt.Sprintf("%s %s (%.1f×)", c.method, ms(c.took.median()), c.count))
	}
	w("| outside the phases (trial dirs, cleanups, result.json, cache index) | %s | %s |\n", ms(b.outside.median()), strings.Join(parts, ", "))
	w("| **trial** | **%s** | |\n\n", ms(b.total.median()))
}

// paired divides a[i] by b[i].
func paired(a, b samples) samples {
	var out samples
	for i := range min(len(a), len(b)) {
		if b[i] > 0 {
			out = append(out, a[i]/b[i])
		}
	}
	return out
}

func signedMs(sec float64) string {
	if sec < 0 {
		return "−" + ms(-sec)
	}
	return "+" + ms(sec)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// wrap breaks text into lines of at most width characters at spaces.
func wrap(text string, width int) string {
	var b strings.Builder
	n := 0
	for i, word := range strings.Fields(text) {
		switch {
		case i == 0:
		case n+1+len(word) > width:
			b.WriteByte('\n')
			n = 0
		default:
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += len(word)
	}
	return b.String()
}
