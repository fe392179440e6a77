// Command flightdeck runs graded agent-evaluation tasks on a local Docker engine.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"

	"github.com/sirupsen/logrus"
	"github.com/spf13/pflag"

	"github.com/flightdeck/flightdeck/internal/text"
	"github.com/flightdeck/flightdeck/internal/vtrace"
	"github.com/flightdeck/flightdeck/runner/results"
)

// Exit codes shared by every command (docs/running.md has the table; a
// run's come from results.ExitCode).
const (
	exitOK          = results.ExitOK
	exitFindings    = results.ExitExpectation // findings, failed checks, failed expectations
	exitUsage       = results.ExitUsage       // bad flags, arguments or input files: nothing ran
	exitInfra       = results.ExitInfra       // the engine or the machine failed
	exitTask        = results.ExitTask        // a task's own defect, or a task refused
	exitInterrupted = results.ExitInterrupted // stopped by a signal
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// command is one subcommand. run gets the arguments after the command's name
// and returns an exit code; it prints its own errors.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *cliEnv, args []string) int
}

// cliEnv is what a command may touch of the process: its streams and the
// working directory. Tests pass their own.
type cliEnv struct {
	stdin  io.Reader // nil: no input
	stdout io.Writer
	stderr io.Writer
	cwd    string
	// hurry is closed when the user insists on stopping (a second signal):
	// cleanup may cut short what it waits for, but must still remove what
	// it made and leave nothing unmasked. Nil: never.
	hurry <-chan struct{}
	// log is the diagnostic log (FLIGHTDECK_LOG); nil: none.
	log *slog.Logger
}

