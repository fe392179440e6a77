package tasks

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/internal/testenv"
)

func rulesOf(found []Finding) []string {
	var rules []string
	for _, f := range found {
		rules = append(rules, f.Severity+" "+f.Rule)
	}
	sort.Strings(rules)
	return rules
}

func TestCheckValidTask(t *testing.T) {
	dir := nativeTask(t, baseTOML, nil)
	assert.Empty(t, Check(dir))
}

// checkRulesManyTests is MaxGraderFiles data files: with the task's own
// test.sh and test_x.py, two more than Check allows.
var checkRulesManyTests = func() map[string]string {
	m := map[string]string{}
	for i := 0; i < MaxGraderFiles; i++ { // with test.sh and test_x.py: 66
		m[fmt.Sprintf("tests/data/f%02d.txt", i)] = "x\n"
	}
	return m
}()

var checkRulesCases = []struct {
	name     string
	toml     string            // "" = baseTOML
	files    map[string]string // "" removes
	redigest bool              // record files_digest again after files
	symlink  string
	want     []string // "severity rule", sorted
	wantPath string   // the path of the first finding, relative to the task
	wantMsg  string   // a substring of the first finding's message
}{
	{name: "no task.toml", files: map[string]string{"task.toml": ""},
		want: []string{"error layout.task-toml"}, wantPath: "task.toml", wantMsg: "missing"},
	{name: "no instruction.md", files: map[string]string{"instruction.md": ""},
		want: []string{"error layout.instruction"}, wantPath: "instruction.md", wantMsg: "missing"},
	{name: "no Dockerfile", files: map[string]string{"environment/Dockerfile": ""},
		want: []string{"error layout.environment"}, wantPath: "environment", wantMsg: "docker_image"},
	{name: "docker_image instead of a Dockerfile", toml: strings.Replace(baseTOML, "cpus = 2", "cpus = 2\ndocker_image = \"python:3.12\"", 1),
		files: map[string]string{"environment": ""}},
	{name: "no test.sh", files: map[string]string{"tests/test.sh": ""}, redigest: true,
		want: []string{"error layout.tests"}, wantPath: "tests/test.sh", wantMsg: "missing"},
	{name: "TOML syntax", files: map[string]string{"task.toml": "x = [\n"},
		want: []string{"error toml.syntax"}, wantPath: "task.toml", wantMsg: "line"},
	{name: "TOML type", toml: strings.Replace(baseTOML, "sealed = false", "sealed = \"no\"", 1),
		want: []string{"error toml.type"}, wantPath: "task.toml", wantMsg: "[flightdeck].sealed: wrong type"},
	{name: "multi-step", toml: baseTOML + "[[steps]]\n",
		want: []string{"error steps"}, wantPath: "task.toml", wantMsg: "multi-step"},
	{name: "windows", files: map[string]string{"tests/test.sh": "", "tests/test.bat": "@echo off\r\n"}, redigest: true,
		want: []string{"error windows"}, wantPath: "tests/test.bat", wantMsg: "Windows"},
	{name: "symlink", symlink: "solution/ref",
		want: []string{"error symlink"}, wantPath: "solution/ref", wantMsg: "symlink"},
	{name: "sealed is a warning", toml: strings.Replace(baseTOML, "sealed = false", "sealed = true", 1),
		want: []string{"warning sealed"}, wantPath: "task.toml", wantMsg: "sealed"},
	{name: "memory disagrees", toml: strings.Replace(baseTOML, "memory_mb = 2048", "memory_mb = 2048\nmemory = \"4G\"", 1),
		want: []string{"error memory"}, wantPath: "task.toml", wantMsg: "disagrees"},
	{name: "negative cpus", toml: strings.Replace(baseTOML, "cpus = 2", "cpus = -1", 1),
		want: []string{"error cpus"}, wantPath: "task.toml", wantMsg: "negative"},
	{name: "files_digest mismatch", files: map[string]string{"tests/test_x.py": "import os\n"},
		want: []string{"error files-digest"}, wantPath: "task.toml", wantMsg: "computed sha256:"},
	{name: "files_digest missing", files: map[string]string{"task.toml": baseTOML},
		want: []string{"error files-digest"}, wantPath: "task.toml", wantMsg: "missing"},
	{name: "task name", toml: strings.Replace(baseTOML, "example/sample-task", "no-org", 1),
		want: []string{"error task.name"}, wantPath: "task.toml", wantMsg: "org/name"},
	{name: "long id is a warning", toml: strings.Replace(baseTOML, "example/sample-task", "example/"+strings.Repeat("long-", 9), 1),
		want: []string{"warning hangar.id"}, wantPath: "task.toml", wantMsg: ShortID(strings.Repeat("long-", 9))},
	{name: "invalid id", toml: strings.Replace(baseTOML, "example/sample-task", "example/_hidden", 1),
		want: []string{"error hangar.id"}, wantPath: "task.toml", wantMsg: "^[A-Za-z0-9]"},
	{name: "instruction too long", files: map[string]string{"instruction.md": strings.Repeat("é", MaxInstructionChars+1)},
		want: []string{"error hangar.instruction"}, wantPath: "instruction.md", wantMsg: "64001 characters"},
	{name: "instruction at the limit", files: map[string]string{"instruction.md": strings.Repeat("é", MaxInstructionChars)}},
	{name: "instruction not UTF-8", files: map[string]string{"instruction.md": "caf\xe9\n"},
		want: []string{"error hangar.instruction"}, wantPath: "instruction.md", wantMsg: "UTF-8"},
	{name: "too many test files", files: checkRulesManyTests, redigest: true,
		want: []string{"error hangar.tests-count"}, wantPath: "tests", wantMsg: "66 files"},
	{name: "tests too large", files: map[string]string{"tests/big.txt": strings.Repeat("x", MaxGraderBytes)}, redigest: true,
		want: []string{"error hangar.tests-size"}, wantPath: "tests", wantMsg: "at most 1000000"},
	{name: "binary test file", files: map[string]string{"tests/data.bin": "\x00\x01"}, redigest: true,
		want: []string{"error hangar.tests-text"}, wantPath: "tests/data.bin", wantMsg: "text only"},
	{name: "reference patch too large", files: map[string]string{"solution/reference.patch": strings.Repeat("+", MaxReferencePatch+1)},
		want: []string{"error hangar.reference-patch"}, wantPath: "solution/reference.patch", wantMsg: "1000001 bytes"},
	{name: "verifier timeout too short", toml: strings.Replace(baseTOML, "timeout_sec = 600.0", "timeout_sec = 29.5", 1),
		want: []string{"error verifier.timeout"}, wantPath: "task.toml", wantMsg: "30..3600"},
	{name: "verifier timeout too long", toml: strings.Replace(baseTOML, "timeout_sec = 600.0", "timeout_sec = 3601", 1),
		want: []string{"error verifier.timeout"}, wantPath: "task.toml", wantMsg: "[verifier].timeout_sec"},
	{name: "verifier timeout at the limits", toml: strings.Replace(baseTOML, "timeout_sec = 600.0", "timeout_sec = 3600", 1)},
	{name: "verifier timeout at the lower limit", toml: strings.Replace(baseTOML, "timeout_sec = 600.0", "timeout_sec = 30", 1)},
	{name: "short base_sha", toml: strings.Replace(baseTOML, "0123456789abcdef0123456789abcdef01234567", "0123456", 1),
		want: []string{"error source.base-sha"}, wantPath: "task.toml", wantMsg: "40 lowercase hex"},
	{name: "uppercase base_sha", toml: strings.Replace(baseTOML, "0123456789abcdef0123456789abcdef01234567", "0123456789ABCDEF0123456789ABCDEF01234567", 1),
		want: []string{"error source.base-sha"}, wantPath: "task.toml", wantMsg: "[flightdeck.source].base_sha"},
	{name: "NaN", toml: baseTOML + "[metadata]\nx = nan\n",
		want: []string{"error digest"}, wantMsg: "NaN"},
}

