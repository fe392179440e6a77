// Package grader grades a trial: it runs a task's hidden tests in a fresh
// container it starts from an image it is given, reads the reward from a
// directory created fresh for that grade, parses the grader's RESULT line,
// and judges behaviour specs on the evidence the runner recorded.
//
// Two grading modes exist. A flightdeck-native task (one with a
// [flightdeck.grader] command) is graded by Run in a container from the
// pristine task image, with no network, the agent's work dir mounted
// read-only and a pristine copy of tests/ taken from the host task dir. A
// Harbor task is graded with Harbor's semantics: by RunLive in the agent's
// own container, still running, with /tests and /logs/verifier made anew
// right before test.sh (and, when the agent left processes running, those
// processes taking turns with the verifier's: RunLiveGuarded), or by Run in a fresh container from a
// snapshot of the agent's (a variant's grading: snapshot).
//
// Its API: Run and RunLive (a Grade from a Request), the outcomes and
// outcome classes (Outcome, TrialOutcome), reward kinds (RewardError), spec
// loading and judging (LoadSpecs, Judge), and ClearSetID and ChownCommand
// for the runner's hand-backs. Enumerations (outcomes, reward error kinds,
// spec kinds and statuses) are exported whole, whether or not another
// package names every value: they are what result.json holds.
//
// The package talks to the engine only through sandbox.Engine.
package grader
