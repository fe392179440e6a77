package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/flightdeck/flightdeck/runner"
)

// runGC removes what flightdeck left on the engine: by default the
// containers, snapshots, volumes and networks whose owner process is gone
// (killed, crashed); --all also those of live runs, and those of
// flightdeck's own test suite, which only a test's reaper takes otherwise;
// --images also the cached task images.
func runGC(ctx context.Context, env *cliEnv, args []string) int {
	fs := newFlags(env, "gc", "gc [--all] [--images] [--run ID]", "flightdeck gc --images")
	all := fs.Bool("all", false, "remove flightdeck's objects whatever process owns them, not only those whose owner is gone (and those flightdeck's own test suite left)")
	images := fs.Bool("images", false, "also remove cached task images (they are rebuilt when needed)")
	runID := fs.String("run", "", "only the objects of this run id")
	if code, done := parseNoArgs(fs, env, "gc", args); done {
		return code
	}
	eng, err := runner.Connect(ctx, env.log)
	if err != nil {
		fmt.Fprintf(env.stderr, "flightdeck gc: %v\n", err)
		return exitInfra
	}
	defer eng.Close()
	reaped, err := eng.Reap(ctx, runner.ReapOptions{RunID: *runID, OrphansOnly: !*all, TaskImages: *images})
	for _, r := range reaped.Removed {
		fmt.Fprintf(env.stdout, "removed %s\n", r)
	}
	fmt.Fprintln(env.stdout, gcSummary(reaped, *all))
	if err != nil {
		fmt.Fprintf(env.stderr, "flightdeck: gc: %v\n", err)
		return exitFindings
	}
	return exitOK
}

func gcSummary(r runner.Reaped, all bool) string {
	var parts []string
	for _, c := range []struct {
		n    int
		what string
	}{{r.Containers, "container"}, {r.Images, "image"}, {r.Volumes, "volume"}, {r.Networks, "network"}} {
		if c.n == 1 {
			parts = append(parts, "1 "+c.what)
		} else if c.n > 1 {
			parts = append(parts, fmt.Sprintf("%d %ss", c.n, c.what))
		}
	}
	if len(parts) == 0 {
		if all {
			return "gc: nothing to remove"
		}
		return "gc: nothing to remove (objects of running flightdeck processes are kept; --all removes them too)"
	}
	return "gc: removed " + strings.Join(parts, ", ")
}
