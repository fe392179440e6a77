package tasks

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// StepsDir holds a multi-step task's steps: steps/<name>/ with its
// instruction.md, tests/, solution/ and workdir/ (workdir/setup.sh runs
// before the step's agent).
const StepsDir = "steps"

// Multi-step reward strategies ([multi_step_reward_strategy]).
const (
	StrategyMean  = "mean"  // per key, the mean over the steps that were graded
	StrategyFinal = "final" // the last graded step's
)

// stepNameRE keeps a step's name a plain directory name.
var stepNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// StepDir is a step's directory, steps/<name>.
func (t *Task) StepDir(name string) string { return t.Path(StepsDir, name) }

// StepInstruction is a step's instruction.md, verbatim.
func (t *Task) StepInstruction(name string) (string, error) {
	b, err := readRegular(filepath.Join(t.StepDir(name), InstructionFile))
	if err != nil {
		return "", fmt.Errorf("step %s: %w", name, err)
	}
	return string(b), nil
}

// Strategy is the task's multi-step reward strategy (mean by default).
func (t *Task) Strategy() string {
	if t.Config.MultiStepRewardStrategy == "" {
		return StrategyMean
	}
	return t.Config.MultiStepRewardStrategy
}

// MinRewards is a step's min_reward as thresholds by reward key (a number
// gates "reward"); nil when the step has none.
func (s StepConfig) MinRewards() map[string]float64 {
	m, _ := minRewards(s.MinReward)
	return m
}

func minRewards(raw any) (map[string]float64, error) {
	num := func(v any) (float64, bool) {
		switch n := v.(type) {
		case int64:
			return float64(n), true
		case float64:
			return n, !math.IsNaN(n)
		}
		return 0, false
	}
	switch v := raw.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		out := map[string]float64{}
		for k, x := range v {
			n, ok := num(x)
			if !ok {
				return nil, fmt.Errorf("min_reward.%s must be a number", k)
			}
			out[k] = n
		}
		return out, nil
	default:
		n, ok := num(v)
		if !ok {
			return nil, fmt.Errorf("min_reward must be a number or a table of numbers")
		}
		return map[string]float64{"reward": n}, nil
	}
}

// checkSteps checks [[steps]]: Harbor tasks only (a native task's grader
// has no per-step semantics), each step named as a directory with its
// instruction, and what flightdeck does not run refused.
func (v *validation) checkSteps(dir string) {
	c := &v.cfg
	if len(c.Steps) == 0 {
		if c.MultiStepRewardStrategy != "" {
			v.errorf(TaskFile, "multi_step_reward_strategy", "steps", "is set but the task has no [[steps]]")
		}
		return
	}
	if c.Flightdeck.Grader != nil {
		v.errorf(TaskFile, "[[steps]]", "steps",
			"multi-step tasks are graded Harbor's way: a flightdeck-native task ([flightdeck.grader]) has no per-step grading")
		return
	}
	switch c.MultiStepRewardStrategy {
	case "", StrategyMean, StrategyFinal:
	default:
		v.errorf(TaskFile, "multi_step_reward_strategy", "steps", "must be %q or %q (found %q)", StrategyMean, StrategyFinal, c.MultiStepRewardStrategy)
	}
	var seen []string
	for i, s := range c.Steps {
		field := fmt.Sprintf("[[steps]][%d]", i)
		if !stepNameRE.MatchString(s.Name) {
			v.errorf(TaskFile, field+".name", "steps", "must be a plain directory name (letters, digits, . _ -), found %q", s.Name)
			continue
		}
		if slices.Contains(seen, s.Name) {
			v.errorf(TaskFile, field+".name", "steps", "%q names two steps", s.Name)
			continue
		}
		seen = append(seen, s.Name)
		if _, err := minRewards(s.MinReward); err != nil {
			v.errorf(TaskFile, field, "steps", "%v", err)
		}
		if s.Healthcheck != nil && strings.TrimSpace(s.Healthcheck.Command) == "" {
			v.errorf(TaskFile, field+".healthcheck.command", "steps", "missing: a step's healthcheck needs a command")
		}
		if _, err := parseArtifacts(s.RawArtifacts); err != nil {
			v.errorf(TaskFile, field+".artifacts", "steps", "%v", err)
		}
		for j, h := range s.Verifier.Collect {
			if strings.TrimSpace(h.Command) == "" {
				v.errorf(TaskFile, fmt.Sprintf("%s.verifier.collect #%d.command", field, j+1), "verifier.collect", "missing: the command to run")
			}
		}
		if !fileExists(filepath.Join(dir, StepsDir, s.Name, InstructionFile)) {
			v.errorf(filepath.Join(StepsDir, s.Name, InstructionFile), "", "steps", "missing: step %q needs its instruction", s.Name)
		}
		v.checkStepVerifier(dir, field, &c.Steps[i])
	}
}

// checkStepVerifier checks how a step is verified: in the agent's
// container, by the step's tests/test.sh or else the task's; or, separate,
// by an image with /tests/test.sh of its own, built from the step's tests/
// (else the task's) or named by the step's verifier environment.
func (v *validation) checkStepVerifier(dir, field string, s *StepConfig) {
	c := &v.cfg
	switch s.Verifier.EnvironmentMode {
	case "", "separate":
	case "shared":
		if s.Verifier.Environment != nil {
			v.errorf(TaskFile, field+".verifier.environment", "verifier.separate",
				"a verifier environment makes no sense with environment_mode = \"shared\" (the verifier runs in the agent's container): remove one")
		}
	default:
		v.errorf(TaskFile, field+".verifier.environment_mode", "verifier.separate", "want \"shared\" or \"separate\", found %q", s.Verifier.EnvironmentMode)
		return
	}
	if !stepSeparate(c, s) {
		if !fileExists(filepath.Join(dir, StepsDir, s.Name, TestsDir, "test.sh")) && !fileExists(filepath.Join(dir, TestsDir, "test.sh")) {
			v.errorf(filepath.Join(StepsDir, s.Name, TestsDir, "test.sh"), "", "steps", "missing: step %q has no test.sh and the task has no tests/test.sh", s.Name)
		}
		return
	}
	ctx := filepath.Join(StepsDir, s.Name, TestsDir)
	if !dirExists(filepath.Join(dir, ctx)) {
		ctx = TestsDir
	}
	env := stepVerifierEnv(c, s)
	if env.DockerImage == "" && !fileExists(filepath.Join(dir, ctx, "Dockerfile")) {
		v.errorf(TaskFile, field+".verifier", "verifier.separate",
			"step %q's verifier is separate and needs an image: %s/Dockerfile (built with %s/ as its context, owning /tests) or a docker_image in its verifier environment",
			s.Name, filepath.ToSlash(ctx), filepath.ToSlash(ctx))
	}
	if env.GPUs > 0 {
		v.errorf(TaskFile, field+".verifier.environment.gpus", "gpus",
			"GPUs are not supported: flightdeck runs tasks on local engines without GPUs (found %d)", env.GPUs)
	}
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
