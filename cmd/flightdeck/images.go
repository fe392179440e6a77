package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/flightdeck/flightdeck/internal/files"
	"github.com/flightdeck/flightdeck/runner"
	"github.com/flightdeck/flightdeck/runner/imagecache"
	"github.com/flightdeck/flightdeck/runner/images"
	"github.com/flightdeck/flightdeck/runner/suite"
)

func runImages(ctx context.Context, env *cliEnv, args []string) int {
	subs := []command{
		{"ls", "list the cached task images: size, when built, when last used and by which runs", runImagesLs},
		{"prune", "evict cached task images, least recently used first: --max-size, --older-than", runImagesPrune},
		{"save", "write the task images of a suite or dataset (and their bases) into one bundle", runImagesSave},
		{"load", "load a bundle that images save wrote, and check it", runImagesLoad},
		{"base", "build the offline base image (" + images.Fallback + ") that stands in for a missing official image", runImagesBase},
	}
	return group{name: "flightdeck images", word: "subcommand", subs: subs,
		usage: subcommandUsage("flightdeck images SUBCOMMAND [flags]", subs)}.dispatch(ctx, env, args)
}

// imageIndexDir is where runs record their uses of task images.
func imageIndexDir() string {
	dir, err := imagecache.DefaultDir(os.Getenv)
	if err != nil {
		return ""
	}
	return dir
}

// openImageStore connects to the engine for the images commands; an
// engine that does not answer is the infrastructure's failure (exitInfra).
func openImageStore(ctx context.Context, env *cliEnv, name string) (*runner.Engine, bool) {
	d, err := runner.Connect(ctx, env.log)
	if err != nil {
		fmt.Fprintf(env.stderr, "flightdeck %s: %v\n", name, err)
		return nil, false
	}
	return d, true
}

func runImagesLs(ctx context.Context, env *cliEnv, args []string) int {
	fs := newFlags(env, "images ls", "images ls [--json] [--sizes]", "flightdeck images ls\n  flightdeck images ls --sizes")
	asJSON := fs.Bool("json", false, "print the list as JSON")
	fresh := fs.Bool("sizes", false, "measure every image's own size anew from the engine's disk usage (slow on a large engine); without it, sizes come from the image list and the image index")
	if code, done := parseNoArgs(fs, env, "images ls", args); done {
		return code
	}
	d, ok := openImageStore(ctx, env, "images ls")
	if !ok {
		return exitInfra
	}
	defer d.Close()
	list, err := d.CachedImages(ctx, imageIndexDir(), *fresh)
	if err != nil {
		fmt.Fprintf(env.stderr, "flightdeck images ls: %v\n", err)
		return exitFindings
	}
	slices.SortFunc(list, func(a, b images.Cached) int { return b.LastUsed.Compare(a.LastUsed) })
	if *asJSON {
		type row struct {
			Ref      string    `json:"ref"`
			ID       string    `json:"id"`
			Size     int64     `json:"size"`
			Created  time.Time `json:"created"`
			LastUsed time.Time `json:"last_used"`
			Runs     []string  `json:"runs,omitempty"`
			InUse    bool      `json:"in_use"`
		}
		rows := []row{}
		for _, c := range list {
			rows = append(rows, row{c.Ref, c.ID, c.Size, c.Created, c.LastUsed, c.Runs, c.InUse})
		}
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rows)
		return exitOK
	}
	now := time.Now()
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "IMAGE\tSIZE\tCREATED\tLAST USED\tRUNS")
	var total int64
	for _, c := range list {
		used := "never (built " + ago(now, c.Created) + ")"
		if c.Used {
			used = ago(now, c.LastUsed)
		}
		if c.InUse {
			used += ", in use"
		}
		runs := strings.Join(c.Runs, " ")
		if runs == "" {
			runs = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Ref, imagecache.HumanSize(c.Size), ago(now, c.Created), used, runs)
		total += c.Size
	}
	tw.Flush()
	fmt.Fprintf(env.stdout, "%d images, %s of their own layers (SIZE: what removing one frees; base images not counted)\n", len(list), imagecache.HumanSize(total))
	return exitOK
}

// ago says how long before now t was: 3m ago, 2h ago, 4d ago.
func ago(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}

// parseAge reads a duration as Go writes one, with days too: 36h, 7d.
func parseAge(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.ParseFloat(n, 64)
		if err == nil && days > 0 {
			return time.Duration(days * float64(24*time.Hour)), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not an age (for example 36h, 7d)", s)
	}
	return d, nil
}

