package hangar

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/tasks"
)

// fakeTask is a task directory written for a test: a valid task for hangar
// unless a case changes it.
type fakeTask struct {
	name  string            // [task].name
	toml  string            // task.toml; files_digest is added when it has [flightdeck.grader]
	files map[string][]byte // relative path → contents
}

const validSource = `
[flightdeck.source]
repo = "https://github.com/example/repo.git"
base_sha = "0123456789abcdef0123456789abcdef01234567"
`

func newFakeTask(name string) *fakeTask {
	return &fakeTask{
		name: name,
		toml: fmt.Sprintf(`schema_version = "1.4"

[task]
name = "org/%s"

[verifier]
timeout_sec = 600.0

[flightdeck]
environment = "bare"
%s
[flightdeck.grader]
command = "bash tests/test.sh"
`, name, validSource),
		files: map[string][]byte{
			"instruction.md":         []byte("Do the thing.\n"),
			"environment/Dockerfile": []byte("FROM flightdeck/base:bookworm\n"),
			"tests/test.sh":          []byte("exit 0\n"),
		},
	}
}

// edit replaces old with new in task.toml; the case fails if old is absent.
func (f *fakeTask) edit(t *testing.T, old, new string) {
	t.Helper()
	require.Contains(t, f.toml, old)
	f.toml = strings.Replace(f.toml, old, new, 1)
}

// write writes the task under root/dir and loads it.
func (f *fakeTask) write(t *testing.T, root, dir string) *tasks.Task {
	t.Helper()
	d := filepath.Join(root, dir)
	for rel, b := range f.files {
		p := filepath.Join(d, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, b, 0o644))
	}
	toml := f.toml
	if strings.Contains(toml, "[flightdeck.grader]") {
		fd, err := tasks.FilesDigest(d)
		require.NoError(t, err)
		require.True(t, strings.HasSuffix(toml, "\n") && strings.LastIndex(toml, "[flightdeck.grader]") > strings.LastIndex(toml, "[flightdeck.source]"),
			"[flightdeck.grader] must be task.toml's last table")
		toml += fmt.Sprintf("files_digest = %q\n", fd)
	}
	require.NoError(t, os.WriteFile(filepath.Join(d, "task.toml"), []byte(toml), 0o644))
	task, err := tasks.Load(d, tasks.LoadOptions{})
	require.NoError(t, err)
	return task
}

// manyFiles returns n tiny test files.
func manyFiles(n int) map[string][]byte {
	m := map[string][]byte{}
	for i := range n {
		m[fmt.Sprintf("tests/case_%03d.py", i)] = []byte("assert True\n")
	}
	return m
}

// refusalWant is one expected violation; file is relative to the temp root.
type refusalWant struct{ file, field, rule string }

