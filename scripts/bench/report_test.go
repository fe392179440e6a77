package main

import (
	"flag"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/flightdeck/flightdeck/internal/testenv"
	"github.com/flightdeck/flightdeck/sandbox"
)

var update = flag.Bool("update", false, "rewrite the golden files from what the code produces")

// fakeReport is a report with made-up figures: a busy machine; the oracle
// run, command-agent, one-container CLI and --jobs targets missed; the
// Harbor trial within 1.25 × the Harbor floor.
func fakeReport() *report {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	phases := func(grade float64) []phaseRow {
		return []phaseRow{
			{name: "workdir", took: samples{0.03}, host: samples{0.03}},
			{name: "grade", took: samples{grade}, host: samples{0.001}, calls: []callRow{
				{method: "Start", took: samples{0.25}, count: 1}, {method: "CopyIn", took: samples{0.07}, count: 1},
				{method: "Exec", took: samples{0.07}, count: 1}, {method: "HandBack", took: samples{0.07}, count: 1},
				{method: "Remove", took: samples{0.05}, count: 1},
			}},
		}
	}
	harborPhases := []phaseRow{
		{name: "workdir", took: samples{0.01}, host: samples{0.01}},
		{name: "agent", took: samples{0.3}, host: samples{0.002}, calls: []callRow{
			{method: "Start", took: samples{0.25}, count: 1}, {method: "State", took: samples{0.01}, count: 2},
			{method: "Processes", took: samples{0.04}, count: 1},
		}},
		{name: "evidence", took: samples{0.12}, host: samples{0.05}, calls: []callRow{{method: "CopyOut", took: samples{0.07}, count: 1}}},
		{name: "grade", took: samples{0.22}, host: samples{0.002}, calls: []callRow{
			{method: "Exec", took: samples{0.12}, count: 2}, {method: "CopyIn", took: samples{0.05}, count: 1},
			{method: "Processes", took: samples{0.04}, count: 1},
		}},
	}
	oracle := &oracleFigures{
		run: samples{2.0, 2.2}, trial: samples{0.9}, process: samples{1.1, 1.2}, cli: samples{1.6},
		steps: []samples{{0.4}, {0.2}, {0.25}, {0.2}, {0.25}, {0.15}, {0.15}},
		phases: []phaseRow{{name: "workdir", took: samples{0.02}}, {name: "agent", took: samples{0.4}},
			{name: "evidence", took: samples{0.1}}, {name: "grade", took: samples{0.3}}, {name: "result", took: samples{0.01}}},
	}
	return &report{
		plan:  fullPlan,
		took:  6 * time.Minute,
		runID: "bench-x",
		machine: machine{cpus: 2, cpuModel: "Test CPU", memTotalMB: 4096, kernel: "6.0", goVersion: "go1.26.8",
			flightdeck: "abc1234", started: t0, loadBefore: "3.00 2.00 1.00", loadAfter: "2.00 2.00 1.00",
			engine: sandbox.Info{ServerVersion: "20.10.24", APIVersion: "1.41", StorageDriver: "overlay2", CgroupVersion: "1"}},
		load:       samples{2.5, 3, 3.5},
		containers: samples{1, 2},
		foreign:    samples{0, 1},
		trials: &trialFigures{
			floor: samples{0.66, 0.7}, floorAgent: samples{0.33}, floorGrader: samples{0.33},
			floorStart: samples{0.25}, floorExec: samples{0.03}, floorRemove: samples{0.05},
			cli: samples{1.3}, cli1: samples{1.2}, nop: samples{0.55, 0.57}, nopFirst: samples{0.85}, cmd: samples{1.0},
			harbor: samples{0.7}, harborFirst: samples{0.9}, harborTrials: 3, oracle: oracle, harborOracle: samples{0.8, 0.84},
			harborFloor: samples{0.6, 0.62},
			harborFloorByCall: []samples{{0.22, 0.23}, {0.06, 0.06}, {0.06, 0.06}, {0.06, 0.06}, {0.07, 0.08},
				{0.05, 0.05}, {0.08, 0.08}},
			harborBreakdown: breakdown{trials: 2, total: samples{0.7}, outside: samples{0.05}, phases: harborPhases,
				outsideCalls: []callRow{{method: "Remove", took: samples{0.05}, count: 1}},
				methods: []callRow{
					{method: "Start", took: samples{0.25}, count: 1}, {method: "State", took: samples{0.01}, count: 2},
					{method: "Processes", took: samples{0.08}, count: 2}, {method: "CopyOut", took: samples{0.07}, count: 1},
					{method: "Exec", took: samples{0.12}, count: 2}, {method: "CopyIn", took: samples{0.05}, count: 1},
					{method: "Remove", took: samples{0.05}, count: 1},
				},
				rest: samples{0.07}},
			harborOracleBreakdown: breakdown{trials: 2, total: samples{0.82}, outside: samples{0.05}, phases: harborPhases,
				outsideCalls: []callRow{{method: "Remove", took: samples{0.05}, count: 1}},
				methods: []callRow{
					{method: "Start", took: samples{0.25}, count: 1}, {method: "State", took: samples{0.01}, count: 2},
					{method: "Processes", took: samples{0.08}, count: 2}, {method: "CopyOut", took: samples{0.12}, count: 2},
					{method: "Exec", took: samples{0.24}, count: 4}, {method: "CopyIn", took: samples{0.1}, count: 2},
					{method: "Remove", took: samples{0.05}, count: 1},
				},
				rest: samples{0.07}},
			nopBreakdown: breakdown{trials: 2, total: samples{0.56}, outside: samples{0.004}, phases: phases(0.51)},
			cmdBreakdown: breakdown{trials: 2, total: samples{1.0}, outside: samples{0.08}, phases: phases(0.52),
				outsideCalls: []callRow{{method: "Remove", took: samples{0.07}, count: 1}}},
		},
		profile: &trialProfile{wall: 6, cpu: cpuTimes{self: 0.2, children: 0.35}, top: []string{"flat  flat%", ""}},
		startup: &startupFigures{version: samples{0.01}, single: samples{1.3}},
		image:   &imageFigures{hit: samples{0.002}, cold: samples{4}},
		digest:  &digestFigures{bytes: 200e6, files: 225, digest: samples{0.25}, raw: samples{0.2}, rawMemory: samples{0.15}, allocPerDigest: 200e6},
		jobs: &jobsFigures{trials: 20, levels: []int{1, 2, 4},
			wall:     map[int]samples{1: {12}, 2: {9}, 4: {8}},
			perMin:   map[int]samples{1: {100}, 2: {133}, 4: {150}},
			trialSec: map[int]samples{1: {0.5}, 2: {0.75}, 4: {1.4}},
			cached:   samples{0.003}, cachedInProc: samples{0.001}, cachedTrials: 20},
		memory: &memoryFigures{trials: 200, jobs: 4, vmHWM: 21000, wall: 70},
	}
}

func TestReportGolden(t *testing.T) {
	got := fakeReport().markdown()
	testenv.Golden(t, filepath.Join("testdata", "report.golden.md"), []byte(got), *update)
}

func TestTargets(t *testing.T) {
	var missed []string
	for _, tg := range fakeReport().targets() {
		if !tg.met {
			missed = append(missed, tg.section)
		}
	}
	assert.Equal(t, []string{
		"#one-oracle-run-vs-the-cli-and-the-harbor-floor",    // 2.1 s against 1.0 × 1.6 s and 1.5 × 0.61 s
		"#the-harbor-trial-vs-the-harbor-floor-call-by-call", // the oracle trial's 0.82 s against 1.25 × 0.61 s
		"#command-agent-trial-vs-the-floor",                  // 1.0 s against 1.25 × 0.68 s
		"#trial-vs-the-cli-reference",                        // the one-container reference: the Harbor trial's 0.7 s against 0.5 × 1.2 s
		"#throughput-by---jobs",                              // 133 against 1.5 × 100 trials/min
	}, missed)
}
