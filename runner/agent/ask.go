package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The question channel: a directory, outside the work dir, where an agent
// asks the task a question and reads the reply (docs/running.md). To ask,
// an agent writes the question to a temporary name in the directory and
// renames it to NAME.q (NAME: letters, digits, - and _); the reply
// appears as NAME.a. A question the task's answers do not cover gets no
// reply: the agent's phase ends there (needs_input). The runner reads the
// directory from the host (runner/trial).
const (
	// AskDir is the channel's directory in the agent's container.
	AskDir = "/run/flightdeck/ask"
	// EnvAskDir names AskDir for the agent.
	EnvAskDir = "FLIGHTDECK_ASK_DIR"
	// EnvMaxTurns is the task's [flightdeck] max_turns, when it sets one.
	EnvMaxTurns = "FLIGHTDECK_MAX_TURNS"
	// MaxQuestionBytes is the longest question the channel takes.
	MaxQuestionBytes = 4096
)

// AskScript asks $FLIGHTDECK_QUESTION as question $1 and prints the reply:
// the protocol in POSIX sh, as a replayed ask step runs it.
const AskScript = `d="${FLIGHTDECK_ASK_DIR:?no question channel: the task has no [flightdeck.agent] answers}"
printf '%s' "$FLIGHTDECK_QUESTION" > "$d/.$1.tmp" && mv "$d/.$1.tmp" "$d/$1.q" || exit 1
while [ ! -e "$d/$1.a" ]; do sleep 0.05 2>/dev/null || sleep 1; done
cat "$d/$1.a"`

// ask runs a replayed ask step: the question goes through the channel
// from inside the container, and the reply is what the agent reads.
func (a *Session) ask(ctx context.Context, step int, question string) (reply, failed string, err error) {
	out := filepath.Join(a.Scratch, fmt.Sprintf("ask-%d.out", step))
	res, failed, err := a.exec(ctx, fmt.Sprintf("steps[%d]: ask: %s", step, question),
		[]string{"sh", "-c", AskScript, "ask", fmt.Sprintf("replay-%d", step)}, []string{"FLIGHTDECK_QUESTION=" + question}, out)
	if err != nil || failed != "" {
		return "", failed, err
	}
	if res.TimedOut {
		return "", "the agent's timeout passed before a reply came", nil
	}
	if res.ExitCode != 0 {
		return "", fmt.Sprintf("asking exited %d (agent.log says why)", res.ExitCode), nil
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return "", "", err
	}
	return strings.TrimRight(string(data), "\n"), "", nil
}
