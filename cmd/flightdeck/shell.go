package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"golang.org/x/term"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/runner"
	"github.com/flightdeck/flightdeck/runner/agent"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/sandbox"
)

func runTaskShell(ctx context.Context, env *cliEnv, args []string) int {
	fs := newFlags(env, "task shell", "task shell DIR [--with-solution] [--with-tests] [--user USER] [-- CMD...]",
		"flightdeck task shell tasks/smoke/semver --with-tests\n  echo 'bash /tests/test.sh; cat /logs/verifier/reward.*' | flightdeck task shell tasks/smoke/semver --with-tests")
	var f runFlags
	withSolution := fs.Bool("with-solution", false, "add solution/ where the oracle gets it")
	withTests := fs.Bool("with-tests", false, "add tests/ at /tests (and /logs/verifier for the reward), and say how the trial would be graded")
	user := fs.String("user", "", "run the shell as USER (default: the agent's user)")
	fs.StringArrayVar(&f.imageMap, "image-map", nil, "use image TO where a task names FROM (FROM=TO); repeatable")
	noSubstituteFlag(fs, &f)
	if code, done := parseFlags(fs, env, args); done {
		return code
	}
	dirs, cmd := fs.Args(), []string(nil)
	if at := fs.ArgsLenAtDash(); at >= 0 {
		dirs, cmd = fs.Args()[:at], fs.Args()[at:]
	}
	if len(dirs) != 1 {
		fmt.Fprintln(env.stderr, "flightdeck task shell: name one task directory (a command to run goes after --)")
		return exitUsage
	}
	tmp, err := os.MkdirTemp("", "flightdeck-shell-")
	if err != nil {
		fmt.Fprintf(env.stderr, "flightdeck task shell: %v\n", err)
		return exitInfra
	}
	defer os.RemoveAll(tmp)
	opts := f.options(env)
	opts.Results, opts.Retries = filepath.Join(tmp, "results"), 0
	req, err := runner.PrepareShell(ctx, dirs[0], opts)
	if err != nil {
		fmt.Fprintf(env.stderr, "flightdeck task shell: %v\n", err)
		if _, refused := errors.AsType[*runner.RefusedError](err); refused {
			return exitTask
		}
		return exitUsage
	}
	if *user != "" {
		req.Tasks[0].Config.Agent.User = *user
	}
	sh := &agent.Shell{Cmd: cmd, WithSolution: *withSolution, WithTests: *withTests,
		Say: func(p string) { fmt.Fprintln(env.stderr, p) }}
	sh.Stdio, sh.Raw = shellStdio(env)
	r, closeAll := newRunner(env, opts.Results)
	defer closeAll()
	r.Agent, r.AgentOnly = sh, true
	rec, err := r.Run(ctx, req)
	if err != nil {
		fmt.Fprintf(env.stderr, "flightdeck task shell: %v\n", err)
		var ue *suite.UsageError
		if errors.As(err, &ue) {
			return exitUsage
		}
		return exitInfra
	}
	if ctx.Err() != nil {
		fmt.Fprintln(env.stderr, "flightdeck task shell: interrupted; the container is removed")
		return exitInterrupted
	}
	if sh.Ran {
		return sh.ExitCode
	}
	// The shell never started: say why, from the trial's result.
	res := shellResult(rec)
	if res == nil || res.Error == "" {
		fmt.Fprintln(env.stderr, "flightdeck task shell: the shell did not start")
		return exitInfra
	}
	fmt.Fprintf(env.stderr, "flightdeck task shell: %s\n", res.Error)
	if res.Outcome == grader.OutcomeTaskError {
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
func shellStdio(env *cliEnv) (*sandbox.Stdio, func() func()) {
	st := &sandbox.Stdio{In: env.stdin, Out: env.stdout, Err: env.stderr}
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
