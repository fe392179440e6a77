package agent

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	fsfiles "github.com/flightdeck/flightdeck/internal/files"

	"github.com/flightdeck/flightdeck/internal/vtrace"
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
// oracle did. When nothing was hidden it probes instead what the verdict
// is compared with (alterData); with nothing to hide or alter, the oracle
// does not run: the trial then shows nothing, and says so.
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
	if strings.Contains(string(said), HiddenPrefix) {
		return run()
	}
	var data []string
	if a.Trial.Rewrite != nil && len(a.Trial.Rewrite.Data) > 0 {
		readable := filepath.Join(a.Scratch, "readable.out")
		args := append([]string{"sh", "-c", readableScript, "readable"}, a.Trial.Rewrite.Data...)
		if _, _, err := a.exec(ctx, "oracle-hidden: the files the verifier reads as data that the agent can read", args, nil, readable); err != nil {
			return Result{}, fmt.Errorf("list the files the agent can read: %w", err)
		}
		data = lines(readable)
	}
	if len(data) > 0 {
		return a.alterData(ctx, data, run)
	}
	zero := 0
	note := "no copy of the oracle's outputs is in the image to hide, and no file the verifier reads as data is in the image for the agent to read, so the oracle did not run: an empty attempt, graded; nothing to judge"
	return Result{ExitCode: &zero, Note: note}, a.note(NotePrefix + note + "\n")
}

// AlteredPrefix starts each line the oracle-hidden run prints for a file
// the grade empties; ReadPrefix each one for a file the oracle read, which
// is left as it is (an input the oracle and the verifier share).
const (
	AlteredPrefix = "altered: "
	ReadPrefix    = "read by the oracle: "
)

// alterData is the probe of an answer the image holds in another form than
// the oracle's output (a hash, another format): of the files the traced
// verifier read as data, those the agent can read (files) and the oracle
// does not open (a watcher of opens, around each of its commands, tells) are
// emptied at the grade. A verdict that then falls is compared with a file
// the agent can read; a file the oracle opens is an input, left alone.
func (a *Session) alterData(ctx context.Context, files []string, run func() (Result, error)) (Result, error) {
	if a.Tracer == "" {
		_ = a.note(NotePrefix + "no watcher of what the oracle opens (flightdeck's executable was not found), so nothing is altered\n")
		return run()
	}
	if err := a.copyWatcher(ctx); err != nil {
		return Result{}, err
	}
	defer a.root(context.WithoutCancel(ctx), []string{"rm", "-rf", "--", watchDir}, "")
	opened := path.Join(watchDir, "opened")
	a.wrap = append(append([]string{path.Join(watchDir, watchExe), vtrace.WatchCommand, opened}, files...), "--")
	res, err := run()
	a.wrap = nil
	if err != nil {
		return res, err
	}
	openedOut := filepath.Join(a.Scratch, "opened.out")
	if err := a.root(ctx, []string{"cat", "--", opened}, openedOut); err != nil {
		_ = a.note(NotePrefix + "the watcher recorded nothing of what the oracle opened (" + err.Error() + "), so nothing is altered\n")
		return res, nil
	}
	read := lines(openedOut)
	// Which of them the agent could overwrite too: where the verifier
	// grades in the agent's container, that is a hack of its own.
	args := append([]string{"sh", "-c", writableScript, "writable"}, files...)
	if _, _, err := a.exec(ctx, "oracle-hidden: the files the agent can overwrite", args, nil, ""); err != nil {
		return res, fmt.Errorf("list the files the agent can overwrite: %w", err)
	}
	var said strings.Builder
	for _, f := range files {
		if slices.Contains(read, f) {
			said.WriteString(ReadPrefix + f + "\n")
			continue
		}
		said.WriteString(AlteredPrefix + f + "\n")
		res.EmptyAtGrade = append(res.EmptyAtGrade, f)
	}
	if len(res.EmptyAtGrade) > 0 {
		res.Note = "the oracle ran, and its grade emptied " + strings.Join(res.EmptyAtGrade, ", ") +
			" first (files the verifier reads as data and the oracle does not open): the probe of what the verdict is compared with"
	}
	return res, a.note(said.String())
}

// Where the watcher goes in the agent's container, under its name
// (flightdeck's executable dispatches on its first argument).
const (
	watchDir = "/tmp/.flightdeck-watch"
	watchExe = "flightdeck"
)

// copyWatcher copies flightdeck's executable into watchDir, which every
// user may write: the watcher writes there as the agent's user.
func (a *Session) copyWatcher(ctx context.Context) error {
	tmp, err := os.MkdirTemp("", "flightdeck-watch-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	exe := filepath.Join(tmp, watchExe)
	if os.Link(a.Tracer, exe) != nil {
		if err := fsfiles.CopyFile(a.Tracer, exe, 0o755); err != nil {
			return fmt.Errorf("ready the watcher %s: %w", a.Tracer, err)
		}
	}
	if err := a.Engine.CopyIn(ctx, a.Container, tmp, watchDir, sandbox.Owner{}); err != nil {
		return fmt.Errorf("copy the watcher into the agent's container: %w", err)
	}
	if err := a.root(ctx, []string{"chmod", "1777", watchDir}, ""); err != nil {
		return fmt.Errorf("open %s to the agent's user: %w", watchDir, err)
	}
	return nil
}

// lines are a file's non-empty lines ("" for none, or no file).
func lines(file string) []string {
	data, _ := os.ReadFile(file)
	var out []string
	for line := range strings.Lines(string(data)) {
		if l := strings.TrimRight(line, "\n"); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// WritablePrefix starts each line the oracle-hidden run prints for a file
// of the verifier's data that the agent's user can overwrite.
const WritablePrefix = "writable by the agent: "

// writableScript prints, as the agent's user, each of its arguments the
// agent can overwrite.
const writableScript = `for f; do [ -w "$f" ] && echo "` + WritablePrefix + `$f"; done; exit 0`

// ParseWritable reads the files of the verifier's data that the agent's
// user could overwrite, from the oracle-hidden run's agent.log.
func ParseWritable(log string) []string { return prefixed(log, WritablePrefix) }

// readableScript prints, as the agent's user, each of its arguments that
// is a regular file, not empty, the agent can read.
const readableScript = `for f; do [ -f "$f" ] && [ -s "$f" ] && [ -r "$f" ] && printf '%s\n' "$f"; done; exit 0`

// root runs cmd as root in the agent's container, its output to out; it
// is the probe's, not the agent's, so agent.log holds only what it says.
func (a *Session) root(ctx context.Context, cmd []string, out string) error {
	if out == "" {
		out = filepath.Join(a.Scratch, "root.out")
	}
	res, err := a.Engine.Exec(ctx, a.Container, sandbox.ExecSpec{Cmd: cmd, User: "0", Workdir: a.Workdir, Timeout: time.Minute, StdoutPath: out})
	if err == nil && (res.TimedOut || res.ExitCode != 0) {
		err = fmt.Errorf("exit %d", res.ExitCode)
	}
	return err
}

// ParseAltered reads the files the oracle-hidden run had the grade empty,
// from its agent.log.
func ParseAltered(log string) []string { return prefixed(log, AlteredPrefix) }

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
