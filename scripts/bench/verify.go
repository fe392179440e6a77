package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"time"
)

// verifyFigures are `task verify` of the Harbor bench task, the whole
// process in a fresh results dir: with every check, without the attacks
// (--skip attacks: its traced oracle still runs for leaks), and without
// the attacks or leaks (--skip attacks,leaks: no traced oracle, the checks
// as they were before either).
type verifyFigures struct {
	full, noAttacks, before samples
}

// verifyConfigs are the --skip of each figure, in verifyFigures' order.
var verifyConfigs = []string{"", "attacks", "attacks,leaks"}

// verifyRuns times each configuration reps times, interleaved. A verify
// that reports findings (exit 1: the bench task's tests are weak on
// purpose) is a finished run; any other failure is the bench's.
func (b *bench) verifyRuns(ctx context.Context, reps int) (*verifyFigures, error) {
	f := &verifyFigures{}
	out := []*samples{&f.full, &f.noAttacks, &f.before}
	for i := 0; i < reps; i++ {
		for c, skip := range verifyConfigs {
			dir, err := b.ws.freshResults("verify")
			if err != nil {
				return nil, err
			}
			args := []string{"task", "verify", "--results", dir}
			if skip != "" {
				args = append(args, "--skip", skip)
			}
			args = append(args, b.ws.harbor)
			cmd := exec.CommandContext(ctx, b.bin, args...)
			cmd.Dir = b.ws.root
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			start := time.Now()
			err = cmd.Run()
			wall := time.Since(start)
			var exit *exec.ExitError
			if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
				return nil, fmt.Errorf("task verify --skip %q: %v\n%s", skip, err, lastBytes(stderr.Bytes(), 2000))
			}
			*out[c] = append(*out[c], wall.Seconds())
		}
		b.logf("task verify: round %d of %d", i+1, reps)
	}
	return f, nil
}

func lastBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
