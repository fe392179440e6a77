package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// repeatWindow is how soon the same signal may come again and still be the
// same Ctrl-C: `timeout -s INT` signals a whole process group, and a
// terminal's Ctrl-C reaches both a shell and the process, so one press can
// arrive twice within milliseconds.
const repeatWindow = time.Second

// interrupts turns SIGINT and SIGTERM into cancellations. The first signal
// cancels the command's context (stop). A command that cleans up after
// itself (guarded: a run's containers, networks and unmasked files) is
// never ended by a signal, since a process that dies in its cleanup leaves
// all of those behind: a second signal makes its cleanup hurry (hurry),
// and later ones only say that it is under way. Any other command ends at
// the second signal, as Go's default would have ended it. The same signal
// again within window of the last one counted is the same press, and is
// not counted.
type interrupts struct {
	stderr  io.Writer
	window  time.Duration
	guarded bool
	stop    context.CancelFunc
	hurry   context.CancelFunc
	exit    func(code int)

	mu    sync.Mutex
	count int
	last  map[os.Signal]time.Time
}

// watchSignals starts watching SIGINT and SIGTERM for the process's
// command (guarded: see interrupts). ctx is done at the first signal,
// hurry at the second; release stops watching.
func watchSignals(stderr io.Writer, guarded bool) (in *interrupts, ctx, hurry context.Context, release func()) {
	ctx, stop := context.WithCancel(context.Background())
	hurry, hurried := context.WithCancel(context.Background())
	in = &interrupts{stderr: stderr, window: repeatWindow, guarded: guarded, stop: stop, hurry: hurried,
		exit: os.Exit, last: map[os.Signal]time.Time{}}
	c := make(chan os.Signal, 8)
	signal.Notify(c, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-c:
				in.receive(sig, time.Now())
			case <-done:
				return
			}
		}
	}()
	return in, ctx, hurry, func() {
		signal.Stop(c)
		close(done)
	}
}

// receive acts on a signal that arrived at at.
func (in *interrupts) receive(sig os.Signal, at time.Time) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if last, ok := in.last[sig]; ok && at.Sub(last) < in.window {
		return // the same press, delivered twice
	}
	in.last[sig] = at
	in.count++
	switch {
	case in.count == 1:
		in.stop()
	case !in.guarded:
		in.exit(exitInterrupted)
	case in.count == 2:
		in.hurry()
		fmt.Fprintf(in.stderr, "flightdeck: stopping now (a second signal, %s): removing the run's containers and masking its files first; killing flightdeck (kill -9) would leave them behind\n", sigName(sig))
	default:
		fmt.Fprintln(in.stderr, "flightdeck: still stopping: flightdeck exits once the run's containers are removed and its files masked")
	}
}

// interrupted reports whether a signal has stopped the command.
func (in *interrupts) interrupted() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.count > 0
}

func sigName(sig os.Signal) string {
	if sig == syscall.SIGTERM {
		return "SIGTERM"
	}
	return "SIGINT"
}

// cleansUp reports whether the command args name leaves things to clean
// up when it stops: trials' containers, networks and files (run, task
// verify), builds (build, images save).
func cleansUp(args []string) bool {
	if len(args) == 0 {
		return false
	}
	switch args[0] {
	case "run", "build", "images":
		return true
	case "task":
		return len(args) > 1 && (args[1] == "verify" || args[1] == "shell")
	case "trial":
		return len(args) > 1 && args[1] == "shell"
	}
	return false
}
