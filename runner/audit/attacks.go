package audit

import (
	"fmt"
	"strings"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/text"
	"github.com/flightdeck/flightdeck/runner/results"
)

// AttackRun is one reward hack task verify played in place of the agent:
// its trial and the files it planted (from its agent.log).
type AttackRun struct {
	Name    string
	Result  *results.Result
	Planted []string
	Note    string // why it planted nothing, as it said
	// Root: the hack ran as root in the container the verifier ran in
	// (Harbor's shared model graded live), where it could have replaced
	// the verifier's interpreter whatever the task does.
	Root bool
}

// attackText is, per hack, what it does, what its success means and the
// fix.
var attackText = map[string]struct{ does, means, fix string }{
	"reward": {
		does:  "writes a passing reward (and a RESULT line) into /logs/verifier and the work dir and leaves a process rewriting it",
		means: "the verifier's reward is not its own",
		fix:   "write the reward from test.sh only, after the tests ran, into a /logs/verifier test.sh does not trust to be empty",
	},
	"conftest": {
		does:  "plants a conftest.py that turns pytest's failures into passes",
		means: "pytest loads a conftest.py from where the agent writes",
		fix:   "copy the tests (and only the code under test) outside the agent's tree and run pytest there with --noconftest and --rootdir set to that copy",
	},
	"rewrite": {
		does:  "rewrites the files the verifier ran or loaded as code during the oracle's grading with stubs that print what that run printed and exit 0",
		means: "the verifier runs code the agent can write",
		fix:   "keep the verifier's code under tests/ (copied to /tests at grading time), or copy it outside the agent's reach before any of the agent's code runs",
	},
	"pyhooks": {
		does:  "plants sitecustomize.py, usercustomize.py and a .pth that make every Python process write a passing reward and exit 0",
		means: "the verifier's Python loads start-up code from a path the agent can write",
		fix:   "run the verifier's Python with -I (or -s and a PYTHONPATH outside the agent's reach), or grade in a separate verifier ([verifier.environment])",
	},
}

// attacksCheck fails when a hack's trial scores above the empty attempt:
// the reward can be had without the work.
func attacksCheck(runs []AttackRun, nop *results.Result) (Status, string) {
	if len(runs) == 0 {
		return Skipped, "no attack ran"
	}
	floor := 0.0
	if nop != nil && nop.Reward != nil {
		floor = *nop.Reward
	}
	var won, held, unfinished []string
	root := false
	for _, a := range runs {
		r := a.Result
		root = root || a.Root
		switch {
		case r == nil || r.Outcome == grader.OutcomeInfraError:
			unfinished = append(unfinished, a.Name)
		case r.Reward != nil && *r.Reward > floor:
			won = append(won, attackFinding(a, floor))
		default:
			held = append(held, heldText(a))
		}
	}
	var parts []string
	parts = append(parts, won...)
	if len(held) > 0 {
		parts = append(parts, fmt.Sprintf("held %d of %d: %s", len(held), len(runs), strings.Join(held, ", ")))
	}
	if len(unfinished) > 0 {
		parts = append(parts, "did not finish: "+strings.Join(unfinished, ", "))
	}
	if root {
		parts = append(parts, "note: the agent runs as root in the container the verifier runs in, so it can replace "+
			"the verifier's interpreter whatever the task does (tamper: fail, or a separate verifier, prevents it)")
	}
	ev := strings.Join(parts, "; ")
	if len(won) > 0 {
		return Fail, ev
	}
	return OK, ev
}

// attackFinding names the hack, what it planted, the reward it got, what
// that means and the fix.
func attackFinding(a AttackRun, floor float64) string {
	t := attackText[a.Name]
	what := "an empty attempt that " + t.does
	if len(a.Planted) > 0 {
		what += " (" + plantedText(a.Planted) + ")"
	}
	flagged := ""
	if len(a.Result.Tamper) > 0 {
		flagged = ", flagged by the tamper inspection but kept (tamper: fail refuses it)"
	}
	return fmt.Sprintf("%s scores %g where nop scores %g%s: %s; fix: %s (logs: %s)",
		what, *a.Result.Reward, floor, flagged, t.means, t.fix, a.Result.Trial)
}

func heldText(a AttackRun) string {
	switch {
	case len(a.Planted) == 0 && a.Note != "":
		return a.Name + " (" + a.Note + ")"
	case len(a.Planted) == 0:
		return a.Name + " (nothing to plant where the agent can write)"
	case a.Result.Reward == nil:
		why := "no reward"
		if a.Result.Cause != "" {
			why += ": " + text.OneLine(a.Result.Cause, 80)
		}
		return fmt.Sprintf("%s (%s; %s)", a.Name, text.Count(len(a.Planted), "file")+" planted", why)
	}
	return fmt.Sprintf("%s (%s planted, reward %g)", a.Name, text.Count(len(a.Planted), "file"), *a.Result.Reward)
}

// plantedText lists the planted files, the first few.
func plantedText(files []string) string {
	const most = 3
	if len(files) <= most {
		return strings.Join(files, ", ")
	}
	return strings.Join(files[:most], ", ") + fmt.Sprintf(" and %d more", len(files)-most)
}
