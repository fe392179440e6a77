package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/runner/results"
)

// askAgent is the docs' ask() helper (docs/running.md, "Agents that
// ask"), read from the docs verbatim: the snippet users copy is the one
// tested.
var askAgent = docsAskHelper()

func docsAskHelper() string {
	data, err := os.ReadFile(filepath.Join("..", "docs", "running.md"))
	if err != nil {
		panic(err)
	}
	doc := string(data)
	start := strings.Index(doc, "\nask() {")
	end := strings.Index(doc[start+1:], "\n}\n")
	if start < 0 || end < 0 {
		panic("docs/running.md: no ask() helper")
	}
	return doc[start+1:start+1+end+2] + "\n"
}

// The agents of TestAskChannel, by variant.
var askVariants = map[string]string{
	// Asks a question the task answers and writes what it was told.
	"asks": askAgent + `echo "max_turns=$FLIGHTDECK_MAX_TURNS"
body=$(ask "What should add return?")
printf 'def add(a, b):\n    return %s\n' "$body" > calc/__init__.py
git add -A && git -c user.name=a -c user.email=a@b commit -qm add`,
	// Asks twice through $(...): the second question is its own, and
	// needs input, rather than reading the first one's reply.
	"twice": askAgent + `a=$(ask "What should add return?"); echo "first: $a"; b=$(ask "And what should sub return?"); echo "second: $b"; sleep 300`,
	// Asks what the task does not answer, and would wait long past it.
	"unmatched": askAgent + `date +%s.%N > /tmp/asked; echo "asked at $(cat /tmp/asked)"
ask "What is the meaning of life?"; sleep 300`,
	// Asks one more question than max_turns allows.
	"bound": askAgent + `for i in 1 2 3 4; do ask "What should add return? ($i)"; echo; done; sleep 300`,
	// Names a host file through a link.
	"link": `ln -s /etc/shadow "$FLIGHTDECK_ASK_DIR/1.q"; sleep 300`,
	// A question larger than the channel takes.
	"huge": `head -c 100000 /dev/zero | tr '\0' 'a' > "$FLIGHTDECK_ASK_DIR/.1"; mv "$FLIGHTDECK_ASK_DIR/.1" "$FLIGHTDECK_ASK_DIR/1.q"; sleep 300`,
	// A question that is not text.
	"binary": `printf 'add\000\377\376' > "$FLIGHTDECK_ASK_DIR/.1"; mv "$FLIGHTDECK_ASK_DIR/.1" "$FLIGHTDECK_ASK_DIR/1.q"; sleep 300`,
	// A thousand questions at once, and names that are not questions.
	// (Each is renamed into place whole, as the protocol says: a question
	// read while half written would need input for its emptiness instead.)
	"flood": `cd "$FLIGHTDECK_ASK_DIR" && for i in $(seq 1 1000); do echo "What should add return?" > ".$i"; mv ".$i" "$i.q"; done; touch ../x.q '..q' 'a b.q'; sleep 300`,
}

