package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/flightdeck/flightdeck/internal/text"
	"github.com/moby/moby/api/types/jsonstream"
)

// tailLines is how many lines of a failing step a BuildError quotes.
const tailLines = 15

// BuildError is a build that failed at a step. It matches ErrBuildFailed.
type BuildError struct {
	Image   string   // the tag being built
	Step    string   // the failing step, e.g. "RUN make" or "[2/4] RUN make"
	Message string   // the engine's error
	Tail    []string // the step's last lines of output
	LogPath string   // the whole build log, when kept
}

// Error is one line: the step, its exit code and its last line of output
// (what it said last is the cause more often than the code), and the
// build log, whose path is never cut. The whole tail is in the log.
func (e *BuildError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "build %s", e.Image)
	code := stepExitCode(e.Message)
	switch {
	case e.Step != "" && code != "":
		fmt.Fprintf(&b, ": step %q failed (exit %s)", e.Step, code)
	case e.Step != "":
		fmt.Fprintf(&b, ": step %q failed: %s", e.Step, text.OneLine(e.Message, 300))
	default:
		fmt.Fprintf(&b, ": %s", text.OneLine(e.Message, 300))
	}
	if n := len(e.Tail); n > 0 {
		fmt.Fprintf(&b, ": %s", text.OneLine(e.Tail[n-1], 300))
	}
	if e.LogPath != "" {
		// Last, and bare: a path to copy whole.
		b.WriteString("; build log: " + e.LogPath)
	}
	return b.String()
}

// exitCodeRE finds a failed step's exit code in the engine's message: the
// classic builder's "returned a non-zero code: N", BuildKit's "exit code: N".
var exitCodeRE = regexp.MustCompile(`(?:non-zero code|exit code): ?(\d+)`)

func stepExitCode(msg string) string {
	if m := exitCodeRE.FindStringSubmatch(msg); m != nil {
		return m[1]
	}
	return ""
}

// Unwrap lets errors.Is(err, ErrBuildFailed) hold.
func (e *BuildError) Unwrap() error { return ErrBuildFailed }

// lineTail keeps the last lines written to it.
type lineTail struct {
	lines   []string
	partial string
}

func (t *lineTail) write(s string) {
	s = t.partial + s
	parts := strings.Split(s, "\n")
	t.partial = parts[len(parts)-1]
	for _, l := range parts[:len(parts)-1] {
		l = strings.TrimRight(l, "\r")
		if strings.TrimSpace(l) == "" || builderNoise(l) {
			continue
		}
		t.lines = append(t.lines, l)
		if len(t.lines) > tailLines {
			t.lines = t.lines[len(t.lines)-tailLines:]
		}
	}
}

// builderNoise reports whether a line is the classic builder's own
// bookkeeping, not a step's output: quoting it would push the step's last
// words out of the tail.
func builderNoise(l string) bool {
	l = strings.TrimSpace(l)
	return strings.HasPrefix(l, "Removing intermediate container ") || strings.HasPrefix(l, "---> ")
}

func (t *lineTail) last() []string {
	out := append([]string(nil), t.lines...)
	if p := strings.TrimSpace(t.partial); p != "" {
		out = append(out, p)
	}
	if len(out) > tailLines {
		out = out[len(out)-tailLines:]
	}
	return out
}

// buildProgress follows a build's message stream: it writes a readable log
// and keeps the last lines of each step, to quote the one that fails. What
// it keeps and writes is text: the colours a step's output carries (the
// classic builder paints its stderr red) are removed first.
type buildProgress struct {
	log     io.Writer
	imageID string
	errMsg  string

	// classic builder: "Step 2/5 : RUN make" starts a step
	stream    *textStream
	step      string
	stepTail  lineTail
	cached    bool   // the current step came from the cache
	lastLayer string // the last image a step of this build made

	// BuildKit: one vertex per step
	vertexes map[string]*vertexState
	count    int
	lastLog  string // digest of the vertex that logged last
}

type vertexState struct {
	n       int
	name    string
	logs    *textStream
	tail    lineTail
	err     string
	printed bool
	done    bool
}

func newBuildProgress(log io.Writer) *buildProgress {
	return &buildProgress{log: log, stream: newTextStream(), vertexes: map[string]*vertexState{}}
}

// textStream removes escape sequences from a stream that comes in pieces
// (one step's output), keeping its state between them: a sequence split
// across two messages goes as well.
type textStream struct {
	strip io.Writer
	out   bytes.Buffer
}

func newTextStream() *textStream {
	t := &textStream{}
	t.strip = text.NewANSIStripper(&t.out)
	return t
}

func (t *textStream) text(s string) string {
	t.out.Reset()
	io.WriteString(t.strip, s)
	return t.out.String()
}

// read consumes a build's JSON message stream to EOF. The build failed when
// it returns an error or p.errMsg is set afterwards.
func (p *buildProgress) read(r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var m jsonstream.Message
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		p.message(m)
	}
}

