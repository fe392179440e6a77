// Package agent runs a trial's agent in its container and work dir: an
// Agent (Oracle, Nop, Deterministic, Command; For picks the one a variant
// names) runs in a Session, which holds the container, the work dir, the
// log and the deadline. It also reads deterministic.json (LoadScript,
// ParseScript).
//
// # Agents
//
//   - oracle replays solution/deterministic.json when the task has one, else
//     copies solution/ to /solution and runs `bash /solution/solve.sh` in the
//     work dir with [solution].env and DEBIAN_FRONTEND=noninteractive.
//   - nop does nothing.
//   - deterministic replays the script the variant names (script:).
//   - command runs `bash -c COMMAND` in the agent's container, in the work
//     dir. This is how a real coding agent is wired in. It finds the
//     instruction in the file /flightdeck/instruction.md
//     (FLIGHTDECK_INSTRUCTION_FILE) and in the variable
//     FLIGHTDECK_INSTRUCTION (up to 64 KiB), and the work dir in FLIGHTDECK_WORKDIR. The
//     variant's env: is added to its environment. Its output is agent.log;
//     a non-zero exit is recorded and the trial is still graded. The agent's
//     container has a network unless the task says "no-network".
//
// # deterministic.json
//
// Version 1 is an ordered list of steps, each exactly one of write, run,
// commit and ask:
//
//	{"version": 1, "steps": [
//	  {"write":  {"path": "csvcheck/validate.py", "from": "solution/validate.py"}},
//	  {"write":  {"path": "notes.txt", "content": "inline text\n", "mode": "0644"}},
//	  {"run":    {"command": "python3 -m unittest discover -s tests", "expect_exit": 0}},
//	  {"ask":    {"question": "Should a schema be required?", "expect": "without a schema"}},
//	  {"commit": {"message": "Detect duplicate rows"}}
//	]}
//
// path is relative to the work dir (no "..", not absolute, not in .git);
// from is relative to the task dir and under solution/. A write happens on
// the host, confined to the work dir. A run step runs with `bash -c` in the
// work dir inside the agent's container; an exit code other than
// expect_exit (default 0) ends the agent phase (recorded; the trial is
// still graded). A commit step is `git add -A && git commit -m MESSAGE` in
// the work dir's repository. An ask step asks through the question channel
// (AskScript, from inside the container, as any agent would) and ends the
// agent phase unless the reply contains expect (ignoring case; none: any
// reply); a question the task does not answer ends the trial as
// needs_input. A script is checked before any trial starts;
// an error names the file, the step's index and the field. Each step's
// output is in agent.log.
package agent
