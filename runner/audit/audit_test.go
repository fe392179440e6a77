package audit

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/sandbox"
)

func run(outcome grader.Outcome, reward float64) *results.Result {
	return &results.Result{Outcome: outcome, Reward: &reward}
}

// outputLeak is leaks' finding of an output of the oracle's in the image.
const outputLeak = "the oracle's output /app/out.txt is in the image at /opt/expected.txt: the answer is where the agent can read it"

// copied is the answer attack's graded trial.
func copied(reward float64) *results.Result {
	r := run(grader.OutcomeFailed, reward)
	if reward >= 1 {
		r.Outcome = grader.OutcomePassed
	}
	r.Trial = "t__attack-answer__1"
	return r
}

// exited is an oracle run that passed with its solution exiting code.
func exited(code int) *results.Result {
	r := run(grader.OutcomePassed, 1)
	r.Trial = "t__oracle__2"
	r.AgentPhase.ExitCode = &code
	return r
}

// hiddenRun is the oracle run with the answer moved away.
func hiddenRun(reward float64) *results.Result {
	r := copied(reward)
	r.Trial = "t__oracle-hidden__1"
	return r
}

func statusOf(t Task, name string) Check {
	for _, c := range t.Checks {
		if c.Name == name {
			return c
		}
	}
	return Check{}
}

