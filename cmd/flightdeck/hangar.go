package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/flightdeck/flightdeck/internal/hostpath"
	"github.com/flightdeck/flightdeck/runner"
	"github.com/flightdeck/flightdeck/runner/registry"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/tasks"
	"github.com/flightdeck/flightdeck/tasks/hangar"
)

// runHangar dispatches "flightdeck hangar SUBCOMMAND".
func runHangar(ctx context.Context, env *cliEnv, args []string) int {
	subs := []command{
		{"export", "write hangar.experiment/v1 specs for tasks, hangar's limits checked first", runHangarExport},
	}
	return group{name: "flightdeck hangar", word: "subcommand", subs: subs,
		usage: subcommandUsage("flightdeck hangar SUBCOMMAND [flags] SUITE|TASK...", subs)}.dispatch(ctx, env, args)
}

func runHangarExport(ctx context.Context, env *cliEnv, args []string) int {
	fs := newFlags(env, "hangar export", "hangar export [--out DIR] [--name NAME] [--dry-run] [--json] SUITE|TASK...",
		"flightdeck hangar export --dry-run local.yaml")
	out := fs.String("out", "hangar", "directory the experiment files are written to")
	name := fs.String("name", "", "experiments' base name (default: the suite's name, else \"flightdeck\")")
	dryRun := fs.Bool("dry-run", false, "print what would be written and the limit report; write nothing")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if code, done := parseFlags(fs, env, args); done {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(env.stderr, "flightdeck hangar export: name a suite file or task directories (see --help)")
		return exitUsage
	}
	in, err := resolveExport(ctx, env, fs.Args())
	if err != nil {
		fmt.Fprintf(env.stderr, "flightdeck hangar export: %v\n", err)
		return exitUsage
	}
	if *name != "" {
		in.name = *name
	}
	if !hangar.ValidName(in.name) {
		fmt.Fprintf(env.stderr, "flightdeck hangar export: --name %q: must start with a letter or digit and hold only letters, digits, '.', '_', '-'\n", in.name)
		return exitUsage
	}
	plan, err := hangar.Build(in.tasks, hangar.Options{Name: in.name, Root: env.cwd})
	if err != nil {
		fmt.Fprintf(env.stderr, "flightdeck hangar export: %v\n", err)
		return exitUsage
	}
	if len(in.violations) > 0 {
		plan.Violations = append(in.violations, plan.Violations...)
	}

	outDir := *out
	written := false
	if !*dryRun && len(plan.Violations) == 0 {
		if err := plan.Write(hostpath.Abs(env.cwd, outDir)); err != nil {
			fmt.Fprintf(env.stderr, "flightdeck hangar export: %v\n", err)
			return exitUsage
		}
		written = true
	}
	rep := exportReport{DryRun: *dryRun, Out: outDir, Written: written, Tasks: len(in.tasks), Plan: plan}
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(env.stderr, "flightdeck hangar export: %v\n", err)
			return exitUsage
		}
	} else {
		rep.print(env.stdout)
	}
	if len(plan.Violations) > 0 {
		fmt.Fprintf(env.stderr, "flightdeck hangar export: %d problem(s); nothing written:\n", len(plan.Violations))
		for _, v := range plan.Violations {
			fmt.Fprintf(env.stderr, "  %s\n", v)
		}
		return exitFindings
	}
	return exitOK
}

// exportReport is what hangar export prints: the plan, and whether it was written.
type exportReport struct {
	DryRun  bool   `json:"dry_run"`
	Out     string `json:"out"`
	Written bool   `json:"written"`
	Tasks   int    `json:"tasks"`
	*hangar.Plan
}