func commands() []command {
	return []command{
		{"task", "create, check, digest, verify, import and open a shell in tasks", runTask},
		{"run", "run a suite of trials (default: local.yaml)", runRun},
		{"regrade", "grade a finished run's recorded work anew with a task's new verifier, and print the delta", runRegrade},
		{"trial", "open a shell on a finished trial's state", runTrial},
		{"report", "print a run's outcomes and spec verdicts", runReport},
		{"merge", "join the runs of a run's shards (run --shard K/N) into one run", runMerge},
		{"spec", "record a person's verdict on a pending spec", runSpec},
		{"dataset", "write a dataset.toml that pins a dir's tasks (Harbor's dataset format)", runDataset},
		{"build", "build every task image of a suite or dataset, in parallel", runBuild},
		{"images", "list, prune, save and load the cached task images; build the offline base image", runImages},
		{"gc", "remove flightdeck's leftover containers and images", runGC},
		{"hangar", "export tasks as hangar experiments", runHangar},
		{"version", "print flightdeck's version", runVersion},
	}
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == vtrace.Command {
		// flightdeck's executable, copied into a grading container, as
		// the tracer of task verify's traced oracle (internal/vtrace).
		os.Exit(vtrace.Main(os.Args[2:], os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == vtrace.WatchCommand {
		// The same, copied into an agent's container, as the watcher of
		// what task verify's oracle-hidden run's oracle opens.
		os.Exit(vtrace.WatchMain(os.Args[2:], os.Stderr))
	}
	// A signal cancels ctx; one that comes again makes cleanup hurry, and
	// none ends a command before its cleanup is done (signals.go).
	in, ctx, hurry, release := watchSignals(os.Stderr, cleansUp(os.Args[1:]))
	// The compose loader logs warnings of its own (an obsolete `version:`
	// key, say) to the process's stderr; task check reports what matters.
	logrus.SetOutput(io.Discard)
	cwd, _ := os.Getwd()
	env := &cliEnv{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, cwd: cwd, hurry: hurry.Done()}
	log, closeLog, err := diagnosticLog(os.Getenv, cwd, os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "flightdeck: %v\n", err)
		release()
		os.Exit(exitUsage)
	}
	env.log = log
	code := dispatch(ctx, env, os.Args[1:])
	closeLog()
	release()
	if in.interrupted() {
		// Whatever the command made of it (a run that could not start
		// says why, and would exit 3), a signal stopped it.
		code = exitInterrupted
	}
	os.Exit(code)
}

func dispatch(ctx context.Context, env *cliEnv, args []string) int {
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-V") {
		args = append([]string{"version"}, args[1:]...)
	}
	return group{name: "flightdeck", word: "command", usage: usage, subs: commands()}.dispatch(ctx, env, args)
}

// group is a command made of commands: flightdeck itself, "flightdeck
// task", "flightdeck hangar".
type group struct {
	name  string // as the user types it: "flightdeck task"
	word  string // what its members are called: "command", "subcommand"
	usage func(io.Writer)
	subs  []command
}

// dispatch runs the member args[0] names. No member (usage, exit 2), --help
// (usage, exit 0) and an unknown name (exit 2) are answered here.
func (g group) dispatch(ctx context.Context, env *cliEnv, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		g.usage(env.stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range g.subs {
		if c.name == args[0] {
			return c.run(ctx, env, args[1:])
		}
	}
	hint := ""
	var names []string
	for _, c := range g.subs {
		names = append(names, c.name)
	}
	if near := text.Nearest(args[0], names); near != "" {
		hint = fmt.Sprintf("; did you mean %s %s?", g.name, near)
	} else if full, ok := nestedCommands[args[0]]; ok && g.name == "flightdeck" {
		hint = fmt.Sprintf("; did you mean flightdeck %s?", full)
	}
	fmt.Fprintf(env.stderr, "%s: unknown %s %q%s (see %s --help)\n", g.name, g.word, args[0], hint, g.name)
	return exitUsage
}

// nestedCommands are the subcommands a newcomer types without their
// command: `flightdeck verify` for `flightdeck task verify`.
var nestedCommands = map[string]string{
	"new": "task new", "check": "task check", "digest": "task digest", "verify": "task verify", "shell": "task shell",
	"import": "task import", "init": "dataset init", "ls": "images ls", "prune": "images prune",
}

// subcommandUsage is a subcommand group's usage: a line, then each member
// and what it does.
func subcommandUsage(line string, subs []command) func(io.Writer) {
	width := 0
	for _, s := range subs {
		width = max(width, len(s.name))
	}
	return func(w io.Writer) {
		fmt.Fprintf(w, "Usage: %s\n\nSubcommands:\n", line)
		for _, s := range subs {
			fmt.Fprintf(w, "  %-*s %s\n", width+1, s.name, s.summary)
		}
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "flightdeck runs graded agent-evaluation tasks on a local Docker engine.")
	fmt.Fprintln(w, "\nUsage: flightdeck COMMAND [flags] [args]\n\nCommands:")
	cs := commands()
	sort.Slice(cs, func(i, j int) bool { return cs[i].name < cs[j].name })
	for _, c := range cs {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'flightdeck COMMAND --help' for a command's flags and an example.")
	fmt.Fprintln(w, "\nExit codes: 0 ok; 1 an expectation or check failed; 2 usage; 3 infrastructure (the engine);")
	fmt.Fprintln(w, "4 a task's own defect (task_error) or a refused task; 130 interrupted (docs/running.md).")
}

func runVersion(_ context.Context, env *cliEnv, args []string) int {
	fs := newFlags(env, "version", "version", "flightdeck version   (or flightdeck --version)")
	if code, done := parseNoArgs(fs, env, "version", args); done {
		return code
	}
	fmt.Fprintf(env.stdout, "flightdeck %s\n", version)
	return exitOK
}

// newFlags makes a command's flag set whose --help shows the usage line, the
// flags and an example.
func newFlags(env *cliEnv, name, usageLine, example string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(env.stderr)
	fs.SortFlags = false
	fs.Usage = func() {
		flags := fs.FlagUsages()
		if flags == "" {
			flags = "  (none)\n"
		}
		fmt.Fprintf(env.stdout, "Usage: flightdeck %s\n\nFlags:\n%s\nExample:\n  %s\n", usageLine, flags, example)
	}
	return fs
}

// parseNoArgs is parseFlags for a command that takes flags only: an
// argument is a usage error that names the command.
func parseNoArgs(fs *pflag.FlagSet, env *cliEnv, name string, args []string) (code int, done bool) {
	if code, done := parseFlags(fs, env, args); done {
		return code, true
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(env.stderr, "flightdeck: %s takes no arguments, got %q (see flightdeck %s --help)\n", name, fs.Args(), name)
		return exitUsage, true
	}
	return exitOK, false
}

// parseFlags parses args; done is true when the command should return code
// at once (--help, or a usage error already reported).
func parseFlags(fs *pflag.FlagSet, env *cliEnv, args []string) (code int, done bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitOK, true
		}
		fmt.Fprintf(env.stderr, "flightdeck %s: %s\n", fs.Name(), flagErrorText(fs, err))
		return exitUsage, true
	}
	return exitOK, false
}

// flagErrorText is a flag error with the nearest flag the command has, when
// the one given looks misspelt, and where the command's flags are listed.
func flagErrorText(fs *pflag.FlagSet, err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		var names []string
		fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
		if near := text.Nearest(name, names); near != "" {
			msg += "; did you mean --" + near + "?"
		}
	}
	return fmt.Sprintf("%s (flightdeck %s --help lists its flags)", msg, fs.Name())
}
