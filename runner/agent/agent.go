package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/flightdeck/flightdeck/runner/suite"
)

// Agent is one kind of agent a variant names: it does the trial's work in
// a session's container and work dir.
type Agent interface {
	Run(ctx context.Context, s *Session, instruction string) (Result, error)
}

// forVariant is the agent a variant names.
func forVariant(v suite.Variant) (Agent, error) {
	switch v.Agent {
	case suite.AgentNop:
		return Nop{}, nil
	case suite.AgentOracle:
		return Oracle{}, nil
	case suite.AgentDeterministic:
		return Deterministic{Script: v.Script}, nil
	case suite.AgentCommand:
		return Command{}, nil
	case suite.AgentAttack:
		return Attack{Name: v.Attack}, nil
	}
	return nil, fmt.Errorf("variant %s: unknown agent %q", v.Name, v.Agent)
}

// Nop does nothing.
type Nop struct{}

// Run notes in agent.log that the agent does nothing.
func (Nop) Run(_ context.Context, s *Session, _ string) (Result, error) {
	return Result{}, s.note("nop: the agent does nothing\n")
}

// Oracle replays the task's solution/deterministic.json when it has one,
// else runs solution/solve.sh, else applies solution/reference.patch (a
// variant's Patch applies the patch whatever else the task has).
type Oracle struct{}

// ReferencePatch is a solution as a patch of the work dir.
const ReferencePatch = "reference.patch"

// Run runs the task's solution (with the image's copies of its outputs
// hidden, for task verify's oracle-hidden run).
func (o Oracle) Run(ctx context.Context, s *Session, instruction string) (Result, error) {
	if s.Trial.Variant.HideAnswers {
		return s.hideAnswers(ctx, func() (Result, error) { return o.run(ctx, s) })
	}
	return o.run(ctx, s)
}

func (Oracle) run(ctx context.Context, s *Session) (Result, error) {
	dir := s.solutionDir()
	if s.Trial.Variant.Patch {
		return s.applyPatch(ctx)
	}
	script := filepath.Join(dir, "deterministic.json")
	if _, err := os.Stat(script); err == nil {
		return s.replay(ctx, script)
	}
	if !exists(filepath.Join(dir, "solve.sh")) && exists(filepath.Join(dir, ReferencePatch)) {
		return s.applyPatch(ctx)
	}
	return s.solve(ctx)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Deterministic replays a deterministic.json, the variant's script:.
type Deterministic struct {
	Script string // absolute path
}

// Run replays the script.
func (d Deterministic) Run(ctx context.Context, s *Session, _ string) (Result, error) {
	return s.replay(ctx, d.Script)
}

// Command runs the variant's command: line in the agent's container.
type Command struct{}

// Run runs the command with the instruction.
func (Command) Run(ctx context.Context, s *Session, instruction string) (Result, error) {
	return s.command(ctx, instruction)
}