func TestAuditChecks(t *testing.T) {
	pass, fail := run(grader.OutcomePassed, 1), run(grader.OutcomeFailed, 0)
	noReward := &results.Result{Outcome: grader.OutcomeFailed, Error: "no reward: tests/test.sh exited 2 without writing reward.json or reward.txt"}
	defect := &results.Result{Outcome: grader.OutcomeTaskError, Error: "task error: tests/test.sh exited 2 without writing reward.json or reward.txt: line 3: syntax error"}
	substituted := run(grader.OutcomePassed, 1)
	substituted.MappedImages = []string{"python:3.12-slim=flightdeck/base:bookworm"}
	unbuilt := &results.Result{Outcome: grader.OutcomeTaskError, Error: "image of x: build failed at step 2",
		Phases: []results.Phase{{Name: "image", Error: "image of x: build failed at step 2"}}}
	errNoImage := errors.New("no trial recorded the task's image")
	// A task whose solve.sh names the answer's file.
	copier := t.TempDir()
	if err := os.MkdirAll(filepath.Join(copier, "solution"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(copier, "solution", "solve.sh"), []byte("cp /opt/expected.txt /app/out.txt\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		in    Input
		check string
		want  Status
		ev    string
	}{
		{"oracle passes every run", Input{Oracle: []*results.Result{pass, pass}}, CheckOracle, OK, "passed 2 of 2 runs"},
		{"oracle passes but exits non-zero", Input{RunDir: "/r", Oracle: []*results.Result{pass, exited(3)}}, CheckOracle, Warn,
			"passed 2 of 2 runs: reward 1, 1; but the oracle (solution/) exited 3 in 1 of 2 runs: its reward holds (Harbor ignores the exit code), yet a step of it failed; make it exit 0 (/r/t__oracle__2/agent.log)"},
		{"oracle fails a run", Input{Oracle: []*results.Result{pass, fail}}, CheckOracle, Fail, "passed 1 of 2 runs: reward 1, 0"},
		{"flaky", Input{Oracle: []*results.Result{pass, fail, pass}}, CheckFlaky, Fail, "the oracle's runs differ: 1, 0, 1"},
		{"one run cannot tell", Input{Oracle: []*results.Result{pass}}, CheckFlaky, Skipped, "--repeat 2"},
		{"an infra error is not a difference", Input{Oracle: []*results.Result{pass, {Outcome: grader.OutcomeInfraError}, pass}}, CheckFlaky, OK, "2 runs agree"},
		{"weak tests", Input{Nop: pass}, CheckNop, Fail, "weak tests"},
		{"nop fails", Input{Nop: fail}, CheckNop, OK, "reward 0"},
		{"needs live grading", Input{Oracle: []*results.Result{pass}, Snapshot: fail}, CheckLive, Warn, "needs live grading"},
		{"native: nothing to compare", Input{Oracle: []*results.Result{pass}}, CheckLive, Skipped, "native"},
		{"races the entrypoint", Input{Oracle: []*results.Result{pass}, Unsettled: fail}, CheckStart, Warn,
			"the oracle depends on the entrypoint's background start: started at once it scores 0, after the entrypoint settled 1; add [environment.healthcheck]"},
		{"no race", Input{Oracle: []*results.Result{pass}, Unsettled: pass}, CheckStart, OK, "the same reward when the agent starts at once"},
		{"no entrypoint to wait for", Input{Oracle: []*results.Result{pass}}, CheckStart, Skipped, "no entrypoint of the image's own"},
		{"environment sensitivity", Input{Oracle: []*results.Result{pass}, EnvRun: fail, EnvVars: map[string]string{"TZ": "UTC-14", "LANG": "C.UTF-8"}}, CheckEnv, Fail,
			"under LANG=C.UTF-8 TZ=UTC-14 the oracle scores 0, otherwise 1"},
		{"the same reward elsewhere", Input{Oracle: []*results.Result{pass}, EnvRun: pass}, CheckEnv, OK, "the same reward"},
		{"no patch", Input{}, CheckPatch, Skipped, "no solution/reference.patch"},
		{"the patch is the oracle", Input{HasPatch: true}, CheckPatch, OK, "the oracle is the reference patch"},
		{"a patch that does not solve", Input{HasPatch: true, Patch: fail}, CheckPatch, Fail, "the reference patch scores 0"},
		{"leaks", Input{Leaks: []string{"tests/x is in the image at /x"}}, CheckLeaks, Fail, "tests/x is in the image at /x"},
		{"repro warns", Input{Repro: []string{"Dockerfile:1: FROM x: no tag"}}, CheckRepro, Warn, "no tag"},
		{"nop without a reward is no pass", Input{Nop: noReward}, CheckNop, Fail, "the empty attempt got no reward: no reward: tests/test.sh exited 2"},
		{"nop with a broken grader", Input{Nop: defect}, CheckNop, Fail, "nop was not graded: task error: tests/test.sh exited 2"},
		{"oracle with a broken grader", Input{Oracle: []*results.Result{defect, defect}}, CheckOracle, Fail, "passed 0 of 2 runs; task error: tests/test.sh exited 2"},
		{"two runs, one graded", Input{Oracle: []*results.Result{pass, {Outcome: grader.OutcomeInfraError}}}, CheckFlaky, Skipped, "1 of the oracle's 2 runs graded"},
		{"headroom of ungraded runs", Input{Oracle: []*results.Result{defect}}, CheckHeadroom, Skipped, "the oracle was not graded: task error"},
		{"a substitute base", Input{Oracle: []*results.Result{substituted}}, CheckBase, Warn,
			"ran on a substitute base: the verdict holds for flightdeck/base:bookworm, not for python:3.12-slim"},
		{"the base named", Input{Oracle: []*results.Result{pass}}, CheckBase, OK, "built from the base images it names"},
		{"no solution: the oracle is not run, not failed, and said", Input{NoOracle: true, Oracle: []*results.Result{defect, defect}}, CheckOracle, Warn,
			"no oracle: the task has no solution/ (solve.sh, deterministic.json or reference.patch): nothing shows the task can be solved; add one"},
		{"no solution: nor what reads its runs", Input{NoOracle: true, Oracle: []*results.Result{defect}}, CheckFlaky, Skipped, "no oracle to run"},
		{"no solution: nop still runs", Input{NoOracle: true, Nop: fail}, CheckNop, OK, "the empty attempt scores reward 0"},
		{"attacks against a verifier the oracle cannot pass prove nothing", Input{Oracle: []*results.Result{fail}, Nop: fail,
			Attacks: []AttackRun{{Name: "conftest", Result: fail, Planted: []string{"/app/conftest.py"}}}}, CheckAttacks, Skipped,
			"not judged: the oracle scores no more than nop"},
		{"attacks judged once the oracle passes", Input{Oracle: []*results.Result{pass}, Nop: fail,
			Attacks: []AttackRun{{Name: "conftest", Result: fail, Planted: []string{"/app/conftest.py"}}}}, CheckAttacks, OK,
			"held 1 of 1: conftest"},
		{"no solution: the empty attempt's base", Input{NoOracle: true, Nop: substituted}, CheckBase, Warn,
			"the verdict holds for flightdeck/base:bookworm, not for python:3.12-slim"},
		{"no trial ran: no base to tell", Input{NoOracle: true}, CheckBase, Skipped, "no trial ran"},
		{"no solution, no image: nop says why", Input{NoOracle: true, Nop: unbuilt}, CheckNop, Skipped, "the image did not build"},
		{"no trial ran: leaks not searched", Input{NoOracle: true, LeakErr: errNoImage}, CheckLeaks, Skipped,
			"no trial ran, so the image was not searched (the environment and the Dockerfile hold no file of tests/ or solution/)"},
		{"no image: the oracle says why", Input{Oracle: []*results.Result{unbuilt, unbuilt}}, CheckOracle, Fail, "failed at step 2"},
		{"no image: nop skipped", Input{Oracle: []*results.Result{unbuilt}, Nop: unbuilt}, CheckNop, Skipped, "the image did not build"},
		{"no image: flaky skipped", Input{Oracle: []*results.Result{unbuilt, unbuilt}}, CheckFlaky, Skipped, "the image did not build"},
		{"no image: headroom skipped", Input{Oracle: []*results.Result{unbuilt}}, CheckHeadroom, Skipped, "the image did not build"},
		{"no image: leaks not searched", Input{Oracle: []*results.Result{unbuilt}, LeakErr: errNoImage}, CheckLeaks, Skipped, "the image did not build"},
		{"no image: leaks in the context still fail", Input{Oracle: []*results.Result{unbuilt}, LeakErr: errNoImage,
			Leaks: []string{"tests/x is in environment/x"}}, CheckLeaks, Fail, "tests/x is in environment/x"},
		{"an output in the image that a copy scores with: proven", Input{Oracle: []*results.Result{pass}, Nop: fail,
			Leaks:   []string{outputLeak},
			Attacks: []AttackRun{{Name: "answer", Result: copied(1), Planted: []string{"/app/out.txt (a copy of /opt/expected.txt)"}}}}, CheckLeaks, Fail,
			outputLeak + " (proven: an empty attempt that copies it scores 1 where nop scores 0; logs: t__attack-answer__1)"},
		{"an output in the image that a copy does not score with: an input", Input{Oracle: []*results.Result{pass}, Nop: fail,
			Leaks:   []string{outputLeak},
			Attacks: []AttackRun{{Name: "answer", Result: copied(0), Planted: []string{"/app/out.txt (a copy of /opt/expected.txt)"}}}}, CheckLeaks, OK,
			"no answer or test where the agent can read it; inputs the agent is given too: /opt/expected.txt (holds the bytes the oracle writes to /app/out.txt, but an empty attempt that copies it scores 0: the reward needs the work"},
		{"an output the attack did not copy stands as found", Input{Oracle: []*results.Result{pass}, Nop: fail,
			Leaks:   []string{outputLeak},
			Attacks: []AttackRun{{Name: "answer", Result: copied(0)}}}, CheckLeaks, Fail, outputLeak},
		{"an unfinished attack proves nothing either way", Input{Oracle: []*results.Result{pass}, Nop: fail,
			Leaks:   []string{outputLeak},
			Attacks: []AttackRun{{Name: "answer", Result: &results.Result{Outcome: grader.OutcomeInfraError}, Planted: []string{"/app/out.txt (a copy of /opt/expected.txt)"}}}},
			CheckLeaks, Fail, outputLeak},
		{"the oracle with the answer moved away still passes: the reference computes it", Input{Oracle: []*results.Result{pass}, Nop: fail,
			Dir: copier, Leaks: []string{outputLeak},
			Attacks: []AttackRun{{Name: "answer", Result: copied(1), Planted: []string{"/app/out.txt (a copy of /opt/expected.txt)"}}},
			Hidden:  hiddenRun(1), HiddenFiles: []string{"/opt/expected.txt"}}, CheckLeaks, Fail,
			outputLeak + " (proven: an empty attempt that copies it scores 1 where nop scores 0; logs: t__attack-answer__1); the reference computes it: with /opt/expected.txt moved away the oracle still scores 1 (logs: t__oracle-hidden__1)"},
		{"the oracle with the answer moved away fails: the reference copies it", Input{Oracle: []*results.Result{pass}, Nop: fail,
			Dir: copier, Leaks: []string{outputLeak},
			Attacks: []AttackRun{{Name: "answer", Result: copied(1), Planted: []string{"/app/out.txt (a copy of /opt/expected.txt)"}}},
			Hidden:  hiddenRun(0), HiddenFiles: []string{"/opt/expected.txt"}}, CheckLeaks, Fail,
			"(proven: an empty attempt that copies it scores 1 where nop scores 0; logs: t__attack-answer__1); the reference copies the answer: with /opt/expected.txt moved away the oracle scores 0 where it scores 1, so it proves nothing of the task's solvability (logs: t__oracle-hidden__1)"},
		{"an answer the oracle-hidden run could not move keeps the guess", Input{Oracle: []*results.Result{pass}, Nop: fail,
			Dir: copier, Leaks: []string{outputLeak},
			Attacks: []AttackRun{{Name: "answer", Result: copied(1), Planted: []string{"/app/out.txt (a copy of /opt/expected.txt)"}}},
			Hidden:  hiddenRun(0)}, CheckLeaks, Fail, "solution/solve.sh names /opt/expected.txt"},
		{"a verdict that falls with a file the oracle does not open emptied: the answer in another form", Input{Oracle: []*results.Result{pass}, Nop: fail,
			Hidden: hiddenRun(0), HiddenAltered: []string{"/opt/expected.sha256"}}, CheckLeaks, Fail,
			"the verdict is compared with /opt/expected.sha256, which the agent can read and the oracle never reads: with it emptied at the grade the oracle's work scores 0 where it scores 1 (logs: t__oracle-hidden__1): the answer is where the agent can read it"},
		{"the same beside code of the task's that the verifier runs: a warning, which says so", Input{Oracle: []*results.Result{pass}, Nop: fail,
			Hidden: hiddenRun(0), HiddenAltered: []string{"/opt/a.json", "/opt/b.json"}, VerifierCode: []string{"/srv/app/main.py"}}, CheckLeaks, Warn,
			"compared with one of /opt/a.json, /opt/b.json, which the agent can read and the oracle never reads: with it emptied at the grade the oracle's work scores 0 where it scores 1 (logs: t__oracle-hidden__1); the verifier also runs the task's own code (/srv/app/main.py)"},
		{"a file the agent can overwrite where the verifier runs is said so", Input{Oracle: []*results.Result{pass}, Nop: fail,
			Hidden: hiddenRun(0), HiddenAltered: []string{"/opt/expected.sha256"}, HiddenWritable: []string{"/opt/expected.sha256"}, HiddenShared: true}, CheckLeaks, Fail,
			"in another form than the oracle's output; the agent can overwrite /opt/expected.sha256 too, in the container the verifier runs in: an agent that writes there what its own output gives passes without the work; fix: keep the expected answer under tests/"},
		{"not where the verifier runs in a container of its own", Input{Oracle: []*results.Result{pass}, Nop: fail,
			Hidden: hiddenRun(0), HiddenAltered: []string{"/opt/expected.sha256"}, HiddenWritable: []string{"/opt/expected.sha256"}}, CheckLeaks, Fail,
			"in another form than the oracle's output; fix: keep the expected answer under tests/"},
		{"the fall beside an oracle whose runs differ may be chance: a warning", Input{Oracle: []*results.Result{pass, copied(0)}, Nop: fail,
			Hidden: hiddenRun(0), HiddenAltered: []string{"/opt/expected.sha256"}}, CheckLeaks, Warn,
			"but the oracle's own runs differ (see flaky), so the fall may be chance"},
		{"a verdict that holds with them emptied: no finding", Input{Oracle: []*results.Result{pass}, Nop: fail,
			Hidden: hiddenRun(1), HiddenAltered: []string{"/opt/expected.sha256"}}, CheckLeaks, OK,
			"no file of tests/ or solution/ in the environment, the Dockerfile or the image"},
		{"beside a leak, the probe's finding is one more", Input{Oracle: []*results.Result{pass}, Nop: fail, Leaks: []string{"tests/x is in the image at /x"},
			Hidden: hiddenRun(0), HiddenAltered: []string{"/opt/a.json"}, VerifierCode: []string{"/srv/app/main.py"}}, CheckLeaks, Fail,
			"tests/x is in the image at /x; the verdict is compared with /opt/a.json"},
		{"a copy against a verifier the oracle cannot pass proves nothing", Input{Oracle: []*results.Result{fail}, Nop: fail,
			Leaks:   []string{outputLeak},
			Attacks: []AttackRun{{Name: "answer", Result: copied(0), Planted: []string{"/app/out.txt (a copy of /opt/expected.txt)"}}}}, CheckLeaks, Fail, outputLeak},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := statusOf(Audit(tt.in), tt.check)
			assert.Equal(t, tt.want, c.Status, c.Evidence)
			assert.Contains(t, c.Evidence, tt.ev)
		})
	}
}