// The question channel end to end: a command agent in bash that asks and
// uses the reply passes; an unmatched question, one past the bound and
// anything that is not a question end the trial as needs_input, ungraded,
// with nothing left running; a replay with an ask step passes.
func TestAskChannel(t *testing.T) {
	requireEngine(t)
	dir := t.TempDir()
	task := copyTask(t, taskDir(t, "attack-native"), dir, "ask-native", func(toml string) string {
		toml = strings.Replace(toml, `environment = "bare"`, "environment = \"bare\"\nmax_turns = 3", 1)
		return toml + "\n[flightdeck.agent]\nanswers = [{match = \"add return\", reply = \"a + b\"}]\n"
	})
	replay := filepath.Join(dir, "replay.json")
	writeJSON(t, replay, map[string]any{"version": 1, "steps": []any{
		map[string]any{"ask": map[string]any{"question": "What should add return?", "expect": "a + b"}},
		map[string]any{"write": map[string]any{"path": "calc/__init__.py", "content": "def add(a, b):\n    return a + b\n"}},
		map[string]any{"commit": map[string]any{"message": "add"}},
	}})
	variants := map[string]map[string]any{"replay": {"agent": "deterministic", "script": replay}}
	for name, script := range askVariants {
		variants[name] = command(script)
	}
	suite := writeSuite(t, dir, suiteFile{Name: "ask", Tasks: []string{task}, Variants: variants, Concurrency: 2, Retries: retries(0)})
	run := runFlightdeck(t, suite)
	const task0 = "ask-native"

	for _, v := range []string{"asks", "replay"} {
		res := run.result(t, task0, v)
		assert.Equal(t, grader.OutcomePassed, res.Outcome, "%s: %s", v, res.Error)
		require.Len(t, res.Questions, 1, v)
		assert.Equal(t, "a + b", res.Questions[0].Reply)
		assert.Equal(t, 3, res.MaxTurns)
		kinds := eventKinds(t, run.trialDir(task0, v))
		assert.Equal(t, []string{grader.EventQuestion, grader.EventAnswer}, kinds[:2], "%s: the exchange comes first: %v", v, kinds)
	}
	assert.Contains(t, readText(t, filepath.Join(run.trialDir(task0, "asks"), results.AgentLog)), "max_turns=3")

	needs := map[string]string{
		"unmatched": "no answer", "bound": "past the bound of 3", "twice": "no answer",
		"link": "regular file", "huge": "longer than", "binary": "not text", "flood": "past the bound",
	}
	for v, reason := range needs {
		res := run.result(t, task0, v)
		assert.Equal(t, grader.OutcomeNeedsInput, res.Outcome, "%s: %s", v, res.Error)
		assert.Equal(t, grader.SpecNeedsInput, res.OutcomeClass, v)
		require.NotNil(t, res.NeedsInput, v)
		assert.Contains(t, res.NeedsInput.Reason, reason, v)
		assert.Nil(t, res.Reward, "%s: not graded", v)
		assert.Nil(t, res.GradePhase.ExitCode, "%s: no grade ran", v)
		assert.False(t, res.AgentPhase.TimedOut, "%s: the channel ended the phase, not the timeout", v)
		assert.NotContains(t, res.NeedsInput.Question, "root:", "%s: nothing of the host's comes back", v)
		_, err := os.Stat(filepath.Join(run.trialDir(task0, v), grader.RewardDir, grader.RewardJSON))
		assert.True(t, os.IsNotExist(err), "%s: no reward file", v)
	}
	assert.Len(t, run.result(t, task0, "bound").Questions, 3)
	twice := run.result(t, task0, "twice")
	require.Len(t, twice.Questions, 1, "the first question was answered")
	assert.Equal(t, "And what should sub return?", twice.NeedsInput.Question)
	assert.Equal(t, "What is the meaning of life?", run.result(t, task0, "unmatched").NeedsInput.Question)

	// The phase ends when the question is read, not at the agent's sleep
	// nor its timeout (60 s): the latency is logged, the bound is loose.
	res := run.result(t, task0, "unmatched")
	log := readText(t, filepath.Join(run.trialDir(task0, "unmatched"), results.AgentLog))
	asked := askedAt(t, log)
	for _, p := range res.Phases {
		if p.Name == "agent" {
			latency := p.End.Sub(asked)
			t.Logf("needs_input ended the agent's phase %s after the question", latency)
			assert.Less(t, latency, 30*time.Second)
		}
	}

	// The summary counts them apart, junit skips them with the question.
	assert.Contains(t, run.cli.stdout, "needs input")
	junit := readText(t, filepath.Join(run.dir, results.JUnitFile))
	assert.Contains(t, junit, `<skipped message="needs input: &#34;What is the meaning of life?&#34;`)
	var rec results.RunRecord
	require.NoError(t, json.Unmarshal([]byte(readText(t, filepath.Join(run.dir, results.RunFile))), &rec))
	for _, vs := range rec.Variants {
		if _, ok := needs[vs.Variant]; ok {
			assert.Equal(t, 1, vs.NeedsInput, vs.Variant)
			assert.Equal(t, 0, vs.Graded, vs.Variant)
			assert.Nil(t, vs.PassRate, vs.Variant)
		}
	}
	assert.Contains(t, readText(t, filepath.Join(run.dir, "report.html")), "needs input: asked")
	assertNoLeftovers(t, run.id)
}

