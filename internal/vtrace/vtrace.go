// Package vtrace watches what a verifier executes and opens: a small
// ptrace tracer that flightdeck runs inside a grading container (its own
// executable, copied in, under Command), and the reading of what it
// recorded into the files an agent could rewrite to pass.
package vtrace

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
)

// Command is the hidden first argument that makes flightdeck's executable
// the tracer: flightdeck __vtrace OUT -- CMD ARGS...
const Command = "__vtrace"

// Event is one successful execve or open of a traced process, or what a
// program wrote to its stdout and stderr ("out", recorded when it exits
// or execs another).
type Event struct {
	Op    string   `json:"op"` // "exec", "open" or "out"
	Path  string   `json:"path"`
	Argv  []string `json:"argv,omitempty"`  // exec
	Write bool     `json:"write,omitempty"` // open: for writing
	Cwd   string   `json:"cwd,omitempty"`
	Data  string   `json:"data,omitempty"` // out: what it printed, at most 16 KiB
}

// Printed is what the program at p (a script run by an interpreter, or an
// executable) wrote to its stdout and stderr in the events, each run's in
// turn; false when no run of it printed anything.
func Printed(events []Event, p string) (string, bool) {
	var b strings.Builder
	found := false
	for _, e := range events {
		if e.Op == "out" && e.Path == p {
			b.WriteString(e.Data)
			found = true
		}
	}
	return b.String(), found
}

// Main is the tracer's entry: args are OUT -- CMD ARGS... It runs CMD under
// ptrace, writes one JSON Event per line to OUT and returns CMD's exit
// code (127 when it could not start, 126 when tracing is not possible).
func Main(args []string, stderr io.Writer) int {
	if len(args) < 3 || args[1] != "--" {
		fmt.Fprintf(stderr, "usage: flightdeck %s OUT -- CMD [ARGS...]\n", Command)
		return 2
	}
	f, err := os.Create(args[0])
	if err != nil {
		fmt.Fprintf(stderr, "vtrace: %v\n", err)
		return 126
	}
	w := bufio.NewWriterSize(f, 64<<10)
	code, err := trace(args[2:], w)
	if ferr := w.Flush(); err == nil && ferr != nil {
		err = ferr
	}
	f.Close()
	if err != nil {
		fmt.Fprintf(stderr, "vtrace: %v\n", err)
	}
	return code
}

// Read parses what the tracer wrote; a line cut short at the end (the
// tracer killed by a timeout) is left out.
func Read(r io.Reader) ([]Event, error) {
	var out []Event
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e Event
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Path != "" {
			out = append(out, e)
		}
	}
	return out, sc.Err()
}

// A Target is a file the verifier ran, sourced or imported.
type Target struct {
	Path string `json:"path"`
	How  string `json:"how"` // "executed", "interpreted" (a script given to an interpreter) or "loaded" (opened as source)
}

// sourceExt are the extensions of files an interpreter loads as code.
var sourceExt = []string{".py", ".sh", ".bash", ".js", ".mjs", ".cjs", ".pl", ".pm", ".rb", ".php", ".lua"}

// interpreters run the script named by their first argument that is not an
// option.
var interpreters = []string{"python", "bash", "sh", "dash", "zsh", "node", "perl", "ruby", "php", "lua"}

