package grader

import "errors"

// Outcome is how a trial ended, as results record it.
type Outcome string

// The trial outcomes.
const (
	// OutcomePassed: the grade's reward is 1 (or more).
	OutcomePassed Outcome = "passed"
	// OutcomeFailed: a product failure — a reward below 1, or no readable
	// reward. A missing or malformed reward is the product's failure, never
	// an infrastructure error: an agent must not escape grading by breaking
	// the grader.
	OutcomeFailed Outcome = "failed"
	// OutcomeAgentTimeout: the agent phase hit its timeout.
	OutcomeAgentTimeout Outcome = "agent_timeout"
	// OutcomeVerifierTimeout: the grade phase hit its timeout.
	OutcomeVerifierTimeout Outcome = "verifier_timeout"
	// OutcomeInfraError: the build failed, the engine failed or a container
	// died; retried, and kept out of pass rates.
	OutcomeInfraError Outcome = "infra_error"
	// OutcomeTaskError: the task's own defect, whoever the agent: its image
	// does not build from its Dockerfile, its verifier wrote a reward that
	// does not parse, or it wrote none where no agent's work can be the
	// cause (the task's own oracle, or nop, which does nothing). Kept out of
	// pass rates, held to no expectation, and never retried: it would fail
	// the same way again.
	OutcomeTaskError Outcome = "task_error"
	// OutcomeRefused: the task cannot run here (the runner refused it when
	// loading it: GPUs, Windows, what task check calls an error, ...); nothing ran. Like an
	// infrastructure error it is kept out of every rate, and never retried.
	OutcomeRefused Outcome = "refused"
	// OutcomeNeedsInput: the agent asked a question the task's answers do
	// not cover (or one past their bound); its phase ended there and the
	// trial was not graded. A cancelled trial, as hangar models it: kept
	// out of every rate, and never retried.
	OutcomeNeedsInput Outcome = "needs_input"
)

// Ungraded reports whether a trial of that outcome has no grade that counts
// and is left out of every rate: an infrastructure error, a task's own
// defect, a refused task or one that needs input.
func (o Outcome) Ungraded() bool {
	return o == OutcomeInfraError || o == OutcomeTaskError || o == OutcomeRefused || o == OutcomeNeedsInput
}

// Outcome classifies a completed grade: verifier_timeout when the grader
// command timed out, passed when the reward is at least 1, failed otherwise
// (including a missing or unreadable reward). It knows nothing of the agent
// phase: the runner decides agent_timeout, and a non-nil error from Run is
// infra_error.
func (g Grade) Outcome() Outcome {
	switch {
	case g.TimedOut:
		return OutcomeVerifierTimeout
	case g.Reward != nil && g.Reward.Value >= 1:
		return OutcomePassed
	default:
		return OutcomeFailed
	}
}

// SpecOutcome is a trial's outcome class for comparisons between variants,
// as the spec's "Outcomes" section defines it (after ai-dlc's
// ArmReport.outcome).
type SpecOutcome string

// The outcome classes.
const (
	// SpecPassed: the grade resolved (reward ≥ 1) and every applicable spec passed.
	SpecPassed SpecOutcome = "passed"
	// SpecProduct: an unresolved grade (reward below 1).
	SpecProduct SpecOutcome = "product"
	// SpecWorkflowViolation: the grade resolved but a workflow spec failed.
	SpecWorkflowViolation SpecOutcome = "workflow-violation"
	// SpecUnavailable: a missing grade or a spec without a verdict; it never passes.
	SpecUnavailable SpecOutcome = "unavailable"
	// SpecInfraError: an infrastructure failure, excluded from comparisons.
	SpecInfraError SpecOutcome = "infra_error"
	// SpecRefused: a refused task, excluded from comparisons.
	SpecRefused SpecOutcome = "refused"
	// SpecTaskError: the task's own defect, excluded from comparisons.
	SpecTaskError SpecOutcome = "task_error"
	// SpecNeedsInput: the agent asked what the task does not answer,
	// excluded from comparisons.
	SpecNeedsInput SpecOutcome = "needs_input"
)

// Meaning says what an outcome class means, for a legend beside it.
func (c SpecOutcome) Meaning() string {
	switch c {
	case SpecPassed:
		return "the grade resolved (reward 1) and every spec passed"
	case SpecProduct:
		return "the work did not pass its tests: reward below 1 (the grade did not resolve), whoever did it, the oracle included"
	case SpecWorkflowViolation:
		return "the grade resolved, but a workflow spec failed"
	case SpecUnavailable:
		return "no verdict: no reward was read, or a spec has no verdict yet; never counts as passed"
	case SpecInfraError:
		return "the infrastructure failed; left out of rates"
	case SpecRefused:
		return "not run: its files, its dataset's pin or this host refused it (the reason is listed); left out of rates"
	case SpecTaskError:
		return "the task's own defect; left out of rates"
	case SpecNeedsInput:
		return "the agent asked what the task does not answer; left out of rates"
	}
	return ""
}

// TrialOutcome classifies a trial for comparisons. The rules apply in order:
//
//  1. outcome infra_error → infra_error, task_error → task_error, refused →
//     refused, needs_input → needs_input (all excluded from rates);
//  2. no reward (nil: missing, unreadable, or a timed-out grader that wrote
//     none) → unavailable;
//  3. a reward below 1 → product;
//  4. any failing spec verdict → workflow-violation;
//  5. any unknown spec verdict (pending, or judged without evidence) → unavailable;
//  6. otherwise passed.
//
// So a product failure outranks a workflow violation, and unknown never passes.
func TrialOutcome(outcome Outcome, reward *Reward, verdicts []Verdict) SpecOutcome {
	switch outcome {
	case OutcomeInfraError:
		return SpecInfraError
	case OutcomeRefused:
		return SpecRefused
	case OutcomeTaskError:
		return SpecTaskError
	case OutcomeNeedsInput:
		return SpecNeedsInput
	}
	if reward == nil {
		return SpecUnavailable
	}
	if reward.Value < 1 {
		return SpecProduct
	}
	unknown := false
	for _, v := range verdicts {
		switch v.Status {
		case StatusFail:
			return SpecWorkflowViolation
		case StatusPass:
		default:
			unknown = true
		}
	}
	if unknown {
		return SpecUnavailable
	}
	return SpecPassed
}

// TaskDefect reports whether a grade without a reward shows the task's own
// defect rather than the agent's failure. A reward file that is there but
// does not parse was written by the task's verifier: the task's, unless the
// agent changed the verifier's machinery (tampered) and no agent's work can
// be ruled out. A missing reward is the task's only where no agent's work
// can be the cause (noAgentWork: the task's own oracle, or nop, which does
// nothing). Elsewhere the agent may have broken the tests' inputs, and the
// trial fails: an agent must not escape grading by breaking the grader.
func (g Grade) TaskDefect(noAgentWork, tampered bool) bool {
	if g.Reward != nil || g.TimedOut || g.RewardErr == nil {
		return false
	}
	var re *RewardError
	if !errors.As(g.RewardErr, &re) {
		return false
	}
	switch re.Kind {
	case RewardEmpty, RewardMalformed, RewardNonNumeric, RewardNotFinite, RewardOversized, RewardNotRegular:
		return noAgentWork || !tampered
	case RewardMissing:
		return noAgentWork
	}
	return false
}
