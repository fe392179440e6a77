// Package runner runs suites of trials: it plans task × variant × attempt,
// gets each task's image (runner/images), runs each trial (runner/trial),
// records results (runner/results), and reuses results already obtained. The suite and trial model is
// runner/suite; Harbor's semantics are runner/harbor.
//
// The CLI-facing API: Prepare, PrepareResume and
// PrepareVerify make a Request from a suite file and the command line's
// options; Runner.Run runs it and returns its results.RunRecord;
// Runner.Audit judges a verify run (runner/audit); TaskDirs lists a
// suite's task directories; NewRunID names a run.
//
// # The run and its trials
//
// The run plans, consults the cache, refuses what cannot run, checks
// capacity, resolves secrets and schedules trials; each trial runs in
// runner/trial, which knows of the run only what trial.Env gives it, and
// its network (compose services, the egress gateway) in runner/trialnet.
//
// # Results
//
// What a run writes, and the outcomes, are described in runner/results.
// Every file the runner writes is written atomically; a trial has a
// complete result.json or none. A trial's cache key hashes the task's
// digest, the variant's definition (agent, command, env, the script's and
// solution/'s content), the timeouts after multipliers, the image-map
// entries that apply to the task, the suite's reward_key: and the attempt;
// a rerun reuses a finished result with the same key (never an infra_error
// or a refused task) without starting a container. --resume RUN_ID reruns
// only the trials of that run without a valid result (an infra_error counts
// as none) and checks refused tasks again.
//
// # Outcomes
//
// passed (reward 1), failed (a reward below 1, or no readable reward),
// agent_timeout (graded all the same), verifier_timeout, infra_error (the
// build failed, the engine failed, a container died under the runner):
// infra errors are retried up to the suite's retries and left out of every
// rate. refused: the task cannot run here (tasks.Load refused it, a host
// variable its env needs is unset, its deterministic.json is invalid);
// nothing ran, the reason is in the result, the run goes on with the other
// tasks and exits 1. Refused trials are left out of every rate and never
// cached.
//
// The reward is reward.json's "reward" key, else its lowest key, unless the
// suite's reward_key: names the key that decides; every key is recorded.
package runner