// An imported ai-dlc scenario whose agent asks: the asked-and-answered
// trial passes, the one that asks what the scenario does not answer is
// needs_input, counted apart.
func TestAskImportedAidlc(t *testing.T) {
	requireEngine(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "imported")
	imp := flightdeck(t, dir, nil, "task", "import-aidlc", aidlcSuite(t), "--out", out)
	require.Equal(t, 0, imp.code, imp.stderr)
	solution, err := os.ReadFile(filepath.Join("..", "tasks", "fixtures", "csv-validator", "solution", "validate.py"))
	require.NoError(t, err)
	replay := func(question, expect string) string {
		p := filepath.Join(dir, strconv.Itoa(len(question))+".json")
		writeJSON(t, p, map[string]any{"version": 1, "steps": []any{
			map[string]any{"ask": map[string]any{"question": question, "expect": expect}},
			map[string]any{"write": map[string]any{"path": "csvcheck/validate.py", "content": string(solution)}},
			map[string]any{"commit": map[string]any{"message": "Detect duplicate rows"}},
		}})
		return p
	}
	suite := writeSuite(t, out, suiteFile{
		Name: "smoke", Tasks: []string{"csv-duplicate-rows"}, Retries: retries(0), Concurrency: 2,
		Variants: map[string]map[string]any{
			"asks":       {"agent": "deterministic", "script": replay("Should duplicates be found without a schema too?", "without a schema")},
			"unanswered": {"agent": "deterministic", "script": replay("Which Python version may I use?", "")},
		},
		Images: map[string]string{"python:3.12-slim@sha256:78387bc3881b8273120a12ebe6c1ab22b018ccc2c9adf565ae1ac9b536e184ea": "flightdeck/base:bookworm"},
	})
	run := runFlightdeck(t, suite)
	asks := run.result(t, "csv-duplicate-rows", "asks")
	assert.Equal(t, grader.OutcomePassed, asks.Outcome, asks.Error)
	require.Len(t, asks.Questions, 1)
	assert.Contains(t, asks.Questions[0].Reply, "without a schema")
	assert.Equal(t, 60, asks.MaxTurns, "ai-dlc's limits.max_turns")
	un := run.result(t, "csv-duplicate-rows", "unanswered")
	assert.Equal(t, grader.OutcomeNeedsInput, un.Outcome, un.Error)
	summary := run.cli.stdout
	assert.Regexp(t, `asks\s+1\s+1\s+0\s+0\s+0\s+0\s+0\s+0\s+100%`, summary)
	assert.Regexp(t, `unanswered\s+1\s+0\s+0\s+0\s+0\s+0\s+0\s+1\s+-`, summary)
	assertNoLeftovers(t, run.id)
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o644))
}

// eventKinds are the kinds in a trial's events.jsonl, in order.
func eventKinds(t *testing.T, trialDir string) []string {
	t.Helper()
	var kinds []string
	for _, line := range strings.Split(strings.TrimSpace(readText(t, filepath.Join(trialDir, results.EventsFile))), "\n") {
		var e grader.Event
		require.NoError(t, json.Unmarshal([]byte(line), &e), line)
		kinds = append(kinds, e.Kind)
	}
	return kinds
}

// askedAt reads the "asked at SECONDS" line an agent printed.
func askedAt(t *testing.T, log string) time.Time {
	t.Helper()
	for _, l := range strings.Split(log, "\n") {
		if s, ok := strings.CutPrefix(l, "asked at "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			require.NoError(t, err)
			return time.Unix(0, int64(f*1e9))
		}
	}
	t.Fatalf("no asked-at line in agent.log:\n%s", log)
	return time.Time{}
}

// A flightdeck-native task with no answers still has the channel: an agent
// that asks through the documented helper ends needs_input at once, not at
// its timeout.
func TestAskWithoutAnswers(t *testing.T) {
	requireEngine(t)
	dir := t.TempDir()
	task := copyTask(t, taskDir(t, "attack-native"), dir, "ask-none", func(toml string) string { return toml })
	suite := writeSuite(t, dir, suiteFile{Name: "ask-none", Tasks: []string{task}, Concurrency: 1, Retries: retries(0),
		Variants: map[string]map[string]any{"asks": command(askAgent + `x=$(ask "Which format?"); echo "told: $x"; sleep 300`)}})
	run := runFlightdeck(t, suite)
	res := run.result(t, "ask-none", "asks")
	assert.Equal(t, grader.OutcomeNeedsInput, res.Outcome, res.Error)
	require.NotNil(t, res.NeedsInput)
	assert.Equal(t, "Which format?", res.NeedsInput.Question)
	assert.Contains(t, res.NeedsInput.Reason, "the task answers no questions")
	assert.False(t, res.AgentPhase.TimedOut, "the channel ended the phase, not the timeout")
	assert.Nil(t, res.Reward, "not graded")
	assertNoLeftovers(t, run.id)
}
