package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/term"

	"github.com/flightdeck/flightdeck/runner"
	"github.com/flightdeck/flightdeck/runner/agent"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/tasks"
	"github.com/spf13/pflag"
)

func runTaskShell(ctx context.Context, env *cliEnv, args []string) int {
	fs := newFlags(env, "task shell", "task shell DIR [--with-solution] [--with-tests] [--user USER] [-- CMD...]",
		"flightdeck task shell tasks/smoke/semver --with-tests\n  echo 'cd /flightdeck/task && bash tests/test.sh; cat /flightdeck/reward/reward.*' | flightdeck task shell tasks/smoke/semver --with-tests")
	var f runFlags
	withSolution := fs.Bool("with-solution", false, "add solution/ where the oracle gets it")
	withTests := fs.Bool("with-tests", false, "add tests/ and the reward dir where the task's grader has them (a Harbor task: /tests and /logs/verifier; a native one: /flightdeck/task/tests and /flightdeck/reward), and say how the trial would be graded")
	user := fs.String("user", "", "run the shell as USER (default: the agent's user)")
	fs.StringArrayVar(&f.imageMap, "image-map", nil, "use image TO where a task names FROM (FROM=TO); repeatable")
	noSubstituteFlag(fs, &f)
	dirs, cmd, code, done := parseShellArgs(fs, env, "task shell DIR", args)
	if done {
		return code
	}
	if len(dirs) != 1 {
		fmt.Fprintln(env.stderr, "flightdeck task shell: name one task directory (a command to run goes after --)")
		return exitUsage
	}
	sh := &agent.Shell{Cmd: cmd, WithSolution: *withSolution, WithTests: *withTests}
	return openShell(ctx, env, "task shell", dirs[0], f.options(env), shellUser{name: *user}, sh)
}

// parseShellArgs parses a shell command's flags and splits its arguments
// at "--": the operands before, the command to run after. A command
// written without "--" (task shell DIR ls -la) meets the flag parser
// first; the error then says where the command goes.
func parseShellArgs(fs *pflag.FlagSet, env *cliEnv, usage string, args []string) (operands, cmd []string, code int, done bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, nil, exitOK, true
		}
		fmt.Fprintf(env.stderr, "flightdeck: %v\n", err)
		if !slices.Contains(args, "--") {
			fmt.Fprintf(env.stderr, "a command for the shell goes after --: flightdeck %s -- CMD [ARGS...]\n", usage)
		}
		return nil, nil, exitUsage, true
	}
	operands = fs.Args()
	if at := fs.ArgsLenAtDash(); at >= 0 {
		operands, cmd = fs.Args()[:at], fs.Args()[at:]
	}
	return operands, cmd, exitOK, false
}

// shellUser is who the shell runs as: the agent's user, unless a name is
// given, or the verifier's ([verifier].user; none: the image's user).
type shellUser struct {
	name     string
	verifier bool
}

