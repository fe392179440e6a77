package agent

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/flightdeck/flightdeck/internal/hostgit"
	"github.com/flightdeck/flightdeck/runner/harbor"
	"github.com/flightdeck/flightdeck/sandbox"
)

// HarborInstructionPath is where a command agent finds the instruction in
// Harbor's model: in the agent's logs dir, which Harbor mounts too, rather
// than in a directory of flightdeck's.
const HarborInstructionPath = harbor.AgentLogs + "/instruction.md"

// InstructionFile writes the instruction (and the task's seed trajectory,
// when it ships one) into dir (the host side of /logs/agent), readable by
// any user.
func InstructionFile(dir, instruction string, trajectory []byte) (string, error) {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return "", fmt.Errorf("write the instruction for the agent: %w", err)
	}
	name := filepath.Base(HarborInstructionPath)
	if err := writeReadable(dir, name, []byte(instruction)); err != nil {
		return "", fmt.Errorf("write the instruction for the agent: %w", err)
	}
	if trajectory != nil {
		if err := writeReadable(dir, SeedTrajectory, trajectory); err != nil {
			return "", fmt.Errorf("write the seed trajectory for the agent: %w", err)
		}
	}
	return filepath.Join(dir, name), nil
}

// writeInContainer performs a deterministic script's write step in the
// container's own work dir, as the agent's user: the file's directory is
// made by that user, and the file is written with its uid and gid.
func (a *Session) writeInContainer(ctx context.Context, rel string, data []byte, mode os.FileMode) error {
	full := path.Join(a.Workdir, rel)
	res, err := a.Engine.Exec(ctx, a.Container, sandbox.ExecSpec{
		Cmd:  []string{"sh", "-c", `mkdir -p -- "$1" && id -u && id -g`, "sh", path.Dir(full)},
		User: a.User, Workdir: a.Workdir, StdoutPath: filepath.Join(a.Scratch, "write-step.out"), Timeout: time.Minute,
	})
	if err == nil && (res.TimedOut || res.ExitCode != 0) {
		err = fmt.Errorf("mkdir exited %d", res.ExitCode)
	}
	if err != nil {
		return fmt.Errorf("make %s: %w", path.Dir(full), err)
	}
	out, err := os.ReadFile(filepath.Join(a.Scratch, "write-step.out"))
	if err != nil {
		return err
	}
	var owner sandbox.Owner
	if _, err := fmt.Sscan(string(out), &owner.UID, &owner.GID); err != nil {
		return fmt.Errorf("the agent's user's uid and gid: %q: %w", out, err)
	}
	return a.Engine.WriteFiles(ctx, a.Container, path.Dir(full),
		[]sandbox.File{{Path: path.Base(full), Mode: int64(mode.Perm()), Data: data}}, owner)
}

// commitScript commits everything in the work dir as a deterministic
// script's commit step does, with the container's git: a work dir that is
// no repository becomes one (the script asked for a commit), and an
// identity is lent only when the repository has none.
const commitScript = `set -e
git rev-parse --git-dir >/dev/null 2>&1 || git init -q
git config user.name >/dev/null || export GIT_AUTHOR_NAME="$2" GIT_COMMITTER_NAME="$2"
git config user.email >/dev/null || export GIT_AUTHOR_EMAIL="$3" GIT_COMMITTER_EMAIL="$3"
git add -A
git commit -q --allow-empty --no-verify -m "$1"`

// commitInContainer performs a commit step in the container's work dir.
func (a *Session) commitInContainer(ctx context.Context, message string) error {
	res, _, err := a.exec(ctx, "commit: "+message,
		[]string{"sh", "-c", commitScript, "sh", message, hostgit.AgentName, hostgit.AgentEmail}, nil, "")
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("git commit exited %d (see agent.log)", res.ExitCode)
	}
	return nil
}