func TestCheckRules(t *testing.T) {
	for _, tt := range checkRulesCases {
		t.Run(tt.name, func(t *testing.T) {
			toml := tt.toml
			if toml == "" {
				toml = baseTOML
			}
			dir := nativeTask(t, toml, tt.files)
			if tt.redigest {
				_, _, err := WriteFilesDigest(dir)
				require.NoError(t, err)
			}
			if tt.symlink != "" {
				require.NoError(t, os.Symlink("../tests", filepath.Join(dir, filepath.FromSlash(tt.symlink))))
			}
			found := Check(dir)
			assert.Equal(t, tt.want, rulesOf(found), "%v", found)
			if len(tt.want) == 0 || len(found) == 0 {
				return
			}
			f := found[0]
			assert.Equal(t, filepath.Join(dir, filepath.FromSlash(tt.wantPath)), f.Path)
			assert.Contains(t, f.Message, tt.wantMsg)
		})
	}
}

func TestCheckReportsEveryFinding(t *testing.T) {
	toml := strings.NewReplacer(
		"timeout_sec = 600.0", "timeout_sec = 5",
		"0123456789abcdef0123456789abcdef01234567", "main",
		"sealed = false", "sealed = true",
	).Replace(baseTOML)
	dir := nativeTask(t, toml, map[string]string{
		"environment/Dockerfile": "",
		"tests/test_x.py":        "changed\n",
	})
	require.NoError(t, os.Symlink("solve.sh", filepath.Join(dir, "solution", "link.sh")))
	found := Check(dir)
	assert.Equal(t, []string{
		"error files-digest",
		"error layout.environment",
		"error source.base-sha",
		"error symlink",
		"error verifier.timeout",
		"warning sealed",
	}, rulesOf(found), "%v", found)

	// A symlink in tests/ keeps the digest from being computed: the symlink
	// is the finding, not a digest error.
	require.NoError(t, os.Rename(filepath.Join(dir, "solution", "link.sh"), filepath.Join(dir, "tests", "link.sh")))
	rules := rulesOf(Check(dir))
	assert.Contains(t, rules, "error symlink")
	assert.NotContains(t, rules, "error files-digest")
	assert.NotContains(t, rules, "error digest")
}

