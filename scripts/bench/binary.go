package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flightdeck/flightdeck/runner/results"
)

// binaryRun is one run of the built flightdeck binary.
type binaryRun struct {
	started time.Time
	wall    time.Duration
	vmHWM   int64 // kB: the process's peak resident set, read from /proc until it exited
	rec     *results.RunRecord
}

// runBinary runs `flightdeck args...` in the workspace and, for `run
// --json`, parses the run.json it prints.
func (b *bench) runBinary(ctx context.Context, args ...string) (*binaryRun, error) {
	return b.runBinaryEnv(ctx, nil, args...)
}

// runBinaryEnv is runBinary with env added to the bench's environment.
func (b *bench) runBinaryEnv(ctx context.Context, env []string, args ...string) (*binaryRun, error) {
	cmd := exec.CommandContext(ctx, b.bin, args...)
	cmd.Dir = b.ws.root
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var out bytes.Buffer
	errOut := &stampedLines{}
	cmd.Stdout, cmd.Stderr = &out, errOut
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("flightdeck %s: %w", strings.Join(args, " "), err)
	}
	hwm := make(chan int64, 1)
	stop := make(chan struct{})
	go func() { hwm <- watchHWM(cmd.Process.Pid, stop) }()
	err := cmd.Wait()
	wall := time.Since(start)
	close(stop)
	r := &binaryRun{started: start, wall: wall, vmHWM: <-hwm}
	if err != nil {
		return nil, fmt.Errorf("flightdeck %s: %v\n%s", strings.Join(args, " "), err, errOut.tail(10))
	}
	if len(args) > 0 && args[0] == "run" && slices.Contains(args, "--json") {
		r.rec = &results.RunRecord{}
		if err := json.Unmarshal(out.Bytes(), r.rec); err != nil {
			return nil, fmt.Errorf("flightdeck %s: run.json: %w", strings.Join(args, " "), err)
		}
		if err := b.checkRun(r.rec); err != nil {
			return nil, fmt.Errorf("flightdeck %s: %w", strings.Join(args, " "), err)
		}
	}
	return r, nil
}

// checkRun notes a run for reaping and checks that every trial passed.
func (b *bench) checkRun(rec *results.RunRecord) error {
	b.noteRun(rec.RunID)
	for _, t := range rec.Trials {
		if t.Outcome != "passed" {
			return fmt.Errorf("trial %s ended %s: %s", t.Trial, t.Outcome, t.Error)
		}
	}
	return nil
}

// watchHWM polls /proc/PID/status for VmHWM until stop is closed and
// returns the last value read (it only grows).
func watchHWM(pid int, stop <-chan struct{}) int64 { return watchProc(pid, stop).hwm }

func readHWM(pid int) (int64, bool) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			v, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return v, err == nil
		}
	}
	return 0, false
}

// cachedCount counts a run's trials served from the cache.
func cachedCount(rec *results.RunRecord) int {
	n := 0
	for _, t := range rec.Trials {
		if t.Cached {
			n++
		}
	}
	return n
}