// openShell runs a shell's trial of the task in dir: its container
// started as a trial's agent phase starts it, sh in the agent's place, as
// user. The exit code is the shell's, or says why it never ran.
func openShell(ctx context.Context, env *cliEnv, name, dir string, opts suite.Options, user shellUser, sh *agent.Shell) int {
	tmp, err := os.MkdirTemp("", "flightdeck-shell-")
	if err != nil {
		fmt.Fprintf(env.stderr, "flightdeck %s: %v\n", name, err)
		return exitInfra
	}
	keep := false // the files of a shell that never ran say why
	defer func() {
		if !keep {
			os.RemoveAll(tmp)
		}
	}()
	opts.Results, opts.Retries = filepath.Join(tmp, "results"), 0
	req, err := runner.PrepareShell(ctx, dir, opts)
	if err != nil {
		fmt.Fprintf(env.stderr, "flightdeck %s: %v\n", name, err)
		if _, refused := errors.AsType[*runner.RefusedError](err); refused {
			return exitTask
		}
		return exitUsage
	}
	cfg := &req.Tasks[0].Config
	switch {
	case user.name != "":
		cfg.Agent.User = user.name
	case user.verifier:
		cfg.Agent.User = cfg.Verifier.User
	}
	sh.Say = func(p string) { fmt.Fprintln(env.stderr, p) }
	sh.Stdio, sh.Raw = shellStdio(env)
	r, closeAll := newRunner(env, opts.Results)
	defer closeAll()
	r.Agent, r.AgentOnly = sh, true
	rec, err := r.Run(ctx, req)
	if err != nil {
		fmt.Fprintf(env.stderr, "flightdeck %s: %v\n", name, err)
		var ue *suite.UsageError
		if errors.As(err, &ue) {
			return exitUsage
		}
		return exitInfra
	}
	if ctx.Err() != nil {
		fmt.Fprintf(env.stderr, "flightdeck %s: interrupted; the container is removed\n", name)
		return exitInterrupted
	}
	if sh.Ran {
		return sh.ExitCode
	}
	// The shell never started: say why, from the trial's result.
	res := shellResult(rec)
	if res == nil || res.Error == "" {
		fmt.Fprintf(env.stderr, "flightdeck %s: the shell did not start\n", name)
		return exitInfra
	}
	if user.name != "" && strings.Contains(res.Error, "unable to find user "+user.name) {
		fmt.Fprintf(env.stderr, "flightdeck %s: --user %s: the image has no such user (its /etc/passwd lists the names it knows)\n", name, user.name)
		return exitUsage
	}
	fmt.Fprintf(env.stderr, "flightdeck %s: %s\n", name, res.Error)
	if strings.Contains(res.Error, tmp) {
		keep = true
		fmt.Fprintf(env.stderr, "flightdeck %s: the files named above are kept in %s; remove it when done\n", name, tmp)
	}
	if res.TaskError() {
		return exitTask
	}
	return exitInfra
}

// shellResult is the one trial's result of a shell's run.
func shellResult(rec *results.RunRecord) *results.Result {
	entries, _ := os.ReadDir(rec.Dir)
	for _, e := range entries {
		if r, err := results.ReadResult(filepath.Join(rec.Dir, e.Name(), results.ResultFile)); err == nil {
			return r
		}
	}
	return nil
}

// shellStdio connects the shell to the person's terminal when stdin is
// one (raw mode while it runs, its size followed), else to plain pipes.
func shellStdio(env *cliEnv) (*agent.Stdio, func() func()) {
	st := &agent.Stdio{In: env.stdin, Out: env.stdout, Err: env.stderr}
	in, ok := env.stdin.(*os.File)
	if !ok || !term.IsTerminal(int(in.Fd())) {
		return st, nil
	}
	fd := int(in.Fd())
	st.TTY = true
	st.Size = func() (uint, uint) {
		w, h, err := term.GetSize(fd)
		if err != nil {
			return 80, 24
		}
		return uint(w), uint(h)
	}
	raw := func() func() {
		resized := make(chan struct{}, 1)
		winch := make(chan os.Signal, 1)
		signal.Notify(winch, syscall.SIGWINCH)
		go func() {
			for range winch {
				select {
				case resized <- struct{}{}:
				default:
				}
			}
		}()
		st.Resized = resized
		old, err := term.MakeRaw(fd)
		return func() {
			signal.Stop(winch)
			close(winch)
			if err == nil {
				_ = term.Restore(fd, old)
			}
		}
	}
	return st, raw
}

func runTrial(ctx context.Context, env *cliEnv, args []string) int {
	subs := []command{
		{"shell", "open a shell on a finished trial's work dir, as its agent left it", runTrialShell},
	}
	return group{name: "flightdeck trial", word: "subcommand", subs: subs,
		usage: subcommandUsage("flightdeck trial SUBCOMMAND [flags] RUN_ID TRIAL", subs)}.dispatch(ctx, env, args)
}

// Whose a trial shell is: the agent's (its user, the work dir as it left
// it) or the verifier's (its user, and the tests at /tests).
const (
	asAgent    = "agent"
	asVerifier = "verifier"
)