func TestCheckHarborIDFromDirectory(t *testing.T) {
	name := strings.Repeat("harbor-task-", 4)
	dir := filepath.Join(t.TempDir(), name)
	writeTree(t, dir, map[string]string{
		"task.toml":              "version = \"1.0\"\n",
		"instruction.md":         "x\n",
		"tests/test.sh":          "echo\n",
		"environment/Dockerfile": "FROM ubuntu\n",
	})
	found := Check(dir)
	require.Len(t, found, 1)
	assert.Equal(t, SeverityWarning, found[0].Severity)
	assert.Contains(t, found[0].Message, ShortID(name))
}

func TestCheckMissingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nope")
	found := Check(dir)
	require.Len(t, found, 1)
	assert.Equal(t, "task-dir", found[0].Rule)
	assert.Equal(t, dir, found[0].Path)
	assert.Contains(t, found[0].Message, "does not exist")
}

// Check accepts every Harbor fixture task and explains each refusal with
// the rule, the field and the words expected.json names.
func TestCheckHarborFixtures(t *testing.T) {
	root := filepath.Join("..", "fixtures", "harbor")
	dirs, err := os.ReadDir(filepath.Join(root, "tasks"))
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	for _, d := range dirs {
		t.Run("tasks/"+d.Name(), func(t *testing.T) {
			found := Check(filepath.Join(root, "tasks", d.Name()))
			for _, f := range found {
				assert.NotEqual(t, SeverityError, f.Severity, "%s: [%s] %s", f.Path, f.Rule, f.Message)
			}
		})
	}
	refused := []struct {
		name, file, rule, field string
		words                   []string
	}{
		{"allowlist-bad-host", "task.toml", "network.allowlist", "[environment].allowed_hosts", []string{`"files example com"`, "hostname"}},
		{"compose-privileged", "environment/docker-compose.yaml", "compose.privileged", "services.db.privileged", []string{`service "db"`, "privileged"}},
		{"gpus", "task.toml", "gpus", "[environment].gpus", []string{"gpus", "GPU"}},
		{"memory-conflict", "task.toml", "memory", "[environment].memory", []string{"memory_mb"}},
		{"plain-name", "task.toml", "task.name", "[task].name", []string{"org/name"}},
		{"steps", "task.toml", "steps", "[[steps]]", []string{"multi-step"}},
		{"windows-os", "task.toml", "windows", "[environment].os", []string{"windows"}},
		{"windows-test-bat", "tests/test.bat", "windows", "", []string{"Windows"}},
	}
	entries, err := os.ReadDir(filepath.Join(root, "refused"))
	require.NoError(t, err)
	require.Len(t, refused, len(entries), "a row for every refused fixture")
	for _, tc := range refused {
		t.Run("refused/"+tc.name, func(t *testing.T) {
			dir := filepath.Join(root, "refused", tc.name)
			var errs []Finding
			for _, f := range Check(dir) {
				if f.Severity == SeverityError {
					errs = append(errs, f)
				}
			}
			require.Len(t, errs, 1, "exactly one refusal: %v", errs)
			f := errs[0]
			assert.Equal(t, tc.rule, f.Rule)
			assert.Equal(t, filepath.Join(dir, filepath.FromSlash(tc.file)), f.Path)
			if tc.field != "" {
				assert.True(t, strings.HasPrefix(f.Message, tc.field+": "), "the message names the field: %s", f.Message)
			}
			for _, w := range tc.words {
				assert.Contains(t, f.Message, w)
			}
			_, err := Load(dir, LoadOptions{Local: true})
			require.Error(t, err, "a local run refuses it too")
			assert.Contains(t, err.Error(), tc.words[0])
		})
	}
}

