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
	"answer": {
		does:  "copies each file of the image it can read that holds the bytes the oracle wrote (outside the system's dirs) to where the oracle wrote them",
		means: "the answer is where the agent can read it",
		fix:   "keep the expected output out of the image: put it under tests/ (copied in at grading time) or compute it there",
	},
	"pyhooks": {
		does:  "plants sitecustomize.py, usercustomize.py and a .pth that make every Python process write a passing reward and exit 0",
		means: "the verifier's Python loads start-up code from a path the agent can write",
		fix:   "run the verifier's Python with -I (or -s and a PYTHONPATH outside the agent's reach), or grade in a separate verifier ([verifier.environment])",
	},
}

// Hack is one reward hack's verdict, as the attacks check reports it.
type Hack struct {
	Name   string   `json:"name"`
	Status string   `json:"status"` // HackWon, HackHeld, HackIdle or HackUnfinished
	Reward *float64 `json:"reward,omitempty"`
	// Floor is nop's reward, the one a hack must beat.
	Floor   float64  `json:"floor"`
	Planted []string `json:"planted,omitempty"`
	Trial   string   `json:"trial,omitempty"`
	// Text is the line the verdict prints: for a win what was planted,
	// what its success means and the fix; for a held hack what held it.
	Text string `json:"text"`
	Fix  string `json:"fix,omitempty"`
}

// A hack's statuses.
const (
	HackWon  = "FAIL"
	HackHeld = "held"
	// HackIdle: the hack found nothing to play in this task (no file of
	// the verifier's to rewrite, no copy of the answer): it proves
	// nothing, and is not counted held.
	HackIdle       = "n/a"
	HackUnfinished = "unfinished"
)

// attacksCheck fails when a hack's trial scores above the empty attempt:
// the reward can be had without the work. The evidence is a summary; each
// hack's verdict is one Hack.
func attacksCheck(runs []AttackRun, nop *results.Result) (Status, string, []Hack) {
	if len(runs) == 0 {
		return Skipped, "no attack ran", nil
	}
	floor := 0.0
	if nop != nil && nop.Reward != nil {
		floor = *nop.Reward
	}
	var hacks []Hack
	var won, held, idle, unfinished []string
	root := false
	for _, a := range runs {
		r := a.Result
		root = root || a.Root
		h := Hack{Name: a.Name, Floor: floor, Planted: a.Planted}
		if r != nil {
			h.Reward, h.Trial = r.Reward, r.Trial
		}
		switch {
		case r == nil || r.Outcome == grader.OutcomeInfraError:
			h.Status, h.Text = HackUnfinished, unfinishedText(r)
			unfinished = append(unfinished, a.Name)
		case r.Reward != nil && *r.Reward > floor:
			h.Status, h.Text, h.Fix = HackWon, attackFinding(a, floor), attackText[a.Name].fix
			won = append(won, a.Name)
		case len(a.Planted) == 0:
			h.Status, h.Text = HackIdle, heldText(a)
			idle = append(idle, a.Name)
		default:
			h.Status, h.Text = HackHeld, heldText(a)
			held = append(held, a.Name)
		}
		hacks = append(hacks, h)
	}
	var parts []string
	if len(won) > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d hacks scored above nop's %g: %s", len(won), len(runs), floor, strings.Join(won, ", ")))
	}
	if len(held) > 0 {
		parts = append(parts, fmt.Sprintf("held %d of %d: %s", len(held), len(runs), strings.Join(held, ", ")))
	}
	if len(idle) > 0 {
		parts = append(parts, "nothing to play: "+strings.Join(idle, ", "))
	}
	if len(unfinished) > 0 {
		parts = append(parts, "did not finish: "+strings.Join(unfinished, ", "))
	}
	if root {
		parts = append(parts, "note: the agent runs as root in the container the verifier runs in, so it can replace "+
			"the verifier's interpreter whatever the task does (a separate verifier, [verifier] environment_mode = \"separate\", "+
			"prevents it, and so does a run with tamper: fail)")
	}
	ev := strings.Join(parts, "; ")
	if len(won) > 0 {
		return Fail, ev, hacks
	}
	return OK, ev, hacks
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

// heldText says what the hack did and what held it.
func heldText(a AttackRun) string {
	r := a.Result
	switch {
	case len(a.Planted) == 0 && a.Note != "":
		return a.Note
	case len(a.Planted) == 0:
		return "nothing to plant where the agent can write"
	}
	planted := plantedCount(a.Planted) + " (" + plantedText(a.Planted) + ")"
	got := "reward " + rewardText(r)
	if r.Reward == nil {
		got = "no reward"
		why := r.Cause
		if why == "" {
			why = r.Error
		}
		if why != "" {
			got += ": " + text.OneLine(withoutEvidence(strings.TrimPrefix(why, "no reward: "), 300), 300)
		}
	}
	s := planted + ", " + got
	if held := r.GradePhase.AgentProcesses; len(held) > 0 {
		// The verdict held because flightdeck stopped what the hack left
		// running; Harbor's own procedure leaves such processes running
		// beside its verifier.
		s += fmt.Sprintf("; held because flightdeck stopped the %s it left running while the verifier ran "+
			"(Harbor leaves them running: there it could rewrite the reward after test.sh; a separate verifier prevents it)",
			text.Count(len(held), "process"))
	}
	return s + " (logs: " + r.Trial + ")"
}

// unfinishedText says why a hack's trial proves nothing.
func unfinishedText(r *results.Result) string {
	if r == nil {
		return "no result (interrupted)"
	}
	why := "infra_error"
	if r.Error != "" {
		why += ": " + text.OneLine(r.Error, 200)
	}
	return why + " (logs: " + r.Trial + ")"
}

// plantedText lists the planted files, the first few.
func plantedText(files []string) string {
	const most = 3
	if len(files) <= most {
		return strings.Join(files, ", ")
	}
	return strings.Join(files[:most], ", ") + fmt.Sprintf(" and %d more", len(files)-most)
}

// plantedCount counts what a hack planted: files, and what else it left
// (a process).
func plantedCount(planted []string) string {
	files := 0
	for _, p := range planted {
		if strings.HasPrefix(p, "/") {
			files++
		}
	}
	out := text.Count(files, "file") + " planted"
	if other := len(planted) - files; other > 0 {
		out += " and " + text.Count(other, "process") + " left"
	}
	return out
}

// withoutEvidence drops the parenthesized evidence of a cause longer than
// n, so that what it concludes after it is read whole rather than cut
// mid-word (the trial's result and its logs keep the evidence).
func withoutEvidence(cause string, n int) string {
	for len(cause) > n {
		open := strings.Index(cause, " (")
		if open < 0 {
			return cause
		}
		depth, end := 0, -1
		for i := open + 1; i < len(cause) && end < 0; i++ {
			switch cause[i] {
			case '(':
				depth++
			case ')':
				if depth--; depth == 0 {
					end = i
				}
			}
		}
		if end < 0 {
			// Cut already, inside its evidence: the evidence goes.
			return cause[:open] + " (…)"
		}
		cause = cause[:open] + cause[end+1:]
	}
	return cause
}