func (r exportReport) print(w io.Writer) {
	verb := "would write"
	if r.Written {
		verb = "wrote"
	}
	fmt.Fprintf(w, "hangar export: %d task(s), %d experiment(s)\n", r.Tasks, len(r.Experiments))
	for _, x := range r.Experiments {
		fmt.Fprintf(w, "\n%s %s (%d bytes)\n", verb, filepath.Join(r.Out, x.File), x.Size)
		fmt.Fprintf(w, "  grader:  %s\n", x.Command)
		fmt.Fprintf(w, "  files:   %d of %d, %d of %d bytes\n", x.GraderFiles, tasks.MaxGraderFiles, x.GraderBytes, tasks.MaxGraderBytes)
		fmt.Fprintf(w, "  tasks:   %s\n", strings.Join(x.Tasks, ", "))
	}
	if len(r.Renames) > 0 {
		fmt.Fprintln(w, "\nids shortened (hangar ids match ^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$):")
		for _, rn := range r.Renames {
			fmt.Fprintf(w, "  %s -> %s (%s)\n", rn.From, rn.To, rn.Dir)
		}
	}
	if len(r.Splits) > 0 {
		fmt.Fprintln(w, "\nsplit:")
		for _, s := range r.Splits {
			fmt.Fprintf(w, "  %s\n", s)
		}
	}
	if len(r.Violations) == 0 {
		fmt.Fprintln(w, "\nlimits: every task is within hangar's limits")
	} else {
		fmt.Fprintf(w, "\nlimits: %d problem(s); nothing written (listed on stderr)\n", len(r.Violations))
	}
}

// exportInput is what the arguments name.
type exportInput struct {
	name       string // the first suite's name, else "flightdeck"
	tasks      []*tasks.Task
	violations []hangar.Violation // tasks that failed to load
}

// resolveExport loads the tasks the arguments name: suite files (their
// tasks:, include: and exclude:), task directories, and dataset directories
// holding task directories.
func resolveExport(ctx context.Context, env *cliEnv, args []string) (*exportInput, error) {
	in := &exportInput{}
	for _, arg := range args {
		abs := hostpath.Abs(env.cwd, arg)
		info, err := os.Stat(abs)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", arg, err)
		}
		if info.IsDir() {
			dirs, err := registry.DatasetTaskDirs(abs)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", arg, err)
			}
			for _, d := range dirs {
				in.load(env, d, nil)
			}
			continue
		}
		s, err := suite.LoadSuite(abs)
		if err != nil {
			return nil, err
		}
		if in.name == "" {
			in.name = experimentName(s.Name, abs)
		}
		dirs, err := runner.TaskDirs(ctx, s)
		if err != nil {
			return nil, err
		}
		for _, d := range dirs {
			in.load(env, d, s)
		}
	}
	if in.name == "" {
		in.name = "flightdeck"
	}
	return in, nil
}

// load loads one task directory, keeping it when the suite (if any)
// includes it; a task that fails to load becomes a violation.
func (in *exportInput) load(env *cliEnv, dir string, s *suite.Suite) {
	t, err := tasks.Load(dir, tasks.LoadOptions{})
	id := filepath.Base(dir)
	if err == nil {
		id = t.ID
	}
	if s != nil && !suite.Selected(id, s.Include, s.Exclude, nil) {
		return
	}
	if err != nil {
		v := hangar.Violation{Task: id, File: relTo(env.cwd, dir), Field: "task", Rule: err.Error()}
		var le *tasks.LoadError
		if errors.As(err, &le) {
			v.File, v.Rule = relTo(env.cwd, le.File), le.Rule
			if le.Field != "" {
				v.Field = le.Field
			}
		}
		in.violations = append(in.violations, v)
		return
	}
	in.tasks = append(in.tasks, t)
}

var nameUnsafe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// experimentName makes a suite's name (else its file's base name) a valid
// experiment base name.
func experimentName(suiteName, file string) string {
	n := suiteName
	if n == "" {
		n = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	n = strings.TrimLeft(nameUnsafe.ReplaceAllString(n, "-"), "-._")
	if n == "" {
		return "flightdeck"
	}
	return n
}

// relTo shows p relative to cwd when it can.
func relTo(cwd, p string) string {
	if rel, err := filepath.Rel(cwd, p); err == nil {
		return rel
	}
	return p
}
