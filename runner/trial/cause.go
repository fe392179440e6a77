package trial

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/text"
	"github.com/flightdeck/flightdeck/runner/agent"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
)

// failureCause says why a graded trial scored below 1, for the lines a
// user reads first (the trial's progress line, task verify's oracle
// check, report): the tests the grader's RESULT line names as failed, the
// grader's last telling output line and the path of its whole log. ""
// when the log says nothing more than the reward.
func failureCause(sum *grader.Summary, stepDir string) string {
	var parts []string
	if sum != nil && sum.Error != "" {
		parts = append(parts, "the grader says: "+text.OneLine(sum.Error, 200))
	}
	if sum != nil && len(sum.Failed) > 0 {
		names := sum.Failed
		more := ""
		if len(names) > 5 {
			names, more = names[:5], fmt.Sprintf(" and %d more", len(sum.Failed)-5)
		}
		parts = append(parts, "failing tests: "+strings.Join(names, ", ")+more)
	}
	log := filepath.Join(stepDir, results.GraderLog)
	line := tellingLine(log)
	if line != "" && (sum == nil || sum.Error == "" || !strings.Contains(line, sum.Error)) {
		parts = append(parts, text.OneLine(line, 200))
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, "; ") + " (" + log + ")"
}

// agentCause says, for a failed trial whose agent exited non-zero, that it
// did, with the agent log's most telling line and its path: an oracle
// whose solve.sh failed half way explains the tests that then fail. ""
// when the agent exited 0, or is nop.
func agentCause(v suite.Variant, ag agent.Result, stepDir string) string {
	if v.Agent == suite.AgentNop || ag.ExitCode == nil || *ag.ExitCode == 0 {
		return ""
	}
	who := "the agent"
	if v.Agent == suite.AgentOracle {
		who = "the oracle (solution/)"
	}
	s := fmt.Sprintf("%s exited %d", who, *ag.ExitCode)
	log := filepath.Join(stepDir, results.AgentLog)
	if line := tellingLine(log); line != "" {
		s += ": " + text.OneLine(line, 200)
	}
	return s + " (" + log + ")"
}

// joinCause joins the non-empty causes.
func joinCause(causes ...string) string {
	var parts []string
	for _, c := range causes {
		if c != "" {
			parts = append(parts, c)
		}
	}
	return strings.Join(parts, "; then ")
}

// Output lines by how much they tell, best first: pytest's "E   ..."
// detail, an exception's "SomeError: ...", then any line that says
// something went wrong.
var (
	pytestDetail = regexp.MustCompile(`^E\s+(\S.*)$`)
	exceptionMsg = regexp.MustCompile(`\b\w+(Error|Exception|Failure):\s*\S`)
	telling      = regexp.MustCompile(`(?i)error|fail|assert|exception|expected|not found|no such|denied|mismatch|differ|missing`)
	// pytest's and unittest's counts and banners, which say no more than
	// the reward.
	tally = regexp.MustCompile(`(?i)^(=+ .* =+|!+ .* !+|\d+ (failed|passed|errors?)\b.*|ran \d+ tests? in .*|failed \(.*\)|ok)$`)
)

// tellingLine is the log's most telling line about what went wrong (its
// last of the best kind found), else its last line of substance; RESULT
// lines, flightdeck's own lines (=== ...), rules and tallies are passed
// over.
func tellingLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var best [4]string // by rank: pytest detail, exception, telling, any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if !substantial(l) {
			continue
		}
		best[3] = l
		switch {
		case pytestDetail.MatchString(l):
			best[0] = pytestDetail.FindStringSubmatch(l)[1]
		case exceptionMsg.MatchString(l):
			best[1] = l
		case telling.MatchString(l):
			best[2] = l
		}
	}
	for _, l := range best {
		if l != "" {
			return l
		}
	}
	return ""
}

func substantial(l string) bool {
	switch {
	case len(l) < 4, strings.HasPrefix(l, "RESULT {"), strings.HasPrefix(l, "=== "), tally.MatchString(l):
		return false
	case strings.Trim(l, "=-_*#~.! ") == "":
		return false
	}
	return true
}
