package grader

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"

	fsfiles "github.com/flightdeck/flightdeck/internal/files"
	"github.com/flightdeck/flightdeck/internal/vtrace"
	"github.com/flightdeck/flightdeck/sandbox"
)

// TraceFile is what a traced grade leaves in TrialDir: one JSON line per
// file the verifier's processes executed or opened (internal/vtrace).
const TraceFile = "vtrace.jsonl"

// Where the tracer goes in the grading container, and where it writes:
// the reward dir, which reaches the host in every model (a mount, or the
// live copy out).
const (
	traceDir  = "/tmp/.flightdeck-vtrace"
	traceName = ".flightdeck-vtrace.jsonl"
)

// traceExe is the tracer's name in the container: flightdeck's own
// executable dispatches on its first argument whatever it is called, and a
// test binary of the CLI on its name.
const traceExe = "flightdeck"

// startTrace copies the tracer into the container and wraps the grader's
// command in it.
func (p *plan) startTrace(ctx context.Context, eng sandbox.Engine, id string) error {
	tmp, err := os.MkdirTemp("", "flightdeck-vtrace-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	exe := filepath.Join(tmp, traceExe)
	if err := linkOrCopy(p.trace, exe); err != nil {
		return fmt.Errorf("ready the tracer %s: %w", p.trace, err)
	}
	if err := eng.CopyIn(ctx, id, tmp, traceDir, sandbox.Owner{}); err != nil {
		return fmt.Errorf("copy the tracer into %s: %w", p.what, err)
	}
	p.exec.Cmd = append([]string{path.Join(traceDir, traceExe), vtrace.Command, path.Join(p.rewardMount, traceName), "--"}, p.exec.Cmd...)
	return nil
}

// keepTrace moves the trace out of the reward dir, where the verifier's
// files are, to TrialDir.
func (p *plan) keepTrace() error {
	from := filepath.Join(p.rewardDir, traceName)
	err := os.Rename(from, filepath.Join(filepath.Dir(p.rewardDir), TraceFile))
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("the tracer wrote no %s (grader.log says why)", traceName)
	}
	return err
}

// linkOrCopy links the tracer in, or copies it, executable.
func linkOrCopy(from, to string) error {
	if os.Link(from, to) == nil {
		return nil
	}
	return fsfiles.CopyFile(from, to, 0o755)
}
