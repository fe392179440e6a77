package tasks

import (
	"bufio"
	"bytes"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// The rules of a test.sh that runs the verifier's tools inside the agent's
// tree, where what the agent left there is loaded (task verify's attacks
// run the hacks; this says it before anything runs).
const (
	rulePytestInTree = "verifier.pytest-in-tree"
	rulePythonInTree = "verifier.python-in-tree"
)

// workdirLine matches a Dockerfile's WORKDIR.
var workdirLine = regexp.MustCompile(`(?i)^\s*WORKDIR\s+(\S+)`)

// treeVars are the variables that name the agent's tree in a test.sh.
var treeVars = []string{"FLIGHTDECK_WORKDIR", "HANGAR_REPO"}

// checkVerifierIsolation warns of each line of tests/test.sh that runs
// pytest, or Python with its working directory first on sys.path, inside
// the agent's tree: test.sh starts there (Harbor runs it in the work dir;
// a native grader starts in the task's dir, with the tree in
// $FLIGHTDECK_WORKDIR), and a cd moves it.
func checkVerifierIsolation(dir string, native bool) []Finding {
	data, err := readRegular(filepath.Join(dir, filepath.FromSlash(testScript)))
	if err != nil {
		return nil
	}
	tree := dockerWorkdir(dir)
	s := scriptScan{tree: tree, inTree: !native}
	var out []Finding
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		for _, cmd := range commands(sc.Text()) {
			if rule, msg := s.step(cmd); rule != "" {
				out = append(out, Finding{Path: testScript, Rule: rule, Severity: SeverityWarning, Line: line,
					Message: fmt.Sprintf("line %d: %s", line, msg)})
				break
			}
		}
	}
	return out
}

// dockerWorkdir is environment/Dockerfile's last literal WORKDIR ("" for
// none).
func dockerWorkdir(dir string) string {
	data, err := readRegular(filepath.Join(dir, filepath.FromSlash(environmentDockerfile)))
	if err != nil {
		return ""
	}
	wd := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if m := workdirLine.FindStringSubmatch(sc.Text()); m != nil && !strings.Contains(m[1], "$") {
			if path.IsAbs(m[1]) || wd == "" {
				wd = path.Clean(m[1])
			} else {
				wd = path.Join(wd, m[1])
			}
		}
	}
	return wd
}

// commands splits a line into its commands: at ;, && and ||, a comment
// dropped (a rough cut: quotes are not parsed).
func commands(line string) []string {
	if i := strings.Index(line, " #"); i >= 0 {
		line = line[:i]
	}
	if strings.HasPrefix(strings.TrimSpace(line), "#") {
		return nil
	}
	line = strings.NewReplacer("&&", ";", "||", ";", "|", ";").Replace(line)
	return strings.Split(line, ";")
}

// scriptScan follows test.sh's working directory: in the agent's tree or
// not.
type scriptScan struct {
	tree   string // the Dockerfile's WORKDIR
	inTree bool
}

// inAgentTree reports whether a word names the agent's tree or a path in
// it.
func (s *scriptScan) inAgentTree(w string) bool {
	w = strings.Trim(w, `"'`)
	for _, v := range treeVars {
		if strings.Contains(w, "$"+v) || strings.Contains(w, "${"+v) {
			return true
		}
	}
	if s.tree == "" || s.tree == "/" || !path.IsAbs(w) {
		return false
	}
	w = path.Clean(w)
	return w == s.tree || strings.HasPrefix(w, s.tree+"/")
}

// step reads one command: a cd moves the working directory; pytest or a
// Python module run from the agent's tree is a finding.
func (s *scriptScan) step(cmd string) (rule, msg string) {
	f := strings.Fields(cmd)
	for len(f) > 0 && (strings.Contains(f[0], "=") || f[0] == "then" || f[0] == "do" || f[0] == "if" || f[0] == "!" || f[0] == "exec" || f[0] == "timeout" || f[0] == "env") {
		f = f[1:]
	}
	if len(f) == 0 {
		return "", ""
	}
	if f[0] == "cd" || f[0] == "pushd" {
		if len(f) > 1 {
			arg := strings.Trim(f[1], `"'`)
			if path.IsAbs(arg) || strings.HasPrefix(arg, "$") {
				s.inTree = s.inAgentTree(arg)
			}
		}
		return "", ""
	}
	args, pytest, python := toolArgs(f)
	if !pytest && !python {
		return "", ""
	}
	var paths []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			paths = append(paths, a)
		}
	}
	inTree := slices.ContainsFunc(paths, s.inAgentTree) || (s.inTree && !slices.ContainsFunc(paths, func(p string) bool {
		p = strings.Trim(p, `"'`)
		return path.IsAbs(p) || strings.HasPrefix(p, "$")
	}))
	switch {
	case pytest && inTree && !slices.Contains(args, "--noconftest"):
		return rulePytestInTree, "pytest runs in the agent's tree without --noconftest: a conftest.py (or pytest.ini) the agent leaves there is loaded and can turn failures into passes; " +
			"copy the tests, and only the code under test, to a fresh directory outside the tree (mktemp -d) and run pytest there with --noconftest --rootdir \"$dir\" (as the tests/test.sh of flightdeck task new does)"
	case python && s.inTree && !slices.ContainsFunc(args, func(a string) bool {
		return a == "-I" || a == "-P" || (strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsAny(a, "IP"))
	}):
		return rulePythonInTree, "python -m/-c runs from the agent's tree, which goes first on sys.path: a module the agent leaves there shadows any the verifier imports; " +
			"run it with -I (or -P), or from a fresh directory outside the tree"
	}
	return "", ""
}

// toolArgs finds pytest (run directly, as python -m pytest, or through uv)
// or python -m/-c in a command's words, and the arguments after it.
func toolArgs(f []string) (args []string, pytest, python bool) {
	name := path.Base(f[0])
	switch {
	case name == "pytest" || name == "py.test":
		return f[1:], true, false
	case (name == "uvx" || name == "pipx") && len(f) > 1 && path.Base(f[1]) == "pytest":
		return f[2:], true, false
	case name == "uv" && len(f) > 2 && f[1] == "run":
		for i, w := range f[2:] {
			if path.Base(w) == "pytest" {
				return f[i+3:], true, false
			}
		}
	case strings.HasPrefix(name, "python"):
		for i, w := range f[1:] {
			switch {
			case w == "-m" && i+2 < len(f) && f[i+2] == "pytest":
				return append(slices.Clone(f[1:i+1]), f[i+3:]...), true, false
			case w == "-m" || w == "-c":
				return f[1 : i+1], false, true
			case !strings.HasPrefix(w, "-"):
				return nil, false, false // a script: its own dir goes first on sys.path
			}
		}
	}
	return nil, false, false
}
