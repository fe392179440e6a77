// Package trial runs one trial of a run: its phases, in one of two
// container models behind one interface (model, in trial.go): native
// (native.go: the agent's container with the work dir bind-mounted, then
// a fresh grading container of the pristine image) or shared (shared.go:
// Harbor's one container, which holds the agent and then the verifier).
// A single-step trial of either model runs through trial.go's single; a
// multi-step task's steps through steps.go. The run gives a trial its
// engine, dirs, settings and shared services in Env; the trial's network
// is runner/trialnet's.
//
// # Phases
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
//	          agent's own container, still running (shared.go: Harbor's
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
package trial
