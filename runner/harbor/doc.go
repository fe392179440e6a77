// Package harbor holds Harbor's semantics as flightdeck follows them
// (docs/harbor.md): env templating (ResolveEnv, TaskEnv, VerifierEnv), the
// network per phase (NetworkFor), timeouts (Timeouts), the healthcheck
// (PollHealthcheck), the agent's logs dir (AgentLogs), what makes a task
// unable to run here
// (CheckRunnable). Finding a dataset's tasks (a dataset dir, a
// registry.json) is runner/registry's.
package harbor
