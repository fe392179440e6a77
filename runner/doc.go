// Package runner runs suites of trials: it plans task × variant × attempt,
// gets each task's image, prepares work dirs, runs agents (runner/agent),
// has each trial graded, records evidence and results (runner/results), and
// reuses results already obtained. The suite and trial model is
// runner/suite; Harbor's semantics are runner/harbor.
//
// The CLI-facing API: Prepare, PrepareResume and
// PrepareVerify make a Request from a suite file and the command line's
// options; Runner.Run runs it and returns its results.RunRecord;
// Runner.Audit judges a verify run (runner/audit); TaskDirs lists a
// suite's task directories; NewRunID names a run.
//
// # A trial
//
// A trial runs in timed phases, recorded in result.json:
//
//	image     the task's image, built once per run however many trials need
//	          it (runner/images: the image map applied; an official base
//	          image that is neither present nor pullable is replaced by
//	          flightdeck/base:bookworm when that exists, and the run says so)
//	workdir   a host dir seeded with the content of the image's working
//	          directory ([environment].workdir, else the image's WORKDIR)
//	          through a container that is created and never started, made a
//	          git repository with a base commit when it is not one (a Harbor
//	          task's work dir stays the image's own, in its container: the
//	          copy is only the evidence's base)
//	agent     the agent's container, with the work dir bind-mounted at the
//	          same path; the agent's timeout kills it
//	evidence  diff.files, diff.patch and events.jsonl (see below)
//	inspect   Harbor's model, beside the evidence: the tamper inspector
//	          (inspect.go, runner/tamper) lists what the agent changed in
//	          its container outside the work dir and flags changes to the
//	          verifier's machinery
//	grade     native tasks: grader.Run from the pristine task image with the
//	          work dir mounted read-only; Harbor tasks: grader.RunLive in the
//	          agent's own container, still running (live.go: Harbor's
//	          container model, one container, the image's entrypoint; a
//	          variant's grading: snapshot grades from a snapshot of it;
//	          steps.go: multi-step tasks)
//	result    the outcome, the reward and the spec verdicts
//
// The hidden tests never enter the agent's container; solution/ enters it
// only for the oracle.
//
// # Evidence
//
// For a replayed script, events.jsonl holds the steps as they ran: an edit
// per write, a command per run with its exit code, a git.commit per commit.
// For any other agent the events are recovered after the agent phase: each
// commit since the base commit as edit events for its files followed by a
// git.commit event, then the uncommitted changes as edit events; edits
// within a commit are in path order, not the order they were made, and
// commands are not seen. diff.files (committed plus uncommitted paths since
// the seeded tree; paths the work dir's .gitignore ignores are left out)
// and diff.patch come from a shadow repository outside the work dir, so
// nothing the agent configures in its own repository runs on the host.
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
