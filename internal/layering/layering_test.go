// Package layering holds the test of who may import whom (the table in
// the project's design notes): arrows point one way, cmd → runner →
// grader → sandbox, with tasks at the bottom.
package layering

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/flightdeck/flightdeck/"

// rules: a package dir (and those under it unless exact) and the project
// packages its non-test files must not import.
var rules = []struct {
	dir    string
	exact  bool
	forbid []string
}{
	// The command line: flags, exit codes, signals and printing; the
	// engine, grading and the trial are the runner's.
	{"cmd/flightdeck", true, []string{"sandbox", "grader", "runner/trial"}},
	{"tasks", false, []string{"sandbox", "grader", "runner", "cmd"}},
	{"sandbox", false, []string{"tasks", "grader", "runner", "cmd"}},
	{"grader", false, []string{"runner", "cmd"}},
	{"runner", false, []string{"cmd"}},
	// A trial's surroundings know nothing of grading.
	{"runner/trialnet", true, []string{"grader", "runner/trial"}},
}

func TestWhoMayImportWhom(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	imports := map[string][]string{} // package dir → project imports
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		for _, spec := range f.Imports {
			p, _ := strconv.Unquote(spec.Path.Value)
			if rest, ok := strings.CutPrefix(p, module); ok {
				imports[filepath.ToSlash(rel)] = append(imports[filepath.ToSlash(rel)], rest)
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.Contains(t, imports, "cmd/flightdeck", "the walk found the project's packages")
	under := func(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }
	for _, r := range rules {
		for pkg, imps := range imports {
			if r.exact && pkg != r.dir || !r.exact && !under(pkg, r.dir) {
				continue
			}
			for _, imp := range imps {
				for _, f := range r.forbid {
					assert.False(t, under(imp, f),
						"%s imports %s: %s must not import %s", pkg, imp, r.dir, f)
				}
			}
		}
	}
}