func runImagesPrune(ctx context.Context, env *cliEnv, args []string) int {
	fs := newFlags(env, "images prune", "images prune [--max-size SIZE] [--older-than AGE] [--match GLOB] [--dry-run]",
		"flightdeck images prune --max-size 20GB\n  flightdeck images prune --older-than 14d")
	maxSize := fs.String("max-size", "", "evict least recently used task images until the rest fit in SIZE (20GB, 500MiB)")
	olderThan := fs.String("older-than", "", "evict task images not used for longer than AGE (36h, 7d)")
	match := fs.String("match", "", "consider only images whose name matches this glob (flightdeck/swe-*); sizes are theirs alone")
	dryRun := fs.Bool("dry-run", false, "list what would be evicted and the space it would free; remove nothing")
	if code, done := parseFlags(fs, env, args); done {
		return code
	}
	var p imagecache.Policy
	var err error
	if *maxSize != "" {
		if p.MaxSize, err = imagecache.ParseSize(*maxSize); err != nil {
			fmt.Fprintf(env.stderr, "flightdeck images prune: --max-size: %v\n", err)
			return exitUsage
		}
		if p.MaxSize == 0 {
			p.MaxSize = 1 // 0 means no bound to the policy: evict everything not in use
		}
	}
	if *olderThan != "" {
		if p.OlderThan, err = parseAge(*olderThan); err != nil {
			fmt.Fprintf(env.stderr, "flightdeck images prune: --older-than: %v\n", err)
			return exitUsage
		}
	}
	if *match != "" {
		if _, err := path.Match(*match, ""); err != nil {
			fmt.Fprintf(env.stderr, "flightdeck images prune: --match %q: %v\n", *match, err)
			return exitUsage
		}
		glob := *match
		p.Match = func(ref string) bool {
			name, _, _ := strings.Cut(ref, ":")
			ok, _ := path.Match(glob, name)
			return ok
		}
	}
	if *maxSize == "" && *olderThan == "" || fs.NArg() > 0 {
		fmt.Fprintln(env.stderr, "flightdeck images prune: give --max-size SIZE, --older-than AGE or both, and no arguments")
		return exitUsage
	}
	d, ok := openImageStore(ctx, env, "images prune")
	if !ok {
		return exitInfra
	}
	defer d.Close()
	prune, did := d.PruneImages, "evicted"
	if *dryRun {
		prune, did = d.PlanPrune, "would evict"
	}
	sum, err := prune(ctx, imageIndexDir(), p, time.Now())
	for _, ref := range sum.Evicted {
		fmt.Fprintf(env.stdout, "%s %s\n", did, ref)
	}
	of := ""
	if *match != "" {
		of = fmt.Sprintf(" in images matching %q", *match)
	}
	left, dry := "cached", ""
	if *dryRun {
		left, dry = "would stay cached", "; nothing was removed (--dry-run)"
	}
	fmt.Fprintf(env.stdout, "images prune: %s %d (%s); %s %s%s (own layers; base images not counted)%s\n", did, len(sum.Evicted),
		imagecache.HumanSize(sum.Freed), imagecache.HumanSize(sum.After), left, of, dry)
	if err != nil {
		fmt.Fprintf(env.stderr, "flightdeck images prune: %v\n", err)
		return exitFindings
	}
	return exitOK
}

// suiteFlags are the flags that choose a suite's or dataset's tasks, for
// the commands that build them without running them.
func suiteFlags(fs *pflag.FlagSet, f *runFlags) {
	fs.StringArrayVarP(&f.tasks, "task", "t", nil, "a task or dataset dir (replaces the suite's tasks), or a task-id glob (narrows them); repeatable")
	fs.StringArrayVarP(&f.paths, "path", "p", nil, "a dataset dir or a task dir instead of the suite's tasks; repeatable; no suite needed")
	fs.StringArrayVar(&f.include, "include", nil, "only tasks whose id matches this glob; repeatable")
	fs.StringArrayVar(&f.exclude, "exclude", nil, "skip tasks whose id matches this glob; repeatable")
	fs.StringArrayVar(&f.imageMap, "image-map", nil, "use image TO where a task names FROM (FROM=TO); repeatable")
	noSubstituteFlag(fs, f)
	fs.StringVar(&f.resultsPath, "results", "", "results dir, for the build logs (default: the suite's)")
}

