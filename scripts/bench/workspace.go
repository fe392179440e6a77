package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// workspace is the bench's temporary directory: suite files and results
// dirs, all removed at the end.
type workspace struct {
	root    string // the temporary directory
	repo    string // the project's root
	task    string // the trivial task (fixtures/bench/nop), absolute
	harbor  string // the trivial Harbor-format task (fixtures/bench/harbor), absolute
	compose string // the trivial multi-container task (fixtures/bench/compose), absolute
	env     string // the tiny environment of the image benchmark, absolute
}

func newWorkspace(repo string) (*workspace, error) {
	root, err := os.MkdirTemp("", "flightdeck-bench-")
	if err != nil {
		return nil, fmt.Errorf("bench workspace: %w", err)
	}
	return &workspace{
		root:    root,
		repo:    repo,
		task:    filepath.Join(repo, "fixtures", "bench", "nop"),
		harbor:  filepath.Join(repo, "fixtures", "bench", "harbor"),
		compose: filepath.Join(repo, "fixtures", "bench", "compose"),
		env:     filepath.Join(repo, "fixtures", "bench", "image-env"),
	}, nil
}

func (w *workspace) remove() error { return os.RemoveAll(w.root) }

// variant is one variant line of a suite file.
type variant struct{ name, def string }

var (
	nopVariant = variant{"nop", "{agent: nop}"}
	// cmdVariant runs `true` as a command agent: a trial that starts an
	// agent's container, as any real agent does.
	cmdVariant = variant{"cmd", `{agent: command, command: "true"}`}
	// oracleVariant replays the task's solution/: on the Harbor task, the
	// Harbor floor's work (solution/ in, solve.sh run), and an agent whose
	// doing the tamper inspector reads.
	oracleVariant = variant{"oracle", "{agent: oracle}"}
)

// suite writes a suite file running the trivial task and returns its path
// and its results dir (created, so that the engine's bind-mount probe finds
// it).
func (w *workspace) suite(name string, attempts, jobs int, variants ...variant) (file, resultsDir string, err error) {
	return w.suiteOf(name, w.task, attempts, jobs, variants...)
}

// suiteOf is suite for another task.
func (w *workspace) suiteOf(name, task string, attempts, jobs int, variants ...variant) (file, resultsDir string, err error) {
	resultsDir = filepath.Join(w.root, "results-"+name)
	if err := os.MkdirAll(resultsDir, 0o755); err != nil {
		return "", "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "name: bench-%s\n", name)
	fmt.Fprintf(&b, "tasks: [%q]\n", task)
	b.WriteString("variants:\n")
	for _, v := range variants {
		fmt.Fprintf(&b, "  %s: %s\n", v.name, v.def)
	}
	fmt.Fprintf(&b, "attempts: %d\nconcurrency: %d\nretries: 0\nresults: %q\n", attempts, jobs, resultsDir)
	file = filepath.Join(w.root, name+".yaml")
	return file, resultsDir, os.WriteFile(file, []byte(b.String()), 0o644)
}

// freshResults makes a new empty results dir.
func (w *workspace) freshResults(name string) (string, error) {
	dir, err := os.MkdirTemp(w.root, "results-"+name+"-")
	if err != nil {
		return "", err
	}
	return dir, nil
}
