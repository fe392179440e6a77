package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/flightdeck/flightdeck/internal/testenv"
)

// The CLI's behaviour as a user sees it, one script per story under
// testdata/script: each runs flightdeck commands and checks their exit
// codes and output (see testscript's documentation for the format).
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"flightdeck": main})
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv(testenv.RequireEnv, os.Getenv(testenv.RequireEnv))
			// $FIXTURES: the project's fixtures directory.
			fixtures, err := filepath.Abs(filepath.Join("..", "..", "fixtures"))
			env.Setenv("FIXTURES", fixtures)
			// $UNIQ: a name part no other test process uses at the same
			// time, for the engine objects a script names itself.
			env.Setenv("UNIQ", strconv.FormatInt(int64(os.Getpid()), 36)+strconv.FormatInt(time.Now().UnixNano()%(1<<30), 36))
			return err
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "engine":
				// A script marked [engine] needs the Docker engine and the
				// base image; without them it fails under
				// FLIGHTDECK_REQUIRE_DOCKER=1 rather than skip.
				if testing.Short() {
					return false, nil
				}
				if err := exec.Command("docker", "image", "inspect", testenv.BaseImage).Run(); err != nil {
					if testenv.Required() {
						return false, errors.New("no Docker engine with " + testenv.BaseImage + " and FLIGHTDECK_REQUIRE_DOCKER=1")
					}
					return false, nil
				}
				return true, nil
			}
			return false, errors.New("unknown condition " + strconv.Quote(cond))
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"status": cmdStatus,
		},
	})
}

// cmdStatus runs `status CODE PROGRAM ARGS...`: the program must exit with
// CODE; its stdout and stderr are kept for the commands that follow.
func cmdStatus(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: status CODE PROGRAM [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("status: %q is not an exit code", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			ts.Fatalf("status: %v", err)
		}
		got = exit.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}