// prepareTasks resolves a suite's or dataset's tasks as run would.
// args are the command's arguments: at most a suite file.
func prepareTasks(ctx context.Context, env *cliEnv, name string, args []string, f runFlags) (runner.Request, bool) {
	if len(args) > 1 {
		fmt.Fprintf(env.stderr, "flightdeck %s: one suite file at most, got %d arguments\n", name, len(args))
		return runner.Request{}, false
	}
	file := suite.DefaultSuiteFile
	switch {
	case len(args) == 1:
		file = args[0]
	case len(f.paths) > 0:
		file = ""
	}
	opts := f.options(env)
	opts.Retries = -1
	req, err := runner.Prepare(ctx, file, opts)
	if err == nil {
		err = applyShard(env, name, &req, f)
	}
	if err != nil {
		fmt.Fprintf(env.stderr, "flightdeck %s: %v\n", name, err)
		return runner.Request{}, false
	}
	return req, true
}

// newRunner is a runner on the engine (opened when the run needs it, and
// closed by the function returned), its progress on stderr, recording its
// uses of task images in the user's image index.
func newRunner(env *cliEnv, results string) (*runner.Runner, func()) {
	c := &runner.Connector{ProbeDir: results, Log: env.log}
	// The tracer of task verify's traced oracle is this executable.
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		exe = ""
	}
	// Results another build of flightdeck got are not this one's.
	build := ""
	if exe != "" {
		if idx := imageIndexDir(); idx != "" {
			build, _ = files.CachedSHA256(exe, filepath.Join(idx, "exe-digests"))
		} else {
			build, _ = files.SHA256(exe)
		}
	}
	r := &runner.Runner{
		Open:        c.Open,
		Tracer:      exe,
		BuildDigest: build,
		Progress:    env.stderr, Version: version, ImageIndex: imageIndexDir(),
		Owner: runner.ProcessOwner(), Hurry: env.hurry, Log: env.log,
	}
	return r, c.Close
}

// buildAll builds every task image of req and prints a line for each; code
// is the exit code: 0 when all were built or found, 4 when a task was
// refused or its image did not build (the task's own defect), 3 when the
// engine failed, 2 on usage.
func buildAll(ctx context.Context, env *cliEnv, out io.Writer, req runner.Request, jobs int) ([]runner.BuildLine, int) {
	r, closeAll := newRunner(env, req.Config.Results)
	defer closeAll()
	code := exitOK
	for _, rt := range req.Refused {
		fmt.Fprintf(out, "refused %s  %s\n", rt.ID, rt.Refusal)
		code = exitTask
	}
	start := time.Now()
	// A build a signal stopped did not fail: it is said so, on its line
	// and in the count, and nothing is blamed on the task or the engine.
	stopped := func(l runner.BuildLine) bool {
		return l.Err != nil && ctx.Err() != nil && errors.Is(l.Err, context.Canceled)
	}
	lines, err := r.Build(ctx, req, jobs, func(l runner.BuildLine) {
		if stopped(l) {
			fmt.Fprintf(out, "stopped %s  interrupted, not built\n", l.Task)
			return
		}
		fmt.Fprintln(out, l.String())
	})
	var built, cached, failed, interrupted int
	infra := false
	for _, l := range lines {
		switch {
		case stopped(l):
			interrupted++
		case l.Err != nil:
			failed++
			infra = infra || !l.TaskDefect()
		case l.Cached:
			cached++
		case l.Ref != "":
			built++
		}
	}
	summary := fmt.Sprintf("build: %d built, %d cached, %d failed", built, cached, failed)
	if ctx.Err() != nil {
		summary = fmt.Sprintf("build: interrupted: %d built, %d cached, %d failed, %d not built", built, cached, failed, interrupted)
	}
	if n := len(req.Refused); n > 0 {
		summary += fmt.Sprintf(", %d refused (fix the task: see its line)", n)
	}
	fmt.Fprintf(out, "%s in %.1fs\n", summary, time.Since(start).Seconds())
	switch {
	case ctx.Err() != nil:
		return lines, exitInterrupted
	case err != nil:
		fmt.Fprintf(env.stderr, "flightdeck: %v\n", err)
		if _, usage := errors.AsType[*suite.UsageError](err); usage {
			return lines, exitUsage
		}
		return lines, exitInfra
	case failed > 0 && code == exitOK:
		code = exitTask
		if infra {
			code = exitInfra
		}
	}
	return lines, code
}