func runTrialShell(ctx context.Context, env *cliEnv, args []string) int {
	fs := newFlags(env, "trial shell", "trial shell RUN_ID TRIAL [--as agent|verifier] [-- CMD...]",
		"flightdeck trial shell 20250130-101500-a1b2c3 semver__oracle__1 --as verifier\n  echo 'cd /flightdeck/task && bash tests/test.sh; cat /flightdeck/reward/reward.*' | flightdeck trial shell RUN_ID TRIAL --as verifier")
	as := fs.String("as", asAgent, "whose shell: agent (its user) or verifier (its user, with the tests at /tests)")
	resultsPath := fs.String("results", "", "results dir (default: the default suite's, else ./results)")
	ids, cmd, code, done := parseShellArgs(fs, env, "trial shell RUN_ID TRIAL", args)
	if done {
		return code
	}
	if len(ids) != 2 {
		fmt.Fprintln(env.stderr, "flightdeck trial shell: name a run id and one of its trials (flightdeck report RUN_ID lists them)")
		return exitUsage
	}
	if *as != asAgent && *as != asVerifier {
		fmt.Fprintf(env.stderr, "flightdeck trial shell: --as %q: want agent or verifier\n", *as)
		return exitUsage
	}
	dir, err := findRun(env, "trial shell", *resultsPath, ids[0])
	if err != nil {
		fmt.Fprintf(env.stderr, "flightdeck trial shell: %v\n", err)
		return exitUsage
	}
	trialDir := filepath.Join(dir, ids[1])
	res, err := results.ReadResult(filepath.Join(trialDir, results.ResultFile))
	if err != nil || filepath.Base(ids[1]) != ids[1] || strings.HasPrefix(ids[1], ".") {
		fmt.Fprintf(env.stderr, "flightdeck trial shell: run %s has no trial %q with a result (flightdeck report %s lists its trials)\n", ids[0], ids[1], ids[0])
		return exitUsage
	}
	patch := filepath.Join(trialDir, results.DiffPatch)
	if _, err := os.Stat(patch); err != nil {
		fmt.Fprintf(env.stderr, "flightdeck trial shell: trial %s has no %s (its agent phase did not finish: %s): nothing to rebuild\n",
			ids[1], results.DiffPatch, res.Error)
		return exitUsage
	}
	rec, err := results.ReadRunRecord(dir)
	if err != nil {
		fmt.Fprintf(env.stderr, "flightdeck trial shell: %v\n", err)
		return exitUsage
	}
	if rec.Config.Keep {
		if code, ok := keptShell(ctx, env, rec.RunID, ids[1], res, *as == asVerifier, cmd); ok {
			return code
		}
	}
	opts := suite.Options{Cwd: env.cwd, NoSubstitute: rec.Config.NoSubstitute}
	for from, to := range rec.Config.Images {
		opts.ImageMap = append(opts.ImageMap, from+"="+to)
	}
	fmt.Fprintf(env.stderr, "flightdeck trial shell: %s rebuilt from the task image and the trial's %s (%s, %s)\n",
		ids[1], results.DiffPatch, res.Outcome, results.RewardText(res))
	sh := &agent.Shell{Cmd: cmd, Patch: patch, WithTests: *as == asVerifier, TestsFlag: "--as verifier"}
	return openShell(ctx, env, "trial shell", res.TaskDir, opts, shellUser{verifier: *as == asVerifier}, sh)
}

// keptShell opens the shell in the container a run made with --keep left
// of the trial; ok is false when there is none (a nop agent on a native
// task starts none; a gc may have removed it).
func keptShell(ctx context.Context, env *cliEnv, runID, trial string, res *results.Result, verifier bool, cmd []string) (int, bool) {
	sh := &agent.Shell{Cmd: cmd, WithTests: verifier, TestsFlag: "--as verifier"}
	sh.Stdio, sh.Raw = shellStdio(env)
	k := &runner.KeptShell{RunID: runID, Trial: trial, Result: res, Verifier: verifier, Shell: sh, Log: env.log,
		Say: func(p string) { fmt.Fprintln(env.stderr, p) }}
	code, err := k.Open(ctx)
	switch {
	case errors.Is(err, runner.ErrNoKeptContainer):
		fmt.Fprintf(env.stderr, "flightdeck trial shell: the run kept its containers (--keep), but none is %s's (its agent needed none, or it was removed since); rebuilding it\n", trial)
		return 0, false
	case errors.As(err, new(*tasks.LoadError)):
		fmt.Fprintf(env.stderr, "flightdeck trial shell: load the trial's task: %v\n", err)
		return exitUsage, true
	case err != nil:
		fmt.Fprintf(env.stderr, "flightdeck trial shell: %v\n", err)
		return exitInfra, true
	}
	return code, true
}
