package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/flightdeck/flightdeck/sandbox"
)

// minLeakSize is the smallest file looked for by content: smaller ones
// (an empty __init__.py, "1\n") match too much to mean a leak.
const minLeakSize = 16

// Hidden are the files of a task's tests/ and solution/ by content: their
// SHA-256 → their path in the task ("tests/test_x.py").
type Hidden map[string]string

// HiddenFiles hashes the regular files under the task's dirs (tests/,
// solution/), leaving out those smaller than minLeakSize.
func HiddenFiles(taskDir string, dirs ...string) (Hidden, error) {
	h := Hidden{}
	for _, d := range dirs {
		root := filepath.Join(taskDir, d)
		err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) && p == root {
					return filepath.SkipDir
				}
				return err
			}
			if !e.Type().IsRegular() {
				return nil
			}
			sum, size, err := fileSHA(p)
			if err != nil || size < minLeakSize {
				return err
			}
			rel, _ := filepath.Rel(taskDir, p)
			if _, seen := h[sum]; !seen {
				h[sum] = filepath.ToSlash(rel)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("hash %s: %w", d, err)
		}
	}
	return h, nil
}

// Sizes are the sizes of the hidden files, for a search by size first.
func (h Hidden) Sizes(taskDir string) []int64 {
	var out []int64
	for _, rel := range h {
		if fi, err := os.Stat(filepath.Join(taskDir, filepath.FromSlash(rel))); err == nil && !slices.Contains(out, fi.Size()) {
			out = append(out, fi.Size())
		}
	}
	slices.Sort(out)
	return out
}

func fileSHA(p string) (string, int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	sh := sha256.New()
	n, err := io.Copy(sh, f)
	return hex.EncodeToString(sh.Sum(nil)), n, err
}

// EnvironmentLeaks are the hidden files found by content in the build
// context (environment/): the image may copy them in.
func EnvironmentLeaks(taskDir string, hidden Hidden) ([]string, error) {
	var out []string
	root := filepath.Join(taskDir, "environment")
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return err
		}
		sum, _, err := fileSHA(p)
		if err != nil {
			return err
		}
		if src, ok := hidden[sum]; ok {
			rel, _ := filepath.Rel(taskDir, p)
			out = append(out, fmt.Sprintf("%s is in the build context as %s", src, filepath.ToSlash(rel)))
		}
		return nil
	})
	if os.IsNotExist(err) {
		err = nil
	}
	return out, err
}

// DockerfileLeaks are COPY and ADD instructions whose sources name tests
// or solution (a build context holding a copy of them).
func DockerfileLeaks(file string, instrs []sandbox.Instruction) []string {
	var out []string
	for _, in := range instrs {
		if (in.Cmd != "copy" && in.Cmd != "add") || len(in.Args) < 2 || slices.ContainsFunc(in.Flags, func(f string) bool { return strings.HasPrefix(f, "--from") }) {
			continue
		}
		for _, src := range in.Args[:len(in.Args)-1] {
			for _, part := range strings.Split(path.Clean(src), "/") {
				if part == "tests" || part == "solution" {
					out = append(out, fmt.Sprintf("%s:%d: %s copies %s into the image", file, in.Line, strings.ToUpper(in.Cmd), src))
				}
			}
		}
	}
	return out
}

// Reproducibility warns about what makes two builds of the Dockerfile
// differ: a base image without a tag or digest, or tagged latest;
// apt-get/apt and pip installs of unversioned packages; a script piped
// from the network into a shell.
func Reproducibility(file string, instrs []sandbox.Instruction) []string {
	var out []string
	stages := map[string]bool{}
	for _, in := range instrs {
		at := fmt.Sprintf("%s:%d", file, in.Line)
		switch in.Cmd {
		case "from":
			if len(in.Args) == 0 {
				continue
			}
			ref := in.Args[0]
			if len(in.Args) >= 3 && strings.EqualFold(in.Args[1], "as") {
				stages[strings.ToLower(in.Args[2])] = true
			}
			if w := unpinnedBase(ref, stages); w != "" {
				out = append(out, at+": FROM "+ref+": "+w)
			}
		case "run":
			script := strings.Join(in.Args, " ")
			for _, w := range runWarnings(script) {
				out = append(out, at+": "+w)
			}
		}
	}
	return out
}

func unpinnedBase(ref string, stages map[string]bool) string {
	if ref == "scratch" || stages[strings.ToLower(ref)] || strings.Contains(ref, "$") || strings.Contains(ref, "@sha256:") {
		return ""
	}
	name := ref[strings.LastIndex(ref, "/")+1:]
	tag := ""
	if i := strings.LastIndex(name, ":"); i >= 0 {
		tag = name[i+1:]
	}
	switch tag {
	case "":
		return "no tag (latest)"
	case "latest":
		return "tagged latest"
	}
	return ""
}

// runWarnings are a RUN script's unpinned installs and piped scripts.
func runWarnings(script string) []string {
	var out []string
	for _, cmd := range splitCommands(script) {
		f := strings.Fields(cmd)
		switch {
		case installOf(f, "apt-get") || installOf(f, "apt"):
			if p := unversioned(f, "="); len(p) > 0 {
				out = append(out, "apt packages without a version: "+strings.Join(p, " "))
			}
		case installOf(f, "pip") || installOf(f, "pip3") || moduleInstall(f):
			if p := unversioned(f, "=="); len(p) > 0 {
				out = append(out, "pip packages without a version: "+strings.Join(p, " "))
			}
		}
	}
	if piped(script) {
		out = append(out, "a script is piped from the network into a shell (curl|sh)")
	}
	return out
}

// splitCommands splits a shell script at && || ; | and newlines: a rough
// reading, enough to find install commands.
func splitCommands(script string) []string {
	r := strings.NewReplacer("&&", "\n", "||", "\n", ";", "\n", "|", "\n", "\\\n", " ")
	return strings.Split(r.Replace(script), "\n")
}

// installOf reports whether fields are `tool ... install ...`.
func installOf(f []string, tool string) bool {
	i := slices.Index(f, tool)
	return i >= 0 && slices.Contains(f[i+1:], "install") && !slices.Contains(f, "--help")
}

func moduleInstall(f []string) bool {
	i := slices.Index(f, "-m")
	return i >= 0 && i+2 < len(f) && f[i+1] == "pip" && f[i+2] == "install"
}

// unversioned are an install's package arguments without sep (= for apt,
// == for pip); options, requirement files, paths and URLs are left out.
func unversioned(f []string, sep string) []string {
	i := slices.Index(f, "install")
	var out []string
	skipNext := false
	for _, a := range f[i+1:] {
		switch {
		case skipNext:
			skipNext = false
		case a == "-r" || a == "-c" || a == "-t" || a == "--target" || a == "-o" || a == "--index-url" || a == "-i":
			skipNext = true
		case strings.HasPrefix(a, "-") || strings.ContainsAny(a, "/$<>") || strings.HasSuffix(a, ".whl") || strings.HasSuffix(a, ".deb"):
		case strings.Contains(a, sep) || strings.ContainsAny(a, "<>~") && sep == "==":
		default:
			out = append(out, a)
		}
	}
	return out
}

func piped(script string) bool {
	s := strings.ReplaceAll(script, "\\\n", " ")
	for _, line := range strings.Split(s, "\n") {
		if !(strings.Contains(line, "curl ") || strings.Contains(line, "wget ")) {
			continue
		}
		for _, sh := range []string{"| sh", "|sh", "| bash", "|bash", "| sudo sh", "| sudo bash"} {
			if strings.Contains(line, sh) {
				return true
			}
		}
	}
	return false
}
