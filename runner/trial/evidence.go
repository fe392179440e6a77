package trial

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/atomicfile"
	"github.com/flightdeck/flightdeck/internal/hostgit"
	"github.com/flightdeck/flightdeck/runner/results"
)

// Evidence sources, as grader.Evidence.Source records them.
const (
	SourceSteps   = "steps"   // a deterministic replay: events as the steps ran
	SourceWorkdir = "workdir" // recovered from the work dir after the agent phase
)

// workdirNote says what recovered evidence can and cannot see.
const workdirNote = "recovered after the agent phase from the work dir's git history since the base commit " +
	"(git.commit events, each preceded by edit events for its files) and from uncommitted changes (edit events " +
	"after the last commit): edits within one commit and uncommitted edits are in path order, not the order they " +
	"were made; commands, and files changed and changed back, are not seen"

// maxPatchBytes caps diff.patch; a bigger change is cut and says so.
const maxPatchBytes = 32 << 20

// change is the work dir's change since the seeded tree, computed with the
// shadow repository: every path added, modified or deleted, committed or
// not (paths the work dir's .gitignore ignores are left out), and the patch.
func (w *WorkDir) change(ctx context.Context) (files []string, patch []byte, err error) {
	g := w.shadowGit(w.index)
	if _, err := g.Run(ctx, "add", "-A"); err != nil {
		return nil, nil, fmt.Errorf("read the work dir's change: %w", err)
	}
	out, err := g.Run(ctx, "diff", "--cached", "--no-renames", "--name-only", "-z", w.shadowBase)
	if err != nil {
		return nil, nil, fmt.Errorf("read the work dir's change: %w", err)
	}
	files = splitNUL(out)
	// The patch streams into a bounded buffer: a huge change costs its cap in
	// memory, not its size. A patch git cannot make (a file too big for it)
	// leaves the list of files standing.
	buf := &cappedBuffer{max: maxPatchBytes}
	err = g.RunTo(ctx, buf, "diff", "--cached", "--no-renames", "--binary", "--no-ext-diff", "--no-textconv", w.shadowBase)
	patch = buf.buf.Bytes()
	switch {
	case err != nil:
		patch = append(patch, fmt.Sprintf("\n[flightdeck: no complete patch: %v]\n", err)...)
	case buf.dropped > 0:
		patch = append(patch, "\n[flightdeck: patch cut at 32 MiB]\n"...)
	}
	return files, patch, nil
}

// cappedBuffer keeps the first max bytes written to it and counts the rest.
type cappedBuffer struct {
	buf     bytes.Buffer
	max     int
	dropped int64
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		keep := min(room, len(p))
		c.buf.Write(p[:keep])
		c.dropped += int64(len(p) - keep)
	} else {
		c.dropped += int64(len(p))
	}
	return len(p), nil
}

// commitRecord is one commit the agent made.
type commitRecord struct {
	Hash, Subject string
	Files         []string
}

// commits lists the commits reachable from the work dir's HEAD and not from
// the base commit, oldest first. A repository the agent has made unsafe for
// host git (see repoSafe) is not read.
func (w *WorkDir) commits(ctx context.Context) ([]commitRecord, error) {
	since := w.Base + "..HEAD"
	if w.Base == "" {
		// Harbor's model, on a work dir the image did not make a
		// repository: the agent's commits are all there are, if any.
		if _, err := os.Lstat(filepath.Join(w.Host, ".git")); err != nil {
			return nil, nil
		}
		since = "HEAD"
	}
	if err := hostgit.RepoSafe(w.Host); err != nil {
		return nil, err
	}
	out, err := (hostgit.Cmd{Dir: w.Host}).Run(ctx, "log", "--reverse", "-z", "--no-renames", "--name-only",
		"--no-show-signature", "--format=tformat:%x1e%H%x1f%s", since)
	if err != nil {
		return nil, fmt.Errorf("read the work dir's history: %w", err)
	}
	return parseCommitLog(out), nil
}

// parseCommitLog parses `git log -z --name-only --format=%x1e%H%x1f%s`.
func parseCommitLog(out []byte) []commitRecord {
	var cs []commitRecord
	for _, rec := range bytes.Split(out, []byte{0x1e}) {
		if len(rec) == 0 {
			continue
		}
		head, rest, _ := bytes.Cut(rec, []byte{0})
		hash, subject, _ := bytes.Cut(head, []byte{0x1f})
		c := commitRecord{Hash: string(hash), Subject: string(subject)}
		c.Files = splitNUL(bytes.TrimPrefix(rest, []byte("\n")))
		cs = append(cs, c)
	}
	return cs
}

func splitNUL(b []byte) []string {
	var out []string
	// Names are kept byte for byte: a trailing space or a newline is part of
	// a name, and trimming it would report a file the agent never changed.
	for _, p := range bytes.Split(b, []byte{0}) {
		if len(p) > 0 {
			out = append(out, string(p))
		}
	}
	return out
}

// recoveredEvents rebuilds events from the agent's commits and the change:
// for each commit its files as edits then the git.commit; then the changed
// paths no commit explains as edits.
func recoveredEvents(commits []commitRecord, changed []string) []grader.Event {
	var evs []grader.Event
	add := func(e grader.Event) {
		e.Seq = len(evs) + 1
		evs = append(evs, e)
	}
	committed := map[string]bool{}
	for _, c := range commits {
		files := append([]string(nil), c.Files...)
		sort.Strings(files)
		for _, f := range files {
			committed[f] = true
			add(grader.Event{Kind: grader.EventEdit, Path: f})
		}
		add(grader.Event{Kind: grader.EventGitCommit, Message: c.Subject})
	}
	for _, f := range changed {
		if !committed[f] {
			add(grader.Event{Kind: grader.EventEdit, Path: f})
		}
	}
	return evs
}

// writeEvidence writes events.jsonl, diff.files and diff.patch atomically.
func writeEvidence(trialDir string, ev *grader.Evidence, patch []byte) error {
	var buf bytes.Buffer
	for _, e := range ev.Events {
		line, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("encode events: %w", err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	if err := atomicfile.WriteFile(filepath.Join(trialDir, results.EventsFile), buf.Bytes()); err != nil {
		return err
	}
	var files strings.Builder
	for _, name := range ev.DiffFiles {
		files.WriteString(diffFileLine(name))
		files.WriteByte('\n')
	}
	if err := atomicfile.WriteFile(filepath.Join(trialDir, results.DiffFiles), []byte(files.String())); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(trialDir, results.DiffPatch), patch)
}

// diffFileLine is a name as diff.files lists it, one a line: as it is, or,
// like git's quoted paths, in double quotes with Go escapes when it holds a
// control character, a quote, a backslash, invalid UTF-8 or surrounding
// space, so that every line names exactly one file.
func diffFileLine(name string) string {
	if !utf8.ValidString(name) || strings.TrimSpace(name) != name || strings.ContainsAny(name, "\"\\") ||
		strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return strconv.Quote(name)
	}
	return name
}