func TestHeadroom(t *testing.T) {
	r := run(grader.OutcomePassed, 1)
	r.AgentPhase.Timeout, r.GradePhase.Timeout = 10, 100
	r.Phases = []results.Phase{{Name: "agent", Seconds: 6}, {Name: "grade", Seconds: 20}}
	st, ev := headroomCheck([]*results.Result{r})
	assert.Equal(t, Warn, st)
	assert.Contains(t, ev, "agent 6.0s of 10s, verifier 20.0s of 100s, memory not reported by the engine")
	r.Phases[0].Seconds = 4
	st, _ = headroomCheck([]*results.Result{r})
	assert.Equal(t, OK, st)
	r.AgentPhase.PeakMemory, r.AgentPhase.MemoryLimit = 600<<20, 1024<<20
	st, ev = headroomCheck([]*results.Result{r})
	assert.Equal(t, Warn, st)
	assert.Equal(t, "the oracle used more than half its memory: agent 4.0s of 10s, verifier 20.0s of 100s, memory 600 MiB of 1024 MiB", ev)
	// A phase past its timeout (18.2 s of 15 s) is not "more than half".
	r.AgentPhase.Timeout, r.Phases[0].Seconds = 15, 18.2
	st, ev = headroomCheck([]*results.Result{r})
	assert.Equal(t, Warn, st)
	assert.Contains(t, ev, "the oracle's agent phase ran into its timeout")
	assert.NotContains(t, ev, "agent phase used more than half")
	assert.Contains(t, ev, "agent stopped by its 15s timeout (18.2s from its container's start)")
}

