package main

import (
	"context"
)

// runTask dispatches "flightdeck task SUBCOMMAND".
func runTask(ctx context.Context, env *cliEnv, args []string) int {
	subs := []command{
		{"new", "write a new task from the template", runTaskNew},
		{"check", "check task directories and report every finding", runTaskCheck},
		{"digest", "print (or --write) a task's digests", runTaskDigest},
		{"verify", "audit tasks: the oracle passes every run, nop fails, no leaks, flaky or weak tests", runTaskVerify},
		{"shell", "open a shell in a task's environment, started as a trial's agent phase starts it", runTaskShell},
		{"import-aidlc", "convert an ai-dlc suite into tasks, specs and a suite file", runTaskImportAidlc},
	}
	return group{name: "flightdeck task", word: "subcommand", subs: subs,
		usage: subcommandUsage("flightdeck task SUBCOMMAND [flags] DIR...", subs)}.dispatch(ctx, env, args)
}