// The author's slips Check reports: unknown keys (errors in flightdeck's
// tables, warnings in Harbor's), scripts bash cannot parse, an empty
// instruction.
func TestCheckAuthorSlips(t *testing.T) {
	for _, tt := range []struct {
		name      string
		toml      string            // "" = baseTOML
		files     map[string]string // "" removes
		redigest  bool
		needsBash bool
		want      []string // "severity rule", sorted
		wantPath  string   // the first finding's path, relative to the task
		wantMsg   string   // a substring of the first finding's message
		wantLine  int      // the first finding's Line
	}{
		{name: "misspelt Harbor key", toml: strings.Replace(baseTOML, "timeout_sec = 600.0", "timeot_sec = 600.0", 1),
			want: []string{"warning toml.unknown-key"}, wantPath: "task.toml", wantLine: 11,
			wantMsg: "line 11: [verifier].timeot_sec: unknown key: Harbor and flightdeck ignore it; did you mean timeout_sec?"},
		{name: "misspelt flightdeck key", toml: strings.Replace(baseTOML, "sealed = false", "saeled = false", 1),
			want: []string{"error toml.unknown-key"}, wantPath: "task.toml", wantLine: 19,
			wantMsg: "line 19: [flightdeck].saeled: unknown key: flightdeck reads no such key; did you mean sealed?"},
		{name: "misspelt grader key", toml: baseTOML + "comand = \"bash tests/test.sh\"\n",
			want: []string{"error toml.unknown-key"}, wantPath: "task.toml", wantLine: 28,
			wantMsg: "[flightdeck.grader].comand: unknown key: flightdeck reads no such key; did you mean command?"},
		{name: "unknown table", toml: baseTOML + "\n[bogus_table]\nx = 1\n",
			want: []string{"warning toml.unknown-key"}, wantPath: "task.toml", wantLine: 30,
			wantMsg: "line 30: [bogus_table]: unknown table: Harbor and flightdeck ignore it"},
		{name: "valid Harbor keys flightdeck does not read", toml: strings.Replace(baseTOML, "cpus = 2", "cpus = 2\nskills_dir = \"/skills\"\nstorage_mb = 100", 1)},
		{name: "free-form metadata", toml: baseTOML + "[metadata]\nauthor_name = \"x\"\nwhatever = { deep = 1 }\n"},
		{name: "a key in a table that does not parse: only the type error", toml: strings.Replace(baseTOML, "sealed = false", "sealed = \"no\"\nsaeled = 1", 1),
			want: []string{"error toml.type", "error toml.unknown-key"}, wantPath: "task.toml", wantMsg: "wrong type"},
		{name: "test.sh does not parse", files: map[string]string{"tests/test.sh": "#!/usr/bin/env bash\nif true; then\n\techo 1\n"}, redigest: true,
			needsBash: true, want: []string{"error script.syntax"}, wantPath: "tests/test.sh", wantLine: 4,
			wantMsg: "line 4: syntax error"},
		{name: "solve.sh does not parse", files: map[string]string{"solution/solve.sh": "case x in\n"},
			needsBash: true, want: []string{"error script.syntax"}, wantPath: "solution/solve.sh", wantMsg: "syntax error"},
		{name: "a #!/bin/sh script is parsed", files: map[string]string{"solution/solve.sh": "#!/bin/sh\necho $(\n"},
			needsBash: true, want: []string{"error script.syntax"}, wantPath: "solution/solve.sh", wantMsg: "line"},
		{name: "a python solve.sh is not bash's", files: map[string]string{"solution/solve.sh": "#!/usr/bin/env python3\nif x:\n    pass\n"},
			needsBash: true},
		{name: "scripts that parse", files: map[string]string{"solution/solve.sh": "#!/usr/bin/env bash\nset -euo pipefail\nif true; then echo; fi\n"},
			needsBash: true},
		{name: "empty instruction", files: map[string]string{"instruction.md": " \n\t\n"},
			want: []string{"error instruction.empty"}, wantPath: "instruction.md", wantMsg: "is empty"},
		{name: "one character is an instruction", files: map[string]string{"instruction.md": "x"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.needsBash {
				testenv.Tool(t, "bash")
			}
			toml := tt.toml
			if toml == "" {
				toml = baseTOML
			}
			dir := nativeTask(t, toml, tt.files)
			if tt.redigest {
				_, _, err := WriteFilesDigest(dir)
				require.NoError(t, err)
			}
			found := Check(dir)
			assert.Equal(t, tt.want, rulesOf(found), "%v", found)
			if len(tt.want) == 0 || len(found) == 0 {
				return
			}
			f := found[0]
			assert.Equal(t, filepath.Join(dir, filepath.FromSlash(tt.wantPath)), f.Path)
			assert.Contains(t, f.Message, tt.wantMsg)
			if tt.wantLine != 0 {
				assert.Equal(t, tt.wantLine, f.Line)
			}
		})
	}
}