func (p *buildProgress) message(m jsonstream.Message) {
	if m.Error != nil {
		p.errMsg = strings.TrimSpace(text.StripANSI(m.Error.Message))
		fmt.Fprintf(p.log, "ERROR: %s\n", p.errMsg)
	}
	if m.Stream != "" {
		s := p.stream.text(m.Stream)
		io.WriteString(p.log, s)
		p.classic(s)
	}
	if m.Status != "" {
		status := text.StripANSI(m.Status)
		if m.ID != "" {
			fmt.Fprintf(p.log, "%s: %s\n", text.StripANSI(m.ID), status)
		} else {
			fmt.Fprintln(p.log, status)
		}
	}
	if m.Aux == nil {
		return
	}
	if m.ID == "moby.buildkit.trace" {
		var raw []byte
		if json.Unmarshal(*m.Aux, &raw) == nil {
			if st, err := decodeBuildkitStatus(raw); err == nil {
				p.buildkit(st)
			}
		}
		return
	}
	var aux struct{ ID string }
	if json.Unmarshal(*m.Aux, &aux) == nil && strings.HasPrefix(aux.ID, "sha256:") {
		p.imageID = aux.ID
	}
}

func (p *buildProgress) classic(s string) {
	for _, line := range strings.SplitAfter(s, "\n") {
		if rest, ok := strings.CutPrefix(line, "Step "); ok {
			if _, cmd, ok := strings.Cut(rest, " : "); ok {
				p.step = strings.TrimSpace(cmd)
				p.stepTail = lineTail{}
				continue
			}
		}
		if rest, ok := strings.CutPrefix(line, " ---> "); ok {
			p.layer(strings.TrimSpace(rest))
			continue
		}
		p.stepTail.write(line)
	}
}

// layer notes an image the classic builder made for a step: " ---> <id>"
// after a step that neither was FROM nor came from the cache. Such layers
// carry no labels, so a failed build removes the last one (and its
// untagged parents) itself.
func (p *buildProgress) layer(rest string) {
	switch {
	case rest == "Using cache":
		p.cached = true
	case strings.HasPrefix(rest, "Running in "):
	case len(rest) == 12 && strings.Trim(rest, "0123456789abcdef") == "":
		if !p.cached && !strings.HasPrefix(strings.ToUpper(p.step), "FROM ") {
			p.lastLayer = rest
		}
		p.cached = false
	}
}

func (p *buildProgress) vertex(digest string) *vertexState {
	v := p.vertexes[digest]
	if v == nil {
		p.count++
		v = &vertexState{n: p.count, logs: newTextStream()}
		p.vertexes[digest] = v
	}
	return v
}

func (p *buildProgress) buildkit(st bkStatus) {
	for _, vx := range st.Vertexes {
		v := p.vertex(vx.Digest)
		if vx.Name != "" {
			v.name = text.StripANSI(vx.Name)
		}
		if !v.printed && (vx.Started || vx.Cached) {
			v.printed = true
			fmt.Fprintf(p.log, "#%d %s\n", v.n, v.name)
		}
		if vx.Error != "" && v.err == "" {
			v.err = text.StripANSI(vx.Error)
			fmt.Fprintf(p.log, "#%d ERROR: %s\n", v.n, v.err)
		}
		if vx.Completed && !v.done {
			v.done = true
			if vx.Cached {
				fmt.Fprintf(p.log, "#%d CACHED\n", v.n)
			} else if vx.Error == "" {
				fmt.Fprintf(p.log, "#%d DONE\n", v.n)
			}
		}
	}
	for _, l := range st.Logs {
		v := p.vertex(l.Vertex)
		p.lastLog = l.Vertex
		msg := v.logs.text(string(l.Msg))
		v.tail.write(msg)
		for _, line := range strings.SplitAfter(msg, "\n") {
			if line != "" {
				fmt.Fprintf(p.log, "#%d %s", v.n, line)
				if !strings.HasSuffix(line, "\n") {
					fmt.Fprintln(p.log)
				}
			}
		}
	}
	for _, w := range st.Warnings {
		fmt.Fprintf(p.log, "WARNING: %s\n", text.StripANSI(w.Short))
	}
}

// failure describes the failed build: the failing step and its last lines.
func (p *buildProgress) failure(image, logPath string) *BuildError {
	e := &BuildError{Image: image, Message: p.errMsg, LogPath: logPath}
	if len(p.vertexes) == 0 {
		e.Step, e.Tail = p.step, p.stepTail.last()
		return e
	}
	// The failing step's error comes first; steps running beside it
	// end with "context canceled".
	var failed *vertexState
	for _, v := range p.vertexes {
		if v.err == "" {
			continue
		}
		better := failed == nil || v.n < failed.n
		if failed != nil && strings.Contains(failed.err, "cancel") != strings.Contains(v.err, "cancel") {
			better = !strings.Contains(v.err, "cancel")
		}
		if better {
			failed = v
		}
	}
	if failed == nil {
		failed = p.vertexes[p.lastLog]
	}
	if failed != nil {
		e.Step, e.Tail = failed.name, failed.tail.last()
	}
	return e
}
