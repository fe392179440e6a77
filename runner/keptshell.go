package runner

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/flightdeck/flightdeck/runner/agent"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/tasks"
)

// KeptShell is a shell in the container a run made with --keep left of a
// trial (its agent's: Harbor's one container holds what the verifier saw
// too).
type KeptShell struct {
	RunID, Trial string
	Result       *results.Result
	Verifier     bool // as the verifier: its user, with /tests added for the shell's life
	Shell        *agent.Shell
	Say          func(string) // notices for the user
	Log          *slog.Logger
}

// ErrNoKeptContainer: the run kept no container of the trial (its agent
// needed none, or a gc removed it since).
var ErrNoKeptContainer = fmt.Errorf("no kept container")

// Open runs the shell in the kept container and returns the shell's exit
// code. The container is left as it was found: stopped again if it was
// stopped. An error wrapping ErrNoKeptContainer means there is none; a
// *tasks.LoadError, that the trial's task no longer loads.
func (k *KeptShell) Open(ctx context.Context) (int, error) {
	d, err := sandbox.NewWithOptions(ctx, sandbox.Options{Log: k.Log})
	if err != nil {
		return 0, err
	}
	defer d.Close()
	ids, err := d.FindContainers(ctx, map[string]string{sandbox.LabelRun: k.RunID, sandbox.LabelTrial: k.Trial, sandbox.LabelPhase: "agent"})
	if err != nil {
		return 0, err
	}
	if len(ids) == 0 {
		return 0, fmt.Errorf("%w of %s", ErrNoKeptContainer, k.Trial)
	}
	id := ids[0]
	st, err := d.State(ctx, id)
	if err == nil && !st.Running {
		err = d.Restart(ctx, id)
		defer func() {
			if err := d.Stop(context.WithoutCancel(ctx), id); err != nil {
				k.Say(fmt.Sprintf("flightdeck: could not stop the kept container %.12s again: %v", id, err))
			}
		}()
	}
	if err != nil {
		return 0, fmt.Errorf("start the kept container %.12s: %w", id, err)
	}
	task, err := tasks.Load(k.Result.TaskDir, tasks.LoadOptions{})
	if err != nil {
		return 0, err
	}
	image, _ := d.InspectImage(ctx, k.Result.Image)
	user := task.Config.Agent.User
	if k.Verifier {
		// The verifier's user, else the image's USER (else root), as the
		// grader runs: not the kept container's own, which may be the
		// agent's.
		user = task.Config.Verifier.User
		if user == "" {
			user = image.User
		}
		if user == "" {
			user = "root"
		}
		// Tests the shell adds go again when it ends: the kept container
		// is the agent's, and its user must not find them there later.
		tests, _ := agent.ShellTestsDirs(&suite.Trial{Task: task})
		for _, dir := range []string{tests, agent.TestsDir} {
			if _, err := d.StatPath(ctx, id, dir); err != nil {
				defer func() {
					_, _ = d.Exec(context.WithoutCancel(ctx), id, sandbox.ExecSpec{Cmd: []string{"rm", "-rf", "--", dir}, User: "0"})
				}()
			}
		}
	}
	k.Say(fmt.Sprintf("%s: the run's kept container %.12s (--keep), as the trial left it; what you change stays in it, and it is stopped again if it was stopped.", k.Trial, id))
	k.Shell.Kept, k.Shell.Say = true, k.Say
	sess := &agent.Session{Engine: d, Trial: &suite.Trial{Task: task}, Container: id, Workdir: k.Result.WorkDir, User: user,
		Image: k.Result.Image, ImageUser: image.User, Scratch: os.TempDir()}
	if _, err := k.Shell.Run(ctx, sess, ""); err != nil {
		return 0, err
	}
	return k.Shell.ExitCode, nil
}