// A multi-step task's steps have scripts and instructions of their own.
func TestCheckStepScripts(t *testing.T) {
	testenv.Tool(t, "bash")
	dir := filepath.Join(t.TempDir(), "steps")
	writeTree(t, dir, map[string]string{
		"task.toml":                       "schema_version = \"1.4\"\n\n[[steps]]\nname = \"one\"\n\n[[steps]]\nname = \"two\"\n",
		"instruction.md":                  "x\n",
		"environment/Dockerfile":          "FROM ubuntu\n",
		"tests/test.sh":                   "echo 1 > /logs/verifier/reward.txt\n",
		"steps/one/instruction.md":        "\n",
		"steps/one/tests/test.sh":         "while true; do\n",
		"steps/one/workdir/setup.sh":      "echo ok\n",
		"steps/two/instruction.md":        "two\n",
		"steps/two/solution/solve.sh":     "echo ok\n",
		"steps/two/workdir/setup.sh":      "f() {\n",
		"steps/two/workdir/not-a-step.sh": "((\n",
	})
	var got []string
	for _, f := range Check(dir) {
		rel, err := filepath.Rel(dir, f.Path)
		require.NoError(t, err)
		got = append(got, f.Severity+" "+f.Rule+" "+filepath.ToSlash(rel))
	}
	sort.Strings(got)
	assert.Equal(t, []string{
		"error instruction.empty steps/one/instruction.md",
		"error script.syntax steps/one/tests/test.sh",
		"error script.syntax steps/two/workdir/setup.sh",
	}, got)
}

// Without bash on PATH the scripts go unchecked, and nothing is reported.
func TestCheckScriptsWithoutBash(t *testing.T) {
	dir := nativeTask(t, baseTOML, map[string]string{"solution/solve.sh": "if true; then\n"})
	t.Setenv("PATH", t.TempDir())
	assert.Empty(t, Check(dir))
}

func TestBashScript(t *testing.T) {
	for _, tt := range []struct {
		head string
		want bool
	}{
		{"echo hi\n", true},
		{"", true},
		{"#!/bin/bash\n", true},
		{"#!/bin/sh -e\n", true},
		{"#! /usr/bin/env bash\n", true},
		{"#!/usr/bin/env -S bash -eu\n", true},
		{"#!/usr/bin/env python3\n", false},
		{"#!/usr/bin/python3\n", false},
		{"#!/usr/bin/env node\r\n", false},
		{"#!/bin/zsh\n", false},
		{"#!\n", true},
	} {
		p := filepath.Join(t.TempDir(), "s.sh")
		require.NoError(t, os.WriteFile(p, []byte(tt.head+"echo\n"), 0o644))
		assert.Equal(t, tt.want, bashScript(p), "%q", tt.head)
	}
}

