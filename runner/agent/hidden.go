package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/sandbox"
)

// HiddenPrefix starts each line the oracle-hidden run prints to agent.log
// for a file of the image it moved away before the oracle ran.
const HiddenPrefix = "hidden: "

// hiddenSuffix is the name a hidden file has while the oracle runs.
const hiddenSuffix = ".flightdeck-hidden"

// hiddenList is where the hiding keeps what it moved, for the putting
// back (hidden_list, unset in a trial, puts a test's elsewhere).
const hiddenList = `"${hidden_list:-/tmp/.flightdeck-hidden-list}"`

// hideScript moves away, as the agent's user, every copy of an output of
// the traced oracle's that the answer attack's search finds
// (copiesCommon), so that the oracle runs without them.
func hideScript(rw *suite.Rewrite) string {
	var b strings.Builder
	b.WriteString(`set +e
` + copiesCommon + `: > ` + hiddenList + `
hide() {
  copies "$@" | while IFS= read -r f; do
    if mv -- "$f" "$f` + hiddenSuffix + `" 2>/dev/null; then
      printf '%s\n' "$f" >> ` + hiddenList + `; echo "` + HiddenPrefix + `$f"
    else
      echo "` + NotePrefix + `cannot move $f away as the agent's user"
    fi
  done
}
command -v sha256sum >/dev/null 2>&1 || { echo "` + NotePrefix + `the image has no sha256sum to look for the oracle's outputs with"; exit 0; }
`)
	if rw != nil {
		for _, o := range rw.Outputs {
			fmt.Fprintf(&b, "hide %s %d %s\n", shellQuote(o.Path), o.Size, o.SHA256)
		}
	}
	return b.String()
}

// restoreScript puts back what hideScript moved.
const restoreScript = `[ -f ` + hiddenList + ` ] || exit 0
while IFS= read -r f; do mv -f -- "$f` + hiddenSuffix + `" "$f"; done < ` + hiddenList + `
rm -f ` + hiddenList

// hideAnswers runs the oracle (run) with the image's copies of its
// outputs moved away, and puts them back before the grade, whatever the
// oracle did. When nothing was hidden, the oracle does not run: the trial
// then shows nothing, and says so.
func (a *Session) hideAnswers(ctx context.Context, run func() (Result, error)) (Result, error) {
	out := filepath.Join(a.Scratch, "hide.out")
	res, failed, err := a.exec(ctx, "oracle-hidden: move away the image's copies of the oracle's outputs",
		[]string{"sh", "-c", hideScript(a.Trial.Rewrite)}, nil, out)
	if err != nil {
		return Result{}, fmt.Errorf("hide the image's copies of the oracle's outputs: %w", err)
	}
	defer a.restoreHidden(ctx)
	if failed != "" || res.TimedOut {
		return Result{ExitCode: &res.ExitCode, TimedOut: res.TimedOut, Failed: failed}, nil
	}
	said, _ := os.ReadFile(out)
	if !strings.Contains(string(said), HiddenPrefix) {
		zero := 0
		note := "no copy of the oracle's outputs is in the image to hide, so the oracle did not run: an empty attempt, graded; nothing to judge"
		return Result{ExitCode: &zero, Note: note}, a.note(NotePrefix + note + "\n")
	}
	return run()
}

// restoreHidden puts the hidden files back, with a time of its own: an
// oracle that ran out of its time still leaves them as they were.
func (a *Session) restoreHidden(ctx context.Context) {
	res, err := a.Engine.Exec(context.WithoutCancel(ctx), a.Container, sandbox.ExecSpec{
		Cmd: []string{"sh", "-c", restoreScript}, User: a.User, Workdir: a.Workdir, Timeout: time.Minute,
		StdoutPath: filepath.Join(a.Scratch, "restore.out")})
	if err != nil || res.ExitCode != 0 {
		_ = a.note(fmt.Sprintf("oracle-hidden: putting the hidden files back failed (exit %d): %v\n", res.ExitCode, err))
	}
}

// ParseHidden reads the files the oracle-hidden run moved away from its
// agent.log.
func ParseHidden(log string) []string { return prefixed(log, HiddenPrefix) }