// A skipped check says so, and a failed one fails the task and the report.
func TestSkipAndWrite(t *testing.T) {
	task := Audit(Input{Task: "x", Dir: "/t/x", Oracle: []*results.Result{run(grader.OutcomePassed, 1)}, Nop: run(grader.OutcomeFailed, 1),
		Skip: map[string]bool{CheckRepro: true}})
	assert.Equal(t, Skipped, statusOf(task, CheckRepro).Status)
	assert.True(t, task.Failed())
	rep := &Report{Tasks: []Task{task, {Task: "y", Checks: []Check{{Name: CheckOracle, Status: OK}}}}, Skipped: []string{CheckRepro}}
	assert.False(t, rep.OK())
	var buf bytes.Buffer
	Write(&buf, rep)
	out := buf.String()
	assert.Contains(t, out, "FAIL x (/t/x)\n")
	assert.NotContains(t, out, "repro    skipped")
	assert.Contains(t, out, "skipped: repro (--skip)")
	assert.True(t, strings.Contains(out, "task  oracle"), out)
}

// A task whose trials the machine failed is not judged: neither ok nor
// FAIL, with the first error on the next line.
func TestIncompleteTask(t *testing.T) {
	task := Audit(Input{Task: "x", Dir: "/t/x", NoOracle: true, Nop: run(grader.OutcomeInfraError, 0)})
	task.Infra = []string{"x__nop__1: the offline base image is missing too"}
	rep := &Report{Tasks: []Task{task}}
	assert.True(t, rep.Incomplete())
	assert.False(t, rep.OK(), "an incomplete audit is not ok")
	var buf bytes.Buffer
	Write(&buf, rep)
	assert.Contains(t, buf.String(), "INFRA x (/t/x)\n     not judged: 1 trial(s) ended infra_error, so the checks below prove nothing "+
		"(first: x__nop__1: the offline base image is missing too)")
	assert.NotContains(t, buf.String(), "ok   x")
}