var refusalsCases = []struct {
	name   string
	change func(t *testing.T, f *fakeTask)
	want   []refusalWant
}{
	{
		name:   "missing source",
		change: func(t *testing.T, f *fakeTask) { f.edit(t, validSource, "") },
		want: []refusalWant{
			{"a/task.toml", "[flightdeck.source].repo", "missing: hangar applies and grades a trial's patch only on a repository"},
			{"a/task.toml", "[flightdeck.source].base_sha", "missing"},
		},
	},
	{
		name: "source without base_sha",
		change: func(t *testing.T, f *fakeTask) {
			f.edit(t, `base_sha = "0123456789abcdef0123456789abcdef01234567"`, "")
		},
		want: []refusalWant{{"a/task.toml", "[flightdeck.source].base_sha", "missing: hangar checks the repository out at this commit"}},
	},
	{
		name: "base_sha not 40 hex digits",
		change: func(t *testing.T, f *fakeTask) {
			f.edit(t, `base_sha = "0123456789abcdef0123456789abcdef01234567"`, `base_sha = "main"`)
		},
		want: []refusalWant{{"a/task.toml", "[flightdeck.source].base_sha", `must be 40 lowercase hex digits, found "main"`}},
	},
	{
		name: "multi-step, steps only",
		change: func(t *testing.T, f *fakeTask) {
			f.edit(t, "[flightdeck.grader]\ncommand = \"bash tests/test.sh\"\n", "")
			f.toml += "\n[[steps]]\nname = \"one\"\n"
			delete(f.files, "instruction.md")
			delete(f.files, "tests/test.sh")
			f.files["steps/one/instruction.md"] = []byte("Do step one.\n")
			f.files["steps/one/tests/test.sh"] = []byte("exit 0\n")
		},
		want: []refusalWant{{"a/task.toml", "[[steps]]", "a multi-step task (1 steps): hangar runs one instruction and one grader per task"}},
	},
	{
		name:   "a seed trajectory",
		change: func(t *testing.T, f *fakeTask) { f.files["trajectory.json"] = []byte(`{"steps": []}`) },
		want:   []refusalWant{{"a/trajectory.json", "seed trajectory", "hangar gives an agent the instruction alone"}},
	},
	{
		name: "sealed",
		change: func(t *testing.T, f *fakeTask) {
			f.edit(t, `environment = "bare"`, "environment = \"bare\"\nsealed = true")
		},
		want: []refusalWant{{"a/task.toml", "[flightdeck].sealed", "sealed tasks never leave this repository"}},
	},
	{
		name: "harbor task without a grader command",
		change: func(t *testing.T, f *fakeTask) {
			f.edit(t, "[flightdeck.grader]\ncommand = \"bash tests/test.sh\"\n", "")
		},
		want: []refusalWant{{"a/task.toml", "[flightdeck.grader].command", "graded the Harbor way"}},
	},
	{
		name: "oversized instruction",
		change: func(t *testing.T, f *fakeTask) {
			f.files["instruction.md"] = []byte(strings.Repeat("é", tasks.MaxInstructionChars+1))
		},
		want: []refusalWant{{"a/instruction.md", "instruction", "64001 characters; hangar allows at most 64000"}},
	},
	{
		name:   "binary test file",
		change: func(t *testing.T, f *fakeTask) { f.files["tests/data/blob.bin"] = []byte{0x7f, 'E', 'L', 'F', 0, 1} },
		want:   []refusalWant{{"a/tests/data/blob.bin", "grader files", "binary (a NUL byte or invalid UTF-8): hangar's grader files are text only"}},
	},
	{
		name:   "invalid UTF-8 test file",
		change: func(t *testing.T, f *fakeTask) { f.files["tests/latin1.txt"] = []byte("caf\xe9\n") },
		want:   []refusalWant{{"a/tests/latin1.txt", "grader files", "binary"}},
	},
	{
		name: "oversized reference patch",
		change: func(t *testing.T, f *fakeTask) {
			f.files["solution/reference.patch"] = bytes.Repeat([]byte("+x\n"), tasks.MaxReferencePatch/3+1)
		},
		want: []refusalWant{{"a/solution/reference.patch", "reference_patch", "1000002 bytes; hangar allows at most 1000000"}},
	},
	{
		name:   "binary reference patch",
		change: func(t *testing.T, f *fakeTask) { f.files["solution/reference.patch"] = []byte("GIT\x00binary") },
		want:   []refusalWant{{"a/solution/reference.patch", "reference_patch", "not text"}},
	},
	{
		name: "one task over the file limit",
		change: func(t *testing.T, f *fakeTask) {
			for k, v := range manyFiles(tasks.MaxGraderFiles) { // with test.sh: 65
				f.files[k] = v
			}
		},
		want: []refusalWant{{"a/tests", "grader files", "65 files, 775 bytes: this task alone exceeds one experiment's 64 files / 1000000 bytes"}},
	},
	{
		name: "one task over the byte limit",
		change: func(t *testing.T, f *fakeTask) {
			f.files["tests/big.txt"] = bytes.Repeat([]byte("x"), tasks.MaxGraderBytes)
		},
		want: []refusalWant{{"a/tests", "grader files", "2 files, 1000007 bytes: this task alone exceeds"}},
	},
	{
		name:   "no test files",
		change: func(t *testing.T, f *fakeTask) { delete(f.files, "tests/test.sh") },
		want:   []refusalWant{{"a/tests", "grader files", "no files"}},
	},
	{
		name:   "verifier timeout outside hangar's range",
		change: func(t *testing.T, f *fakeTask) { f.edit(t, "timeout_sec = 600.0", "timeout_sec = 7200.0") },
		want:   []refusalWant{{"a/task.toml", "[verifier].timeout_sec", "7200 s is outside hangar's 30..3600 s"}},
	},
	{
		name: "every violation of a task at once",
		change: func(t *testing.T, f *fakeTask) {
			f.edit(t, validSource, "")
			f.edit(t, `environment = "bare"`, "environment = \"bare\"\nsealed = true")
			f.files["instruction.md"] = []byte(strings.Repeat("x", tasks.MaxInstructionChars+1))
			f.files["tests/blob.bin"] = []byte{0}
		},
		want: []refusalWant{
			{"a/task.toml", "[flightdeck].sealed", "sealed"},
			{"a/task.toml", "[flightdeck.source].repo", "missing"},
			{"a/task.toml", "[flightdeck.source].base_sha", "missing"},
			{"a/instruction.md", "instruction", "64001 characters"},
			{"a/tests/blob.bin", "grader files", "binary"},
		},
	},
}

