package main

import (
	"context"
	"fmt"

	"github.com/flightdeck/flightdeck/internal/text"
	"github.com/flightdeck/flightdeck/runner/registry"
)

func runDataset(ctx context.Context, env *cliEnv, args []string) int {
	subs := []command{
		{"init", "write a dir's dataset.toml: its tasks pinned by Harbor's content hash, as Harbor publishes a dataset", runDatasetInit},
	}
	return group{name: "flightdeck dataset", word: "subcommand", subs: subs,
		usage: subcommandUsage("flightdeck dataset SUBCOMMAND [flags]", subs)}.dispatch(ctx, env, args)
}

func runDatasetInit(_ context.Context, env *cliEnv, args []string) int {
	fs := newFlags(env, "dataset init", "dataset init [--name ORG/NAME] [--description TEXT] [--update] DIR",
		"flightdeck dataset init --name me/fixtures fixtures/audit\n  flightdeck dataset init --update fixtures/audit   # after a task changed")
	name := fs.String("name", "", "the dataset's org/name (default: local/<the dir's name>)")
	desc := fs.String("description", "", "the dataset's description")
	update := fs.Bool("update", false, "pin the tasks of an existing dataset.toml anew, keeping its [dataset]")
	if code, done := parseFlags(fs, env, args); done {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(env.stderr, "flightdeck dataset init: want one DIR, the dataset dir that holds the task dirs (see flightdeck dataset init --help)")
		return exitUsage
	}
	dir := resolveTaskDir(env, fs.Arg(0))
	m, err := registry.Init(dir, registry.InitOptions{Name: *name, Description: *desc, Update: *update})
	if err != nil {
		fmt.Fprintf(env.stderr, "flightdeck dataset init: %v\n", err)
		return exitUsage
	}
	for _, t := range m.Tasks {
		fmt.Fprintf(env.stdout, "  %s  %s\n", t.Digest, t.Name)
	}
	for _, f := range m.Files {
		fmt.Fprintf(env.stdout, "  %s  %s\n", f.Digest, f.Path)
	}
	fmt.Fprintf(env.stdout, "wrote %s: dataset %s, %s; flightdeck run --path %s runs exactly these\n",
		m.Path, m.Dataset.Name, text.Count(len(m.Tasks), "task"), fs.Arg(0))
	return exitOK
}
