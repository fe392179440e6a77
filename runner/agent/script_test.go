package agent

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseScript(t *testing.T) {
	s, err := parseScript([]byte(`{
  "version": 1,
  "steps": [
    {"write":  {"path": "csvcheck/validate.py", "from": "solution/validate.py"}},
    {"write":  {"path": "notes.txt", "content": "inline text\n", "mode": "0755"}},
    {"write":  {"path": "empty.txt", "content": ""}},
    {"run":    {"command": "python3 -m unittest discover -s tests", "expect_exit": 1}},
    {"run":    {"command": "true"}},
    {"commit": {"message": "Detect duplicate rows"}}
  ]
}`), "deterministic.json")
	require.NoError(t, err)
	require.Len(t, s.Steps, 6)
	kinds := []string{}
	for _, st := range s.Steps {
		kinds = append(kinds, st.Kind())
	}
	assert.Equal(t, []string{"write", "write", "write", "run", "run", "commit"}, kinds)
	assert.Equal(t, "solution/validate.py", s.Steps[0].Write.From)
	assert.Equal(t, os.FileMode(0o644), s.Steps[0].Write.FileMode())
	assert.Equal(t, os.FileMode(0o755), s.Steps[1].Write.FileMode())
	require.NotNil(t, s.Steps[2].Write.Content, "empty inline content is content")
	assert.Equal(t, 1, s.Steps[3].Run.Expected())
	assert.Equal(t, 0, s.Steps[4].Run.Expected())
	assert.Equal(t, "Detect duplicate rows", s.Steps[5].Commit.Message)
}

func TestParseScriptErrors(t *testing.T) {
	tests := []struct{ name, json, want string }{
		{"no version", `{"steps": []}`, "version is missing"},
		{"version 2", `{"version": 2, "steps": []}`, "version 2 is not supported"},
		{"no steps", `{"version": 1}`, "steps is missing"},
		{"unknown top key", `{"version": 1, "steps": [], "x": 1}`, `unknown field "x"`},
		{"two kinds", `{"version": 1, "steps": [{"run": {"command": "a"}, "commit": {"message": "m"}}]}`, "steps[0]: a step has exactly one of write, run, commit, ask (found commit, run)"},
		{"no kind", `{"version": 1, "steps": [{}]}`, "steps[0]: a step has exactly one of write, run, commit"},
		{"unknown kind", `{"version": 1, "steps": [{"delete": {}}]}`, `steps[0]: unknown step kind "delete"`},
		{"ask without a question", `{"version": 1, "steps": [{"ask": {"question": " "}}]}`, "steps[0].ask.question: an ask step needs a non-empty question"},
		{"ask with an unknown field", `{"version": 1, "steps": [{"ask": {"question": "q", "reply": "r"}}]}`, "steps[0].ask"},
		{"not an object", `{"version": 1, "steps": [3]}`, "steps[0]: a step must be an object"},
		{"absolute path", `{"version": 1, "steps": [{"run": {"command": "a"}}, {"write": {"path": "/etc/x", "content": ""}}]}`, "steps[1].write.path: \"/etc/x\" must be relative to the work dir"},
		{"dotdot path", `{"version": 1, "steps": [{"write": {"path": "a/../../x", "content": ""}}]}`, `steps[0].write.path: "a/../../x" must stay in the work dir`},
		{"git path", `{"version": 1, "steps": [{"write": {"path": ".git/hooks/post-commit", "content": ""}}]}`, "steps[0].write.path: \".git/hooks/post-commit\" is inside .git"},
		{"empty path", `{"version": 1, "steps": [{"write": {"path": "", "content": ""}}]}`, "steps[0].write.path: the path is empty"},
		{"both sources", `{"version": 1, "steps": [{"write": {"path": "a", "content": "", "from": "solution/a"}}]}`, "steps[0].write: give from or content, not both"},
		{"no source", `{"version": 1, "steps": [{"write": {"path": "a"}}]}`, "steps[0].write: give from"},
		{"from outside solution", `{"version": 1, "steps": [{"write": {"path": "a", "from": "tests/test.sh"}}]}`, `steps[0].write.from: "tests/test.sh" must be under solution/`},
		{"from escaping", `{"version": 1, "steps": [{"write": {"path": "a", "from": "solution/../tests/x"}}]}`, "steps[0].write.from"},
		{"bad mode", `{"version": 1, "steps": [{"write": {"path": "a", "content": "", "mode": "rwx"}}]}`, `steps[0].write.mode: "rwx" is not an octal file mode`},
		{"empty command", `{"version": 1, "steps": [{"run": {"command": " "}}]}`, "steps[0].run.command: a run step needs a command"},
		{"bad exit", `{"version": 1, "steps": [{"run": {"command": "a", "expect_exit": 300}}]}`, "steps[0].run.expect_exit: 300 is not an exit code"},
		{"unknown run key", `{"version": 1, "steps": [{"run": {"cmd": "a"}}]}`, `steps[0].run: json: unknown field "cmd"`},
		{"empty message", `{"version": 1, "steps": [{"commit": {"message": ""}}]}`, "steps[0].commit.message: a commit needs a non-empty message"},
		{"trailing", `{"version": 1, "steps": []} {}`, "trailing data"},
		{"not json", `steps:`, "deterministic.json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseScript([]byte(tc.json), "deterministic.json")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "deterministic.json: ", "errors name the file")
		})
	}
}

func TestLoadScriptOfTheCSVFixture(t *testing.T) {
	path := filepath.Join("..", "..", "tasks", "fixtures", "csv-validator", "solution", "deterministic.json")
	if _, err := os.Stat(path); err != nil {
		t.Skip("the csv-validator fixture is not in this tree")
	}
	s, err := LoadScript(path)
	require.NoError(t, err)
	assert.NotEmpty(t, s.Steps)
}

func FuzzParseScript(f *testing.F) {
	f.Add([]byte(`{"version":1,"steps":[{"write":{"path":"a/b.txt","content":"x","mode":"0600"}},{"run":{"command":"ls","expect_exit":2}},{"commit":{"message":"m"}}]}`))
	f.Add([]byte(`{"version":1,"steps":[{"write":{"path":"x","from":"solution/x"}}]}`))
	f.Add([]byte(`{"version":1,"steps":[{"write":{"path":"../x","content":""}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := parseScript(data, "d.json")
		if err != nil {
			return
		}
		for i, st := range s.Steps {
			switch st.Kind() {
			case "write":
				if checkWorkPath(st.Write.Path) != nil {
					t.Fatalf("steps[%d]: accepted path %q", i, st.Write.Path)
				}
				if st.Write.From != "" && checkSolutionPath(st.Write.From) != nil {
					t.Fatalf("steps[%d]: accepted from %q", i, st.Write.From)
				}
			case "run", "commit":
			default:
				t.Fatalf("steps[%d]: accepted a step of no kind", i)
			}
		}
	})
}