// The placeholders Check looks for are the template's, word for word.
func TestTemplatePlaceholdersAreTheTemplates(t *testing.T) {
	for _, p := range templatePlaceholders {
		b, err := templateFS.ReadFile(templateRoot + "/" + p.file)
		require.NoError(t, err, p.file)
		for _, m := range p.markers {
			assert.Contains(t, string(b), m, p.file)
		}
	}
	b, err := templateFS.ReadFile(templateRoot + "/task.toml.tmpl")
	require.NoError(t, err)
	assert.Contains(t, string(b), "description = "+QuoteTOMLString(templateDescription))
}

// A task just made from the template passes; once its author has replaced
// some of the template's placeholders, each one left is a warning.
func TestCheckTemplatePlaceholders(t *testing.T) {
	for _, tt := range []struct {
		name  string
		files map[string]string // "" removes
		toml  func(string) string
		want  []string // "line path" of each warning, sorted
	}{
		{name: "untouched: the to-do list",
			want: []string{"1 instruction.md", "18 tests/test_hidden.py", "6 task.toml", "8 solution/solve.sh"}},
		{name: "only the hidden tests changed, still the placeholder",
			files: map[string]string{"tests/test_hidden.py": "# more\n" + mustTemplate(t, "tests/test_hidden.py")},
			want:  []string{"1 instruction.md", "19 tests/test_hidden.py", "6 task.toml", "8 solution/solve.sh"}},
		{name: "the hidden tests written",
			files: map[string]string{"tests/test_hidden.py": "import app\n"},
			want:  []string{"1 instruction.md", "6 task.toml", "8 solution/solve.sh"}},
		{name: "the placeholder test replaced by others",
			files: map[string]string{"tests/test_hidden.py": "", "tests/test_app.py": "import app\n"},
			want:  []string{"1 instruction.md", "6 task.toml", "8 solution/solve.sh"}},
		{name: "the title written, the rest of the instruction left",
			files: map[string]string{"instruction.md": "# Fix it\n\n" + strings.SplitN(mustTemplate(t, "instruction.md"), "\n\n", 2)[1],
				"tests/test_hidden.py": "import app\n"},
			want: []string{"3 instruction.md", "6 task.toml", "8 solution/solve.sh"}},
		{name: "the description written",
			toml: func(s string) string { return strings.Replace(s, templateDescription, "Fix the retry loop", 1) },
			want: []string{"1 instruction.md", "18 tests/test_hidden.py", "8 solution/solve.sh"}},
		{name: "everything written",
			files: map[string]string{"instruction.md": "Fix it.\n", "solution/solve.sh": "echo\n", "tests/test_hidden.py": "import app\n"},
			toml:  func(s string) string { return strings.Replace(s, templateDescription, "Fix it", 1) }},
		{name: "a missing instruction is no placeholder",
			files: map[string]string{"instruction.md": ""},
			want:  []string{"18 tests/test_hidden.py", "6 task.toml", "8 solution/solve.sh"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "x")
			require.NoError(t, New(dir, ""))
			writeTree(t, dir, nil)
			for name, content := range tt.files {
				p := filepath.Join(dir, filepath.FromSlash(name))
				if content == "" {
					require.NoError(t, os.Remove(p))
					continue
				}
				require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
			}
			if tt.toml != nil {
				p := filepath.Join(dir, TaskFile)
				b, err := os.ReadFile(p)
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(p, []byte(tt.toml(string(b))), 0o644))
			}
			_, _, err := WriteFilesDigest(dir)
			require.NoError(t, err)
			var got []string
			for _, f := range Check(dir) {
				if f.Rule != rulePlaceholder {
					continue
				}
				assert.Equal(t, SeverityWarning, f.Severity)
				assert.Contains(t, f.Message, "still the template's placeholder")
				rel, err := filepath.Rel(dir, f.Path)
				require.NoError(t, err)
				got = append(got, fmt.Sprintf("%d %s", f.Line, filepath.ToSlash(rel)))
			}
			sort.Strings(got)
			assert.Equal(t, tt.want, got)
		})
	}
}

func mustTemplate(t *testing.T, name string) string {
	t.Helper()
	b, err := templateFS.ReadFile(templateRoot + "/" + name)
	require.NoError(t, err)
	return string(b)
}
