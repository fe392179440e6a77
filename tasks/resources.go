package tasks

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Instruction is instruction.md, verbatim.
func (t *Task) Instruction() (string, error) {
	b, err := readRegular(t.Path(InstructionFile))
	if err != nil {
		return "", fmt.Errorf("read instruction of %s: %w", t.ID, err)
	}
	return string(b), nil
}

// Trajectory is the seed trajectory the task ships beside instruction.md
// (trajectory.json), or nil when it ships none.
func (t *Task) Trajectory() ([]byte, error) {
	b, err := readRegular(t.Path(TrajectoryFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the seed trajectory of %s: %w", t.ID, err)
	}
	return b, nil
}

// MemoryBytes is the memory limit: [environment].memory_mb, else the older
// memory ("2G", "512M", "1024K"), in bytes; 0 means unset.
func (t *Task) MemoryBytes() (int64, error) {
	env := t.Config.Environment
	if env.MemoryMB > 0 {
		return env.MemoryMB << 20, nil
	}
	if env.Memory == "" {
		return 0, nil
	}
	mb, err := parseSizeMB(env.Memory)
	if err != nil {
		return 0, fmt.Errorf("%s: [environment].memory: %w", t.Path(TaskFile), err)
	}
	return mb << 20, nil
}

// NanoCPUs is [environment].cpus in units of 1e-9 CPUs; 0 means unset.
func (t *Task) NanoCPUs() int64 {
	if t.Config.Environment.CPUs <= 0 {
		return 0
	}
	return int64(math.Round(t.Config.Environment.CPUs * 1e9))
}

// HasSolution reports whether the task has an oracle: solution/solve.sh
// (Harbor's) or solution/deterministic.json (the deterministic agent's
// script), or, in a multi-step task, a step's solution/solve.sh.
func (t *Task) HasSolution() bool {
	regular := func(p string) bool {
		info, err := os.Lstat(p)
		return err == nil && info.Mode().IsRegular()
	}
	for _, name := range []string{"solve.sh", "deterministic.json"} {
		if regular(t.Path(SolutionDir, name)) {
			return true
		}
	}
	for _, s := range t.Config.Steps {
		if regular(filepath.Join(t.StepDir(s.Name), SolutionDir, "solve.sh")) {
			return true
		}
	}
	return false
}

// parseSizeMB reads a size as Harbor does: a number followed by G, M or K
// (binary units, case-insensitive), in whole megabytes ("2G" is 2048).
func parseSizeMB(s string) (int64, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	mult := 0.0
	switch {
	case strings.HasSuffix(u, "G"):
		mult = 1024
	case strings.HasSuffix(u, "M"):
		mult = 1
	case strings.HasSuffix(u, "K"):
		mult = 1.0 / 1024
	}
	if mult == 0 || len(u) < 2 {
		return 0, fmt.Errorf("size %q: want a number and a unit, like \"2G\" or \"512M\"", s)
	}
	f, err := strconv.ParseFloat(u[:len(u)-1], 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) || f*mult > math.MaxInt64>>20 {
		return 0, fmt.Errorf("size %q: want a number and a unit, like \"2G\" or \"512M\"", s)
	}
	return int64(f * mult), nil
}