// Skip reports whether a path is out of the rewrite's scope: the
// verifier's own fresh dirs, the kernel's, the tracer's, and the system's
// (an interpreter's own files, which only a root agent can replace and
// then whatever the task does).
func Skip(p string) bool {
	for _, dir := range []string{"/tests", "/logs", "/proc", "/sys", "/dev", "/usr", "/lib", "/lib32", "/lib64", "/libx32",
		"/bin", "/sbin", "/etc", "/var/lib", "/flightdeck", "/tmp/.flightdeck-vtrace"} {
		if p == dir || strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return false
}

// Targets are the files the events show the verifier executing or loading
// as code, outside Skip, not written by the verifier itself (a copy it
// made) and not in exclude (the files the oracle changed: the agent's own
// work), in the order first seen.
func Targets(events []Event, exclude func(string) bool) []Target {
	var out []Target
	seen := map[string]bool{}
	add := func(p, how string) {
		p = path.Clean(p)
		if seen[p] || !path.IsAbs(p) || Skip(p) || (exclude != nil && exclude(p)) {
			return
		}
		seen[p] = true
		out = append(out, Target{Path: p, How: how})
	}
	opened, written := map[string]bool{}, map[string]bool{}
	for _, e := range events {
		switch {
		case e.Op == "open" && e.Write:
			written[path.Clean(e.Path)] = true
		case e.Op == "open":
			opened[path.Clean(e.Path)] = true
		}
	}
	mine := exclude
	exclude = func(p string) bool { return written[p] || (mine != nil && mine(p)) }
	for _, e := range events {
		switch e.Op {
		case "exec":
			add(e.Path, "executed")
			if s := scriptArg(e.Argv); s != "" {
				if !path.IsAbs(s) {
					s = path.Join(e.Cwd, s)
				}
				if opened[path.Clean(s)] {
					add(s, "interpreted")
				}
			}
		case "open":
			if !e.Write && slices.Contains(sourceExt, path.Ext(e.Path)) {
				add(e.Path, "loaded")
			}
		}
	}
	return out
}

// scriptArg is the script an interpreter's argv runs ("" when argv is not
// an interpreter's, or it runs -c or -m).
func scriptArg(argv []string) string {
	if len(argv) < 2 {
		return ""
	}
	base := path.Base(argv[0])
	known := slices.ContainsFunc(interpreters, func(i string) bool {
		return base == i || (strings.HasPrefix(base, i) && strings.Trim(base[len(i):], "0123456789.") == "")
	})
	if !known {
		return ""
	}
	for _, a := range argv[1:] {
		switch {
		case a == "-c" || a == "-m" || a == "-e" || a == "--":
			return ""
		case strings.HasPrefix(a, "-"):
			continue
		}
		return a
	}
	return ""
}

// Use is how the events show the verifier using a file: as code (executed,
// given to an interpreter or opened as source), as data (opened to read
// only), or not at all ("").
func Use(events []Event, file string) string {
	file = path.Clean(file)
	use := ""
	for _, e := range events {
		switch {
		case e.Op == "exec" && (path.Clean(e.Path) == file || scriptPath(e) == file):
			return "code"
		case e.Op == "open" && !e.Write && path.Clean(e.Path) == file:
			if slices.Contains(sourceExt, path.Ext(file)) {
				return "code"
			}
			use = "data"
		}
	}
	return use
}

// scriptPath is the absolute path of the script an exec ran through an
// interpreter ("" for none).
func scriptPath(e Event) string {
	s := scriptArg(e.Argv)
	if s == "" {
		return ""
	}
	if !path.IsAbs(s) {
		s = path.Join(e.Cwd, s)
	}
	return path.Clean(s)
}

// maxData caps the files DataFiles lists: the probe that alters them is
// one trial whatever their number.
const maxData = 20

// DataFiles are the files the events show the verifier reading as data
// only, that the agent's image may hold: opened for reading, never
// executed, loaded as code or written by the verifier, outside Skip and
// /var, and not in exclude (the oracle's own work). Left out too, as the
// files of code or tools rather than what a verifier compares with:
// anything under a top-level directory (/opt/venv, /app) from which the
// verifier ran code outside Skip, in a package tree, compiled code, and a
// hidden directory that is a tool's (toolState) or that the verifier read
// more than maxHiddenReads files of. In the order first
// opened, at most maxData.
func DataFiles(events []Event, exclude func(string) bool) []string {
	codeTops := map[string]bool{}
	for _, tg := range Targets(events, nil) {
		codeTops[topDir(tg.Path)] = true
	}
	written := map[string]bool{}
	for _, e := range events {
		if e.Op == "open" && e.Write {
			written[path.Clean(e.Path)] = true
		}
	}
	// A hidden directory the verifier read many files of is a tool's
	// state (a cache, a virtualenv's), not where an answer is kept.
	hiddenReads := map[string]int{}
	for _, e := range events {
		if e.Op == "open" && !e.Write {
			if h := hiddenDir(path.Clean(e.Path)); h != "" {
				hiddenReads[h]++
			}
		}
	}
	var out []string
	seen := map[string]bool{}
	for _, e := range events {
		p := path.Clean(e.Path)
		if e.Op != "open" || e.Write || seen[p] || !path.IsAbs(p) {
			continue
		}
		seen[p] = true
		if written[p] || Skip(p) || p == "/var" || strings.HasPrefix(p, "/var/") || codeTops[topDir(p)] ||
			(exclude != nil && exclude(p)) || Use(events, p) != "data" || packaged(p) {
			continue
		}
		if h := hiddenDir(p); h != "" && (hiddenReads[h] > maxHiddenReads || toolState(h)) {
			continue
		}
		out = append(out, p)
		if len(out) == maxData {
			break
		}
	}
	return out
}

// topDir is the first two components of p's directory: /opt/venv of
// /opt/venv/lib/x.py, /app of /app/x.
func topDir(p string) string {
	parts := strings.SplitN(strings.TrimPrefix(path.Dir(p), "/"), "/", 3)
	if len(parts) > 2 {
		parts = parts[:2]
	}
	return "/" + strings.Join(parts, "/")
}

// maxHiddenReads is how many files of one hidden directory a verifier may
// read for them to be its data rather than a tool's state.
const maxHiddenReads = 3

// hiddenDir is the path of p's first hidden directory ("" for none):
// /app/.cache of /app/.cache/out.sha256.
func hiddenDir(p string) string {
	dirs := strings.Split(path.Dir(p), "/")
	for i, d := range dirs {
		if strings.HasPrefix(d, ".") && d != "." && d != ".." {
			return strings.Join(dirs[:i+1], "/")
		}
	}
	return ""
}

// toolState reports whether a hidden directory is a tool's whatever it
// holds: a version control's, or one in a home directory (caches, tools'
// settings).
func toolState(dir string) bool {
	switch path.Base(dir) {
	case ".git", ".hg", ".svn":
		return true
	}
	return strings.HasPrefix(dir, "/root/") || strings.HasPrefix(dir, "/home/")
}

// packaged reports whether p is a file of installed or compiled code: none
// is an answer a verifier reads.
func packaged(p string) bool {
	dirs := strings.Split(path.Dir(p), "/")
	for _, d := range dirs {
		switch {
		case d == "site-packages", d == "dist-packages", d == "node_modules", d == "__pycache__",
			strings.HasSuffix(d, ".dist-info"), strings.HasSuffix(d, ".egg-info"):
			return true
		}
	}
	base := path.Base(p)
	for _, ext := range []string{".pyc", ".pyo", ".so", ".pth", ".a", ".o", ".class", ".jar"} {
		if strings.HasSuffix(base, ext) {
			return true
		}
	}
	return strings.Contains(base, ".so.")
}
