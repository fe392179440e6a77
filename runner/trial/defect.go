package trial

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/text"
	"github.com/flightdeck/flightdeck/runner/agent"
	"github.com/flightdeck/flightdeck/runner/images"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/sandbox"
)

// isTaskDefect reports whether a trial's error is the task's own, whoever
// the agent: a base image it names that cannot be had (images.Defect), a
// Dockerfile step that failed, or a Dockerfile flightdeck cannot build as
// written. The trial's outcome is task_error; it is not retried, since it
// would fail the same way again. A build that timed out, and anything of the engine's,
// stays an infrastructure error.
func isTaskDefect(err error) bool {
	var d *images.Defect
	if errors.As(err, &d) || errors.Is(err, agent.ErrNotReplayed) {
		// A regrade's recorded work that the task as it is now does not
		// take is the task's doing, not the engine's.
		return true
	}
	if sandbox.IsEngineError(err) || errors.Is(err, images.ErrNoStandIn) {
		return false
	}
	return errors.Is(err, sandbox.ErrBuildFailed) || errors.Is(err, sandbox.ErrDockerfile)
}

// IsTaskDefect reports whether err, a build's or a trial's, is the task's
// own defect rather than the machine's (see isTaskDefect).
func IsTaskDefect(err error) bool { return isTaskDefect(err) }

// noAgentWork reports whether the trial's agent is one whose work cannot
// explain a verifier's failure: the task's own oracle, or nop.
func noAgentWork(v suite.Variant) bool {
	return v.Agent == suite.AgentOracle || v.Agent == suite.AgentNop
}

// noRewardText says in one line why a grade has no reward: the verifier's
// exit code and its output's last lines when it wrote none, the file and
// the parse error when what it wrote does not parse.
func noRewardText(native bool, command string, g grader.Grade) string {
	who, dir := "tests/test.sh", grader.HarborVerifierDir
	if native {
		who, dir = "the grader ("+command+")", "$FLIGHTDECK_REWARD_DIR ("+grader.NativeRewardDir+")"
	}
	var re *grader.RewardError
	if !errors.As(g.RewardErr, &re) {
		return text.OneLine(g.RewardErr.Error(), 300)
	}
	var s string
	switch {
	case re.Kind == grader.RewardMissing && re.File == "":
		// No verifier ran (a step's setup failed): the detail says why.
		s = re.Detail
	case re.Kind == grader.RewardMissing:
		s = fmt.Sprintf("%s exited %d without writing %s/reward.txt or reward.json", who, g.ExitCode, dir)
		if g.OOMKilled {
			s += " (killed for its memory)"
		}
		if tail := logTail(g.LogPath, 2); tail != "" {
			s += ": " + tail
		}
		if g.LogPath != "" {
			s += " (" + g.LogPath + ")"
		}
	case slices.Contains([]string{grader.RewardEmpty, grader.RewardMalformed, grader.RewardNonNumeric, grader.RewardNotFinite,
		grader.RewardOversized, grader.RewardNotRegular}, re.Kind):
		name := "the reward file"
		if re.File != "" {
			name = filepath.Base(re.File)
		}
		s = fmt.Sprintf("%s wrote %s, which does not parse: %s", who, name, re.Detail)
	default:
		s = re.Detail
	}
	return text.OneLine(s, 400)
}

// logTail is the last n non-empty lines of a log, joined by " | ", read
// from at most the file's last 8 KiB.
func logTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const window = 8 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > window {
		f.Seek(fi.Size()-window, io.SeekStart)
	}
	data, _ := io.ReadAll(io.LimitReader(f, window))
	var lines []string
	for _, l := range strings.Split(text.StripANSI(string(data)), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	var cause string
	if len(lines) > n {
		// The last line that names an error, when the tail does not: a
		// script that carries on after its failure buries the cause.
		for i := len(lines) - n - 1; i >= 0; i-- {
			if errorLine.MatchString(lines[i]) {
				cause = lines[i]
				break
			}
		}
		lines = lines[len(lines)-n:]
	}
	if cause != "" {
		return cause + " | … | " + strings.Join(lines, " | ")
	}
	return strings.Join(lines, " | ")
}

// errorLine is a line of a verifier's output that names what went wrong.
var errorLine = regexp.MustCompile(`(?i)(error|exception|traceback|not found|no such file|cannot|failed)`)
