package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"

	"github.com/flightdeck/flightdeck/sandbox"
)

// Replay is a regrade's agent when the task grades the work dir itself (a
// native task, or a Harbor task whose verifier runs in the agent's
// container): it rebuilds the work dir as a recorded trial's agent left
// it, by applying that trial's diff.patch in the work dir as the agent's
// user, with git apply (patch -p1 where the image has no git, which
// cannot apply a binary change). Only the work dir is rebuilt: what the
// agent changed elsewhere, and the processes it left, are not.
//
// Its Result is the recorded agent phase's end (exit code, timeout,
// failure), so the regraded trial's outcome is read as the source's was.
type Replay struct {
	Patch    string // the recorded trial's diff.patch, a host file
	ExitCode *int
	TimedOut bool
	Failed   string
}

// ErrNotReplayed marks a recorded trial's work that could not be rebuilt
// in the work dir of the task as it is now: its patch does not apply (one
// recorded cut short is refused before the trial: runner's regrade
// refusal).
var ErrNotReplayed = errors.New("regrade: the recorded work could not be rebuilt")

// ReplayPatchPath is where the recorded patch is put in the container.
const ReplayPatchPath = "/tmp/flightdeck-regrade/diff.patch"

// Run applies the patch and returns the recorded end of the agent phase.
func (r Replay) Run(ctx context.Context, s *Session, _ string) (Result, error) {
	recorded := Result{ExitCode: r.ExitCode, TimedOut: r.TimedOut, Failed: r.Failed}
	data, err := os.ReadFile(r.Patch)
	if err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrNotReplayed, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return recorded, s.note("regrade: the recorded trial changed nothing in the work dir (" + r.Patch + " is empty)\n")
	}
	if s.Container == "" {
		return Result{}, fmt.Errorf("%w: no container to rebuild the work dir in", ErrNotReplayed)
	}
	dir, name := path.Split(ReplayPatchPath)
	if err := s.Engine.WriteFiles(ctx, s.Container, dir, []sandbox.File{{Path: name, Mode: 0o644, Data: data}}, sandbox.Owner{}); err != nil {
		return Result{}, fmt.Errorf("regrade: copy the recorded diff.patch into the container: %w", err)
	}
	script := `if command -v git >/dev/null 2>&1; then git apply --verbose --whitespace=nowarn "$1"
elif command -v patch >/dev/null 2>&1; then patch -p1 --forward <"$1"
else echo "neither git nor patch is in the image" >&2; exit 127; fi`
	out := filepath.Join(s.Scratch, "replay.out")
	res, failed, err := s.exec(ctx, "regrade: apply "+r.Patch, []string{"sh", "-c", script, "apply", ReplayPatchPath}, nil, out)
	switch {
	case err != nil:
		return Result{}, fmt.Errorf("regrade: apply the recorded diff.patch: %w", err)
	case failed != "":
		return Result{}, fmt.Errorf("%w: %s", ErrNotReplayed, failed)
	case res.TimedOut:
		return Result{}, fmt.Errorf("%w: applying %s ran into the agent's timeout", ErrNotReplayed, r.Patch)
	case res.ExitCode != 0:
		said, _ := os.ReadFile(out)
		return Result{}, fmt.Errorf("%w: %s does not apply to the work dir of the task as it now builds: %s (exit %d; %s)",
			ErrNotReplayed, r.Patch, lastLine(string(said)), res.ExitCode, s.LogPath)
	}
	return recorded, s.note("regrade: the work dir rebuilt from " + r.Patch + "; what the agent changed outside it, and the processes it left, are not\n")
}
