package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/flightdeck/flightdeck/internal/text"
	"github.com/flightdeck/flightdeck/tasks"
)

func runTaskNew(_ context.Context, env *cliEnv, args []string) int {
	fs := newFlags(env, "task new", "task new PATH [--name org/name]",
		"flightdeck task new tasks/regression/fix-retry --name flightdeck/fix-retry")
	name := fs.String("name", "", "the task's [task].name, org/name (default flightdeck/<last element of PATH>)")
	if code, done := parseFlags(fs, env, args); done {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(env.stderr, "flightdeck task new: want exactly one PATH (see flightdeck task new --help)")
		return exitUsage
	}
	arg := fs.Arg(0)
	if err := tasks.New(resolveTaskDir(env, arg), *name); err != nil {
		fmt.Fprintf(env.stderr, "flightdeck task new: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(env.stdout, "created %s\n", arg)
	fmt.Fprintln(env.stdout, "next: write instruction.md, replace tests/test_hidden.py and solution/solve.sh, then")
	fmt.Fprintf(env.stdout, "  flightdeck task digest --write %s && flightdeck task check %s\n", arg, arg)
	return exitOK
}

// checkedTask is one directory's result of task check, as --json prints it.
type checkedTask struct {
	Dir      string          `json:"dir"`
	Findings []tasks.Finding `json:"findings"`
}

func runTaskCheck(_ context.Context, env *cliEnv, args []string) int {
	fs := newFlags(env, "task check", "task check [--json] DIR...", "flightdeck task check tasks/smoke/semver tasks/fixtures/csv-validator")
	asJSON := fs.Bool("json", false, "print the findings as JSON")
	if code, done := parseFlags(fs, env, args); done {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(env.stderr, "flightdeck task check: want at least one DIR (see flightdeck task check --help)")
		return exitUsage
	}
	var out []checkedTask
	errs, warns := 0, 0
	for _, arg := range datasetArgs(env, fs.Args()) {
		dir := resolveTaskDir(env, arg)
		found := tasks.Check(dir)
		for i := range found {
			found[i].Path = displayPath(arg, dir, found[i].Path)
			if found[i].Severity == tasks.SeverityError {
				errs++
			} else {
				warns++
			}
		}
		out = append(out, checkedTask{Dir: arg, Findings: found})
	}
	if *asJSON {
		writeJSON(env, map[string]any{"tasks": out, "errors": errs, "warnings": warns})
	} else {
		for _, t := range out {
			if len(t.Findings) == 0 {
				fmt.Fprintf(env.stdout, "%s: ok\n", t.Dir)
			}
			for _, f := range t.Findings {
				fmt.Fprintf(env.stdout, "%s: %s [%s] %s\n", f.Path, f.Severity, f.Rule, f.Message)
			}
		}
		fmt.Fprintf(env.stdout, "%s checked: %s, %s\n", text.Count(len(out), "task"), text.Count(errs, "error"), text.Count(warns, "warning"))
	}
	if errs > 0 {
		return exitFindings
	}
	return exitOK
}

// digestedTask is one directory's result of task digest, as --json prints it.
type digestedTask struct {
	Dir                 string `json:"dir"`
	TaskDigest          string `json:"task_digest,omitempty"`
	FilesDigest         string `json:"files_digest,omitempty"`
	RecordedFilesDigest string `json:"recorded_files_digest"`
	// HarborDigest is Harbor's content hash, the digest a dataset.toml
	// pins the task by.
	HarborDigest string `json:"harbor_digest,omitempty"`
	Written      bool   `json:"written"`
	Error        string `json:"error,omitempty"`
}

func runTaskDigest(_ context.Context, env *cliEnv, args []string) int {
	fs := newFlags(env, "task digest", "task digest [--write] [--json] DIR...", "flightdeck task digest --write tasks/smoke/semver")
	write := fs.Bool("write", false, "record the digest of tests/ as [flightdeck.grader].files_digest in task.toml")
	asJSON := fs.Bool("json", false, "print the digests as JSON")
	if code, done := parseFlags(fs, env, args); done {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(env.stderr, "flightdeck task digest: want at least one DIR (see flightdeck task digest --help)")
		return exitUsage
	}
	code := exitOK
	var out []digestedTask
	for _, arg := range fs.Args() {
		d := digestOne(resolveTaskDir(env, arg), *write)
		d.Dir = arg
		if d.Error != "" {
			d.Error = strings.ReplaceAll(d.Error, resolveTaskDir(env, arg), arg)
			code = exitFindings
		}
		out = append(out, d)
	}
	if *asJSON {
		writeJSON(env, map[string]any{"tasks": out})
		return code
	}
	for _, d := range out {
		if d.Error != "" {
			fmt.Fprintf(env.stderr, "flightdeck task digest: %s\n", d.Error)
			continue
		}
		fmt.Fprintf(env.stdout, "%s\n  task_digest   %s\n  files_digest  %s  (%s)\n  harbor_digest %s  (Harbor's content hash: a dataset.toml's digest)\n",
			d.Dir, d.TaskDigest, d.FilesDigest, recordedNote(d), d.HarborDigest)
	}
	return code
}

func digestOne(dir string, write bool) digestedTask {
	var d digestedTask
	var err error
	if write {
		old, new, err := tasks.WriteFilesDigest(dir)
		if err != nil {
			return digestedTask{Error: err.Error()}
		}
		d.Written = old != new
	}
	if d.FilesDigest, err = tasks.FilesDigest(dir); err != nil {
		return digestedTask{Error: err.Error()}
	}
	if d.TaskDigest, err = tasks.TaskDigest(dir); err != nil {
		return digestedTask{Error: err.Error()}
	}
	if d.RecordedFilesDigest, err = tasks.RecordedFilesDigest(dir); err != nil {
		return digestedTask{Error: err.Error()}
	}
	if d.HarborDigest, err = tasks.HarborDigest(dir); err != nil {
		return digestedTask{Error: err.Error()}
	}
	return d
}

func recordedNote(d digestedTask) string {
	switch {
	case d.Written:
		return "written to task.toml"
	case d.RecordedFilesDigest == "":
		return "not recorded in task.toml; run with --write"
	case d.RecordedFilesDigest == d.FilesDigest:
		return "matches task.toml"
	}
	return "task.toml records " + d.RecordedFilesDigest + "; run with --write if the change to tests/ is deliberate"
}

// datasetArgs replaces each argument that is a dataset dir (no task.toml
// of its own, task dirs below it) by its task dirs, as run and task verify
// read it; the others stay.
func datasetArgs(env *cliEnv, args []string) []string {
	var out []string
	for _, arg := range args {
		dir := resolveTaskDir(env, arg)
		if _, err := os.Stat(filepath.Join(dir, tasks.TaskFile)); err == nil {
			out = append(out, arg)
			continue
		}
		ents, err := os.ReadDir(dir)
		var subs []string
		for _, e := range ents {
			if _, serr := os.Stat(filepath.Join(dir, e.Name(), tasks.TaskFile)); e.IsDir() && serr == nil {
				subs = append(subs, filepath.Join(arg, e.Name()))
			}
		}
		if err != nil || len(subs) == 0 {
			out = append(out, arg) // its check says what it lacks
			continue
		}
		out = append(out, subs...)
	}
	return out
}

// resolveTaskDir resolves a path argument against the command's working directory.
func resolveTaskDir(env *cliEnv, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(env.cwd, p)
}

// displayPath shows p, a path under the resolved dir, relative to the
// argument the user gave.
func displayPath(arg, dir, p string) string {
	rel, err := filepath.Rel(dir, p)
	if err != nil || strings.HasPrefix(rel, "..") {
		return p
	}
	return filepath.Join(arg, rel)
}

func writeJSON(env *cliEnv, v any) {
	enc := json.NewEncoder(env.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(env.stderr, "flightdeck: encode JSON: %v\n", err)
	}
}