func runBuild(ctx context.Context, env *cliEnv, args []string) int {
	fs := newFlags(env, "build", "build [SUITE] [--path DIR...] [--jobs N]",
		"flightdeck build local.yaml -j 4\n  flightdeck build --path fixtures/harbor/tasks --image-map python:3.12-slim=flightdeck/base:bookworm")
	var f runFlags
	suiteFlags(fs, &f)
	fs.VarP(&jobsFlag{n: &f.jobs, auto: &f.autoJobs}, "jobs", "j", "builds at once (default: the suite's concurrency, else the number of CPUs)")
	shardFlags(fs, &f)
	if code, done := parseFlags(fs, env, args); done {
		return code
	}
	if f.jobs < 0 {
		fmt.Fprintln(env.stderr, "flightdeck build: --jobs cannot be negative")
		return exitUsage
	}
	req, ok := prepareTasks(ctx, env, "build", fs.Args(), f)
	if !ok {
		return exitUsage
	}
	_, code := buildAll(ctx, env, env.stdout, req, f.jobs)
	return code
}

func runImagesSave(ctx context.Context, env *cliEnv, args []string) int {
	fs := newFlags(env, "images save", "images save BUNDLE [SUITE] [--path DIR...]",
		"flightdeck images save ci-images.tar local.yaml\n  flightdeck images save harbor.tar --path fixtures/harbor/tasks --image-map python:3.12-slim=flightdeck/base:bookworm")
	var f runFlags
	suiteFlags(fs, &f)
	fs.VarP(&jobsFlag{n: &f.jobs, auto: &f.autoJobs}, "jobs", "j", "builds at once (default: the suite's concurrency, else the number of CPUs)")
	if code, done := parseFlags(fs, env, args); done {
		return code
	}
	if fs.NArg() < 1 {
		fmt.Fprintln(env.stderr, "flightdeck images save: name the bundle to write: images save BUNDLE [SUITE]")
		return exitUsage
	}
	bundle := absPath(env.cwd, fs.Arg(0))
	req, ok := prepareTasks(ctx, env, "images save", fs.Args()[1:], f)
	if !ok {
		return exitUsage
	}
	lines, code := buildAll(ctx, env, env.stderr, req, f.jobs)
	if code != exitOK {
		fmt.Fprintln(env.stderr, "flightdeck images save: not every task image could be built; no bundle written")
		return code
	}
	d, ok := openImageStore(ctx, env, "images save")
	if !ok {
		return exitInfra
	}
	defer d.Close()
	m, err := d.SaveBundle(ctx, bundle, lines)
	if err != nil {
		fmt.Fprintf(env.stderr, "flightdeck images save: %v\n", err)
		return exitFindings
	}
	st, _ := os.Stat(bundle)
	fmt.Fprintf(env.stdout, "images save: %d task images and %d base images → %s (%s)\n", len(m.Images), len(m.Bases), bundle, imagecache.HumanSize(st.Size()))
	return exitOK
}

func runImagesLoad(ctx context.Context, env *cliEnv, args []string) int {
	fs := newFlags(env, "images load", "images load BUNDLE", "flightdeck images load ci-images.tar")
	if code, done := parseFlags(fs, env, args); done {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(env.stderr, "flightdeck images load: name one bundle (written by flightdeck images save)")
		return exitUsage
	}
	path := absPath(env.cwd, fs.Arg(0))
	d, ok := openImageStore(ctx, env, "images load")
	if !ok {
		return exitInfra
	}
	defer d.Close()
	m, err := d.LoadBundle(ctx, path)
	if err != nil {
		fmt.Fprintf(env.stderr, "flightdeck images load: %s: %v\n", path, err)
		return exitFindings
	}
	var refs []imagecache.Touched
	for _, img := range m.Images {
		refs = append(refs, imagecache.Touched{Ref: img.Ref})
	}
	if dir := imageIndexDir(); dir != "" {
		if err := imagecache.Open(dir).Touch(refs, "", time.Now()); err != nil {
			fmt.Fprintf(env.stderr, "flightdeck images load: image index: %v\n", err)
		}
	}
	fmt.Fprintf(env.stdout, "images load: %d task images and %d base images loaded and checked\n", len(m.Images), len(m.Bases))
	return exitOK
}

func runImagesBase(ctx context.Context, env *cliEnv, args []string) int {
	fs := newFlags(env, "images base", "images base", "flightdeck images base")
	if code, done := parseNoArgs(fs, env, "images base", args); done {
		return code
	}
	if err := runner.BuildBaseImage(ctx, env.stderr); err != nil {
		fmt.Fprintf(env.stderr, "flightdeck images base: %v\n", err)
		return exitInfra
	}
	return exitOK
}