func TestReproducibility(t *testing.T) {
	df := `FROM python AS build
FROM build
FROM ubuntu:latest
FROM debian:bookworm@sha256:abc
FROM python:3.12-slim
ARG BASE=x
FROM $BASE
RUN apt-get update && apt-get install -y --no-install-recommends git curl=7.88 \
    python3
RUN pip install requests==2.31 flask -r req.txt ./local
RUN python3 -m pip install numpy
RUN curl -fsSL https://example.com/install.sh | sh
RUN apt-get install -y -o Dpkg::Options::=--force-confnew vim=2:9
`
	instrs, err := sandbox.DockerfileInstructions([]byte(df))
	if !assert.NoError(t, err) {
		return
	}
	got := Reproducibility("Dockerfile", instrs)
	assert.Equal(t, []string{
		"Dockerfile:1: FROM python: no tag (latest)",
		"Dockerfile:3: FROM ubuntu:latest: tagged latest",
		"Dockerfile:8: apt packages without a version: git python3",
		"Dockerfile:10: pip packages without a version: flask",
		"Dockerfile:11: pip packages without a version: numpy",
		"Dockerfile:12: a script is piped from the network into a shell (curl|sh)",
	}, got)
}

func TestDockerfileLeaks(t *testing.T) {
	instrs, err := sandbox.DockerfileInstructions([]byte("FROM x:1\nCOPY app/ /app/\nCOPY ./tests /opt/t\nADD solution/solve.sh /s.sh\nCOPY --from=build /tests /tests\n"))
	if !assert.NoError(t, err) {
		return
	}
	assert.Equal(t, []string{
		"Dockerfile:3: COPY copies ./tests into the image",
		"Dockerfile:4: ADD copies solution/solve.sh into the image",
	}, DockerfileLeaks("Dockerfile", instrs))
}

// A copy of a hidden file in the build context is found by content, under
// any name; files too small to mean anything are left out.
func TestEnvironmentLeaks(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("tests/test_x.py", "def test_x():\n    assert answer() == 42\n")
	write("tests/__init__.py", "")
	write("solution/solve.sh", "echo 42 > /app/answer.txt\n")
	write("environment/Dockerfile", "FROM x:1\n")
	write("environment/app/renamed.py", "def test_x():\n    assert answer() == 42\n")
	write("environment/app/empty.py", "")
	hidden, err := HiddenFiles(dir, "tests", "solution", "missing")
	if !assert.NoError(t, err) {
		return
	}
	assert.Len(t, hidden, 2)
	leaks, err := EnvironmentLeaks(dir, hidden)
	assert.NoError(t, err)
	assert.Equal(t, []string{"tests/test_x.py is in the build context as environment/app/renamed.py"}, leaks)
	assert.Equal(t, []int64{26, 40}, hidden.Sizes(dir))
}

// Every check says what it asks in task verify's help.
func TestEveryCheckHasText(t *testing.T) {
	for _, c := range Checks {
		assert.NotEmpty(t, CheckText[c], c)
	}
	assert.Len(t, CheckText, len(Checks))
}
