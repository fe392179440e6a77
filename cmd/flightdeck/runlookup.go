package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/flightdeck/flightdeck/internal/hostpath"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
)

// resultsPlace is a results dir a run may be in, and whose it is.
type resultsPlace struct {
	dir   string
	whose string // "suite.yaml's results dir"; "" for ./results
}

// describe is the place as the user may type it, and whose it is.
func (p resultsPlace) describe(cwd string) string {
	if p.whose == "" {
		return shown(cwd, p.dir)
	}
	return fmt.Sprintf("%s (%s)", shown(cwd, p.dir), p.whose)
}

// findRun finds the dir of run id (or id itself, a path to a run's dir)
// for a command run in env.cwd. It looks under --results when flag is
// given, else under the default suite's results dir (./results without
// one); then, when the run is not there, under the results dirs that the
// suite files in the current dir name, and under ./results. Found in one
// of those, it is used, and said so on stderr (cmd names the command).
// The error, when it is in none or in several, names the dirs looked in
// and the --results to give.
func findRun(env *cliEnv, cmd, flag, id string) (string, error) {
	first := resultsDir(env, flag)
	dir, err := results.RunDir(first, id)
	if err == nil || !suite.ValidName(id) {
		return dir, err
	}
	var found, searched []resultsPlace
	for _, p := range otherResultsDirs(env.cwd, first) {
		searched = append(searched, p)
		if d, err := results.RunDir(p.dir, id); err == nil {
			dir = d
			found = append(found, p)
		}
	}
	switch len(found) {
	case 1:
		fmt.Fprintf(env.stderr, "flightdeck %s: found run %s in %s; name it with --results %s\n",
			cmd, id, found[0].describe(env.cwd), shellWord(shown(env.cwd, found[0].dir)))
		return dir, nil
	case 0:
		if err := results.NotARun(id); err != nil {
			return "", err
		}
		msg := fmt.Sprintf("no run %s in %s (run.json not found)", id, shown(env.cwd, first))
		if len(searched) > 0 {
			msg += ", nor in " + places(env.cwd, searched)
		}
		if flag != "" {
			// The user named the dir: what is in it helps, not a flag
			// they already gave.
			return "", suite.UsageErrorf("%s; %s", msg, runsText(first, shown(env.cwd, first)))
		}
		return "", suite.UsageErrorf("%s; if it was written elsewhere, add --results DIR: the results dir of the suite that ran it", msg)
	}
	var opts []string
	for _, p := range found {
		opt := "--results " + shellWord(shown(env.cwd, p.dir))
		if p.whose != "" {
			opt += " (" + p.whose + ")"
		}
		opts = append(opts, opt)
	}
	return "", suite.UsageErrorf("no run %s in %s, and more than one other results dir has one: add %s",
		id, shown(env.cwd, first), strings.Join(opts, " or "))
}

// otherResultsDirs are the results dirs, other than first, of the suite
// files in cwd (each *.yaml and *.yml that loads as a suite), in their
// names' order, then ./results.
func otherResultsDirs(cwd, first string) []resultsPlace {
	var files []string
	for _, pattern := range []string{"*.yaml", "*.yml"} {
		m, _ := filepath.Glob(filepath.Join(cwd, pattern))
		files = append(files, m...)
	}
	slices.Sort(files)
	seen := map[string]bool{filepath.Clean(first): true}
	var out []resultsPlace
	add := func(dir, whose string) {
		if dir = filepath.Clean(dir); !seen[dir] {
			seen[dir] = true
			out = append(out, resultsPlace{dir: dir, whose: whose})
		}
	}
	for _, f := range files {
		if info, err := os.Stat(f); err != nil || !info.Mode().IsRegular() {
			continue
		}
		if s, err := suite.LoadSuite(f); err == nil {
			add(hostpath.Abs(s.Dir, s.Results), filepath.Base(f)+"'s results dir")
		}
	}
	add(filepath.Join(cwd, "results"), "")
	return out
}

// places lists results dirs as the user may type them.
func places(cwd string, ps []resultsPlace) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.describe(cwd))
	}
	return strings.Join(out, ", ")
}

// shown is dir relative to cwd when it is inside it.
func shown(cwd, dir string) string {
	if rel, err := filepath.Rel(cwd, dir); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		return rel
	}
	return dir
}

// shellWord quotes s for a POSIX shell when it needs it.
func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:@+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// runsText names a results dir's latest runs (name: the dir as shown).
func runsText(dir, name string) string {
	runs := results.RunsIn(dir)
	switch {
	case len(runs) == 0:
		return name + " holds no run"
	case len(runs) > 5:
		return fmt.Sprintf("%s holds %d runs, the latest: %s", name, len(runs), strings.Join(runs[len(runs)-5:], ", "))
	}
	return name + " holds: " + strings.Join(runs, ", ")
}
