package harbor

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/flightdeck/flightdeck/internal/hostenv"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/tasks"
)

// Harbor-format tasks (no [flightdeck.grader], or a variant with
// grading: harbor or snapshot): the pieces of Harbor's semantics that
// the runner's container model (runner/trial/shared.go) uses. docs/harbor.md describes each behaviour.
//
//   - /logs/agent is bind-mounted from the trial dir (TrialDir/logs/agent);
//     the oracle's solve.sh output goes to /logs/agent/oracle.txt, and a
//     non-zero exit to /logs/agent/exit-code.txt.
//   - Env, network and timeouts follow Harbor (harborenv.go).

// Harbor's logs dirs in the task's container: the agent's and the
// artifacts dir are mounted from the trial dir for the whole trial, as
// Harbor mounts them; the verifier's exists from the start (an agent may
// look for it) and is made anew before test.sh.
const (
	Logs         = "/logs"
	AgentLogs    = "/logs/agent"
	ArtifactLogs = "/logs/artifacts"
	VerifierLogs = "/logs/verifier"
)

// Files in the agent's logs dir (TrialDir/logs/agent on the host).
const (
	OracleOutput   = "oracle.txt"    // solve.sh's output
	OracleExitCode = "exit-code.txt" // solve.sh's exit code, when it is not 0
)

// LogsDir is the host side of /logs/agent.
func LogsDir(trialDir string) string { return filepath.Join(trialDir, "logs", "agent") }

// ArtifactsDir is the host side of /logs/artifacts.
func ArtifactsDir(trialDir string) string { return filepath.Join(trialDir, "logs", "artifacts") }

// AgentMounts are Harbor's mounts of the task's container: /logs/agent and
// /logs/artifacts, from the trial dir, writable by any user.
func AgentMounts(trialDir string) ([]sandbox.Mount, error) {
	var mounts []sandbox.Mount
	for _, m := range []struct{ host, container string }{
		{LogsDir(trialDir), AgentLogs}, {ArtifactsDir(trialDir), ArtifactLogs},
	} {
		if err := os.MkdirAll(m.host, 0o777); err != nil {
			return nil, fmt.Errorf("%s's dir: %w", m.container, err)
		}
		// An agent running as any user may write there.
		if err := os.Chmod(m.host, 0o777); err != nil {
			return nil, fmt.Errorf("%s's dir: %w", m.container, err)
		}
		mounts = append(mounts, sandbox.Mount{HostPath: m.host, ContainerPath: m.container})
	}
	return mounts, nil
}

// TaskEnv resolves one of a task's env tables ("[environment].env",
// "[solution].env" or "[verifier].env") from the host, naming the file and
// the table in an error.
func TaskEnv(t *tasks.Task, table string, env map[string]string, lookup func(string) (string, bool)) ([]string, error) {
	out, err := resolveEnv(env, lookup)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", t.Path(tasks.TaskFile), table, err)
	}
	return out, nil
}

// VerifierEnv is the verifier's env as Harbor builds it: [environment].env,
// then [verifier].env over it (the verifier's value wins on a key).
func VerifierEnv(t *tasks.Task, lookup func(string) (string, bool)) ([]string, error) {
	base, err := TaskEnv(t, "[environment].env", t.Config.Environment.Env, lookup)
	if err != nil {
		return nil, err
	}
	over, err := TaskEnv(t, "[verifier].env", t.Config.Verifier.Env, lookup)
	if err != nil {
		return nil, err
	}
	return mergeEnv(base, over), nil
}

// mergeEnv merges KEY=VALUE lists, a later list winning on a key, sorted
// by key.
func mergeEnv(lists ...[]string) []string {
	m := map[string]string{}
	for _, l := range lists {
		for _, kv := range l {
			k, v, _ := strings.Cut(kv, "=")
			m[k] = v
		}
	}
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// CheckRunnable checks before a run what would otherwise fail a trial
// later: every env table resolves from the host (a missing variable is
// named), and each phase's network is one the local runner can give.
func CheckRunnable(t *tasks.Task) error {
	tables := []struct {
		name string
		env  map[string]string
	}{
		{"[environment].env", t.Config.Environment.Env},
		{"[solution].env", t.Config.Solution.Env},
		{"[verifier].env", t.Config.Verifier.Env},
	}
	for _, tb := range tables {
		if _, err := TaskEnv(t, tb.name, tb.env, hostenv.Lookup); err != nil {
			return err
		}
	}
	for _, phase := range []string{NetAgent, NetVerifier} {
		if _, err := NetworkFor(t.Config, phase); err != nil {
			return fmt.Errorf("%s: %w", t.Path(tasks.TaskFile), err)
		}
	}
	return nil
}

// AgentUser is the user the agent runs as: [agent].user, else the image's.
func AgentUser(t *tasks.Task, info sandbox.ImageInfo) string {
	if u := t.Config.Agent.User; u != "" {
		return u
	}
	return info.User
}