func TestRefusals(t *testing.T) {
	for _, tt := range refusalsCases {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			f := newFakeTask("a")
			tt.change(t, f)
			ok := newFakeTask("b").write(t, root, "b") // a valid task beside it
			plan, err := Build([]*tasks.Task{f.write(t, root, "a"), ok}, Options{Root: root})
			require.NoError(t, err)

			var got []refusalWant
			for _, v := range plan.Violations {
				assert.Equal(t, "a", v.Task)
				got = append(got, refusalWant{v.File, v.Field, v.Rule})
			}
			require.Len(t, got, len(tt.want), "violations: %v", plan.Violations)
			for i, w := range tt.want {
				assert.Equal(t, filepath.FromSlash(w.file), got[i].file)
				assert.Equal(t, w.field, got[i].field)
				assert.Contains(t, got[i].rule, w.rule)
			}
			// The refused task is left out of the plan; nothing is written.
			require.Len(t, plan.Experiments, 1)
			assert.Equal(t, []string{"b"}, plan.Experiments[0].Tasks)
			out := filepath.Join(root, "out")
			assert.ErrorIs(t, plan.Write(out), ErrViolations)
			assert.NoDirExists(t, out)
		})
	}
}

func TestInstructionLimitCountsCharactersNotBytes(t *testing.T) {
	root := t.TempDir()
	f := newFakeTask("wide")
	f.files["instruction.md"] = []byte(strings.Repeat("é", tasks.MaxInstructionChars)) // 128,000 bytes
	plan, err := Build([]*tasks.Task{f.write(t, root, "wide")}, Options{})
	require.NoError(t, err)
	assert.Empty(t, plan.Violations)
	require.Len(t, plan.Experiments, 1)
	assert.Equal(t, strings.Repeat("é", tasks.MaxInstructionChars), plan.Experiments[0].Experiment.Spec.Tasks[0].Instruction)
}

func TestIDCollisions(t *testing.T) {
	long := "a-task-name-far-too-long-for-hangar-whose-limit-is-forty"
	tests := []struct {
		name  string
		names [2]string // [task].name's last part of the two tasks
		id    string    // the hangar id they share
	}{
		{"same id in two directories", [2]string{"same", "same"}, "same"},
		{"a short form equal to another task's id", [2]string{long, tasks.ShortID(long)}, tasks.ShortID(long)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			ts := []*tasks.Task{
				newFakeTask(tt.names[0]).write(t, root, "one"),
				newFakeTask(tt.names[1]).write(t, root, "two"),
				newFakeTask("other").write(t, root, "three"),
			}
			plan, err := Build(ts, Options{Root: root})
			require.NoError(t, err)
			require.Len(t, plan.Violations, 2, "%v", plan.Violations)
			for i, dir := range []string{"one", "two"} {
				v := plan.Violations[i]
				assert.Equal(t, filepath.Join(dir, "task.toml"), v.File)
				assert.Equal(t, "id", v.Field)
				assert.Contains(t, v.Rule, fmt.Sprintf("hangar id %q", tt.id))
				assert.Contains(t, v.Rule, "ids must be unique in an export")
			}
			assert.Contains(t, plan.Violations[0].Rule, "(two)")
			assert.Contains(t, plan.Violations[1].Rule, "(one)")
			require.Len(t, plan.Experiments, 1)
			assert.Equal(t, []string{"other"}, plan.Experiments[0].Tasks)
		})
	}
}

func TestViolationsOfSeveralTasksAreAllReported(t *testing.T) {
	root := t.TempDir()
	sealed := newFakeTask("sealed")
	sealed.edit(t, `environment = "bare"`, "environment = \"bare\"\nsealed = true")
	noSource := newFakeTask("nosource")
	noSource.edit(t, validSource, "")
	plan, err := Build([]*tasks.Task{sealed.write(t, root, "s"), noSource.write(t, root, "n")}, Options{Root: root})
	require.NoError(t, err)
	var tasksHit []string
	for _, v := range plan.Violations {
		tasksHit = append(tasksHit, v.Task)
	}
	assert.Equal(t, []string{"sealed", "nosource", "nosource"}, tasksHit)
	assert.Empty(t, plan.Experiments)
}
