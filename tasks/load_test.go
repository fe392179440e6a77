package tasks

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const baseTOML = `schema_version = "1.4"

[task]
name = "example/sample-task"
description = "a sample"

[agent]
timeout_sec = 1800.0

[verifier]
timeout_sec = 600.0

[environment]
cpus = 2
memory_mb = 2048

[flightdeck]
tags = ["smoke"]
sealed = false
environment = "bare"

[flightdeck.source]
repo = "https://github.com/example/repo.git"
base_sha = "0123456789abcdef0123456789abcdef01234567"

[flightdeck.grader]
command = "bash tests/test.sh"
`

// nativeTask writes a valid flightdeck task named "sample" (its files_digest
// recorded) with toml as task.toml, then applies files (an empty content
// removes the file). It returns the task directory.
func nativeTask(t *testing.T, toml string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "sample")
	writeTree(t, dir, map[string]string{
		"task.toml":              toml,
		"instruction.md":         "Do the thing.\n",
		"environment/Dockerfile": "FROM python:3.12-slim\nWORKDIR /app\n",
		"tests/test.sh":          "#!/usr/bin/env bash\necho ok\n",
		"tests/test_x.py":        "import unittest\n",
		"solution/solve.sh":      "#!/usr/bin/env bash\n",
	})
	if strings.Contains(toml, "[flightdeck.grader]") {
		_, _, err := WriteFilesDigest(dir)
		require.NoError(t, err)
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if content == "" {
			require.NoError(t, os.RemoveAll(p))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return dir
}

func TestLoadNativeTask(t *testing.T) {
	dir := nativeTask(t, baseTOML, nil)
	task, err := Load(dir, LoadOptions{Local: true})
	require.NoError(t, err)
	assert.Equal(t, "sample-task", task.ID, "the last part of [task].name")
	assert.True(t, filepath.IsAbs(task.Dir))
	assert.Equal(t, "bash tests/test.sh", task.GraderCommand())
	assert.Equal(t, []string{"smoke"}, task.Config.Flightdeck.Tags)
	assert.Equal(t, "1.4", task.Doc["schema_version"])
	td, err := TaskDigest(dir)
	require.NoError(t, err)
	fd, err := FilesDigest(dir)
	require.NoError(t, err)
	assert.Equal(t, td, task.Digest)
	assert.Equal(t, fd, task.FilesDigest)
	assert.Equal(t, fd, recordedFilesDigest(task.Doc), "Doc is the whole document, files_digest included")

	instr, err := task.Instruction()
	require.NoError(t, err)
	assert.Equal(t, "Do the thing.\n", instr)
	mem, err := task.MemoryBytes()
	require.NoError(t, err)
	assert.Equal(t, int64(2048)<<20, mem)
	assert.Equal(t, int64(2e9), task.NanoCPUs())
	assert.True(t, task.HasSolution())
	assert.Equal(t, 30*time.Minute, mustDuration(task.AgentTimeout()))
}

func mustDuration(d time.Duration, ok bool) time.Duration {
	if !ok {
		return -1
	}
	return d
}

// A Harbor task without [task] and without [flightdeck] loads: its id is the
// directory's name and no files_digest is needed.
func TestLoadHarborTask(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hello-world")
	writeTree(t, dir, map[string]string{
		"task.toml": `version = "1.0"
unknown_top = 1

[metadata]
author_name = "x"

[verifier]
timeout_sec = 120.0
future_key = { nested = true }

[environment]
memory = "512M"
cpus = 1
`,
		"instruction.md":         "hi\n",
		"tests/test.sh":          "echo 1 > /logs/verifier/reward.txt\n",
		"environment/Dockerfile": "FROM ubuntu:24.04\n",
	})
	task, err := Load(dir, LoadOptions{Local: true})
	require.NoError(t, err)
	assert.Equal(t, "hello-world", task.ID)
	assert.False(t, task.Native())
	assert.False(t, task.HasSolution())
	mem, err := task.MemoryBytes()
	require.NoError(t, err)
	assert.Equal(t, int64(512)<<20, mem)
	assert.Equal(t, int64(1e9), task.NanoCPUs())
	assert.Equal(t, 120*time.Second, task.VerifierTimeout())
	assert.NotEmpty(t, task.Digest)
	assert.Contains(t, task.Doc, "unknown_top", "unknown keys are kept in the document")
}

var loadRefusalsCases = []struct {
	name      string
	toml      string            // task.toml; "" = baseTOML
	files     map[string]string // applied after files_digest is recorded; "" removes
	symlink   string            // a symlink to create (relative path)
	opts      LoadOptions
	wantFile  string // the file the error names, relative to the task
	wantField string
	wantRule  []string // substrings of the rule
}{
	{name: "multi-step", toml: baseTOML + "\n[[steps]]\nname = \"one\"\n",
		wantFile: "task.toml", wantField: "[[steps]]", wantRule: []string{"multi-step tasks are graded Harbor's way"}},
	{name: "windows", files: map[string]string{"tests/test.sh": "", "tests/test.bat": "echo"},
		wantFile: "tests/test.bat", wantRule: []string{"Windows", "not supported"}},
	{name: "sealed on a local run", toml: strings.Replace(baseTOML, "sealed = false", "sealed = true", 1), opts: LoadOptions{Local: true},
		wantFile: "task.toml", wantField: "[flightdeck].sealed", wantRule: []string{"sealed"}},
	{name: "symlink in tests", symlink: "tests/link",
		wantFile: "tests/link", wantRule: []string{"symlink"}},
	{name: "symlink in solution", symlink: "solution/link",
		wantFile: "solution/link", wantRule: []string{"symlink"}},
	{name: "symlinked directory", symlink: "environment/dir",
		wantFile: "environment/dir", wantRule: []string{"symlink"}},
	{name: "files_digest does not match", files: map[string]string{"tests/test_x.py": "import unittest  # changed\n"},
		wantFile: "task.toml", wantField: "[flightdeck.grader].files_digest", wantRule: []string{"does not match tests/", "recorded sha256:", "computed sha256:"}},
	{name: "files_digest missing", toml: baseTOML, files: map[string]string{"task.toml": baseTOML},
		wantFile: "task.toml", wantField: "[flightdeck.grader].files_digest", wantRule: []string{"missing", "digest --write"}},
	{name: "memory and memory_mb disagree", toml: strings.Replace(baseTOML, "memory_mb = 2048", "memory_mb = 2048\nmemory = \"1G\"", 1),
		wantFile: "task.toml", wantField: "[environment].memory", wantRule: []string{"disagrees", "1024 MB", "2048"}},
	{name: "memory unreadable", toml: strings.Replace(baseTOML, "memory_mb = 2048", "memory = \"lots\"", 1),
		wantFile: "task.toml", wantField: "[environment].memory", wantRule: []string{"\"2G\""}},
	{name: "task name not org/name", toml: strings.Replace(baseTOML, "example/sample-task", "sample-task", 1),
		wantFile: "task.toml", wantField: "[task].name", wantRule: []string{"org/name"}},
	{name: "task name with two slashes", toml: strings.Replace(baseTOML, "example/sample-task", "a/b/c", 1),
		wantFile: "task.toml", wantField: "[task].name", wantRule: []string{"org/name"}},
	{name: "no task.toml", files: map[string]string{"task.toml": ""},
		wantFile: "task.toml", wantRule: []string{"missing"}},
	{name: "no instruction.md", files: map[string]string{"instruction.md": ""},
		wantFile: "instruction.md", wantRule: []string{"missing"}},
	{name: "TOML syntax", files: map[string]string{"task.toml": "[task\nname = 1\n"},
		wantFile: "task.toml", wantRule: []string{"not valid TOML", "line 1"}},
	{name: "wrong type", toml: strings.Replace(baseTOML, "cpus = 2", "cpus = \"two\"", 1),
		wantFile: "task.toml", wantField: "[environment].cpus", wantRule: []string{"a string (in quotes) where a number is expected", "line 14"}},
	{name: "NaN in task.toml", toml: baseTOML + "\n[metadata]\nx = nan\n",
		wantRule: []string{"task_digest", "NaN"}},
	{name: "gpus on a local run", toml: strings.Replace(baseTOML, "cpus = 2", "cpus = 2\ngpus = 1", 1), opts: LoadOptions{Local: true},
		wantFile: "task.toml", wantField: "[environment].gpus", wantRule: []string{"GPUs are not supported", "found 1"}},
	{name: "tpu on a local run", toml: strings.Replace(baseTOML, "cpus = 2", "cpus = 2\ntpu = \"v5e\"", 1), opts: LoadOptions{Local: true},
		wantFile: "task.toml", wantField: "[environment].tpu", wantRule: []string{"TPUs are not supported"}},
	{name: "windows os on a local run", toml: strings.Replace(baseTOML, "cpus = 2", "cpus = 2\nos = \"windows\"", 1), opts: LoadOptions{Local: true},
		wantFile: "task.toml", wantField: "[environment].os", wantRule: []string{"Windows tasks are not supported", `"windows"`}},
	{name: "allowlist without hosts", toml: strings.Replace(baseTOML, "cpus = 2", "cpus = 2\nnetwork_mode = \"allowlist\"", 1), opts: LoadOptions{Local: true},
		wantFile: "task.toml", wantField: "[environment].network_mode", wantRule: []string{"an allowlist needs allowed_hosts"}},
	{name: "allowed_hosts with a bad entry", toml: strings.Replace(baseTOML, "cpus = 2", "cpus = 2\nallowed_hosts = [\"pkgs.example.com\", \"a*b.org\"]", 1), opts: LoadOptions{Local: true},
		wantFile: "task.toml", wantField: "[environment].allowed_hosts", wantRule: []string{`"a*b.org"`}},
	{name: "agent allowed_hosts with a bad entry", toml: strings.Replace(baseTOML, "timeout_sec = 1800.0", "timeout_sec = 1800.0\nallowed_hosts = [\"x .org\"]", 1), opts: LoadOptions{Local: true},
		wantFile: "task.toml", wantField: "[agent].allowed_hosts", wantRule: []string{`"x .org"`}},
	{name: "unknown network mode on a local run", toml: strings.Replace(baseTOML, "timeout_sec = 600.0", "timeout_sec = 600.0\nnetwork_mode = \"host\"", 1), opts: LoadOptions{Local: true},
		wantFile: "task.toml", wantField: "[verifier].network_mode", wantRule: []string{"unknown network mode \"host\""}},
	{name: "separate verifier on a local run", toml: strings.Replace(baseTOML, "timeout_sec = 600.0", "timeout_sec = 600.0\nenvironment_mode = \"separate\"", 1), opts: LoadOptions{Local: true},
		wantFile: "task.toml", wantField: "[verifier].environment_mode", wantRule: []string{"a separate verifier needs an image", "tests/Dockerfile"}},
	{name: "shared mode with a verifier environment", toml: strings.Replace(baseTOML, "timeout_sec = 600.0", "timeout_sec = 600.0\nenvironment_mode = \"shared\"", 1) + "\n[verifier.environment]\ndocker_image = \"x:1\"\n", opts: LoadOptions{Local: true},
		wantFile: "task.toml", wantField: "[verifier.environment]", wantRule: []string{"environment_mode = \"shared\""}},
	{name: "verifier environment table without an image", toml: baseTOML + "\n[verifier.environment]\ncpus = 1\n", opts: LoadOptions{Local: true},
		wantFile: "task.toml", wantField: "[verifier].environment_mode", wantRule: []string{"a separate verifier needs an image"}},
	{name: "collect without a command", toml: baseTOML + "\n[[verifier.collect]]\ntimeout_sec = 5.0\n", opts: LoadOptions{Local: true},
		wantFile: "task.toml", wantField: "[[verifier.collect]] #1.command", wantRule: []string{"missing"}},
	{name: "collect in an unknown service", toml: baseTOML + "\n[[verifier.collect]]\ncommand = \"true\"\nservice = \"db\"\n", opts: LoadOptions{Local: true},
		wantFile: "task.toml", wantField: "[[verifier.collect]] #1.service", wantRule: []string{"single-container task"}},
	{name: "compose host path on a local run", files: map[string]string{"environment/docker-compose.yaml": "services: {db: {image: x:1, volumes: [\"/etc:/host-etc\"]}}\n"}, opts: LoadOptions{Local: true},
		wantFile: "environment/docker-compose.yaml", wantField: "services.db.volumes", wantRule: []string{"binds /etc, outside the task directory"}},
	{name: "compose network_mode host on a local run", files: map[string]string{"environment/docker-compose.yaml": "services: {main: {network_mode: host}}\n"}, opts: LoadOptions{Local: true},
		wantFile: "environment/docker-compose.yaml", wantField: "services.main.network_mode", wantRule: []string{`"host"`, "trial's own network"}},
	{name: "compose devices on a local run", files: map[string]string{"environment/docker-compose.yaml": "services: {db: {image: x:1, devices: [\"/dev/kvm:/dev/kvm\"]}}\n"}, opts: LoadOptions{Local: true},
		wantFile: "environment/docker-compose.yaml", wantField: "services.db.devices", wantRule: []string{"devices"}},
	{name: "compose that does not parse", files: map[string]string{"environment/docker-compose.yaml": "services: [\n"}, opts: LoadOptions{Local: true},
		wantFile: "environment/docker-compose.yaml", wantRule: []string{"docker-compose.yaml"}},
	{name: "separate verifier in a native task", toml: baseTOML + "\n[verifier.environment]\ndocker_image = \"x:1\"\n", opts: LoadOptions{Local: true},
		wantFile: "task.toml", wantField: "[verifier].environment_mode", wantRule: []string{"a separate verifier runs only in Harbor's container model"}},
	{name: "compose dependency cycle", files: map[string]string{"environment/docker-compose.yaml": "services: {a: {image: x:1, depends_on: [b]}, b: {image: x:1, depends_on: [a]}}\n"}, opts: LoadOptions{Local: true},
		wantFile: "environment/docker-compose.yaml", wantRule: []string{"cycle"}},
}

func TestLoadRefusals(t *testing.T) {
	for _, tt := range loadRefusalsCases {
		t.Run(tt.name, func(t *testing.T) {
			toml := tt.toml
			if toml == "" {
				toml = baseTOML
			}
			dir := nativeTask(t, toml, tt.files)
			if tt.symlink != "" {
				p := filepath.Join(dir, filepath.FromSlash(tt.symlink))
				require.NoError(t, os.Symlink("..", p))
			}
			_, err := Load(dir, tt.opts)
			require.Error(t, err)
			var le *LoadError
			require.True(t, errors.As(err, &le), "a *LoadError: %v", err)
			assert.Equal(t, filepath.Join(dir, filepath.FromSlash(tt.wantFile)), le.File)
			assert.Equal(t, tt.wantField, le.Field)
			for _, s := range tt.wantRule {
				assert.Contains(t, le.Rule, s)
			}
			assert.Contains(t, err.Error(), le.File, "the message names the file")
			if tt.wantField != "" {
				assert.Contains(t, err.Error(), tt.wantField, "the message names the field")
			}
		})
	}
}

func TestLoadDigestMismatchShowsBoth(t *testing.T) {
	dir := nativeTask(t, baseTOML, nil)
	recorded, err := FilesDigest(dir)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tests", "test.sh"), []byte("#!/usr/bin/env bash\necho 0k\n"), 0o644))
	computed, err := FilesDigest(dir)
	require.NoError(t, err)
	_, err = Load(dir, LoadOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), recorded)
	assert.Contains(t, err.Error(), computed)
}

func TestLoadSealed(t *testing.T) {
	dir := nativeTask(t, strings.Replace(baseTOML, "sealed = false", "sealed = true", 1), nil)
	_, err := Load(dir, LoadOptions{})
	assert.NoError(t, err, "only a local run refuses a sealed task")
	_, err = Load(dir, LoadOptions{Local: true})
	assert.Error(t, err)
}

// A refusal carries the id the task would have had, so that a run can
// record the refused task under it.
func TestLoadErrorTaskID(t *testing.T) {
	tests := []struct {
		name, toml, want string
	}{
		{"from [task].name", baseTOML + "\n[[steps]]\nname = \"one\"\n", "sample-task"},
		{"[task] without a name", strings.Replace(baseTOML, "[task]\nname = \"example/sample-task\"\n", "[task]\n", 1) + "\n[[steps]]\nname = \"one\"\n", ""},
		{"an invalid name", strings.Replace(baseTOML, "example/sample-task", "no-slash", 1), ""},
		{"task.toml does not parse", "[task\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := nativeTask(t, tt.toml, nil)
			_, err := Load(dir, LoadOptions{Local: true})
			var le *LoadError
			require.ErrorAs(t, err, &le)
			want := tt.want
			if want == "" {
				want = filepath.Base(dir)
			}
			assert.Equal(t, want, le.TaskID, "refused for: %v", err)
		})
	}
}

func TestLoadNotADirectory(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope"), LoadOptions{})
	var le *LoadError
	require.True(t, errors.As(err, &le))
	assert.Contains(t, le.Rule, "does not exist")
}

func TestLoadThroughSymlinkedDir(t *testing.T) {
	dir := nativeTask(t, baseTOML, nil)
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(dir, link))
	_, err := Load(link, LoadOptions{})
	require.NoError(t, err, "the directory given may be a symlink; nothing in it may")
	require.NoError(t, os.Symlink("test.sh", filepath.Join(dir, "tests", "again.sh")))
	_, err = Load(link, LoadOptions{})
	assert.ErrorContains(t, err, "symlink")
}

func TestMemoryBytes(t *testing.T) {
	tests := []struct {
		memoryMB int64
		memory   string
		want     int64
		wantErr  bool
	}{
		{0, "", 0, false},
		{1024, "", 1 << 30, false},
		{0, "2G", 2 << 30, false},
		{0, "512M", 512 << 20, false},
		{0, "512m", 512 << 20, false},
		{0, "1.5G", 1536 << 20, false},
		{0, "2048K", 2 << 20, false},
		{0, " 1g ", 1 << 30, false},
		{0, "2GB", 0, true},
		{0, "G", 0, true},
		{0, "-1G", 0, true},
		{0, "12", 0, true},
		{512, "1G", 512 << 20, false}, // memory_mb wins (Load refuses the disagreement)
	}
	for _, tt := range tests {
		task := &Task{Dir: "/t", Config: Config{Environment: EnvConfig{MemoryMB: tt.memoryMB, Memory: tt.memory}}}
		got, err := task.MemoryBytes()
		if tt.wantErr {
			assert.Error(t, err, "%q", tt.memory)
			continue
		}
		require.NoError(t, err, "%q", tt.memory)
		assert.Equal(t, tt.want, got, "memory_mb=%d memory=%q", tt.memoryMB, tt.memory)
	}
}

func TestNanoCPUs(t *testing.T) {
	for _, tt := range []struct {
		cpus float64
		want int64
	}{{0, 0}, {1, 1e9}, {0.5, 5e8}, {2.25, 2250000000}, {-1, 0}} {
		task := &Task{Config: Config{Environment: EnvConfig{CPUs: tt.cpus}}}
		assert.Equal(t, tt.want, task.NanoCPUs(), "cpus=%v", tt.cpus)
	}
}

func TestHasSolution(t *testing.T) {
	for _, tt := range []struct {
		file string
		want bool
	}{{"solution/solve.sh", true}, {"solution/deterministic.json", true}, {"solution/notes.md", false}} {
		dir := t.TempDir()
		writeTree(t, dir, map[string]string{tt.file: "x"})
		assert.Equal(t, tt.want, (&Task{Dir: dir}).HasSolution(), tt.file)
	}
	// A multi-step task's oracle may live only in its steps.
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"steps/one/solution/solve.sh": "x"})
	steps := &Task{Dir: dir, Config: Config{Steps: []StepConfig{{Name: "one"}}}}
	assert.True(t, steps.HasSolution())
	steps.Config.Steps[0].Name = "two"
	assert.False(t, steps.HasSolution())
}

func TestLoadErrorFormat(t *testing.T) {
	assert.Equal(t, "a/task.toml: [x].y: must be z", (&LoadError{File: "a/task.toml", Field: "[x].y", Rule: "must be z"}).Error())
	assert.Equal(t, "a/link: is a symlink", (&LoadError{File: "a/link", Rule: "is a symlink"}).Error())
}

// What the local runner cannot run is refused for a local run only: a task
// loaded to be exported may run elsewhere.
func TestLoadUnsupportedOnlyLocally(t *testing.T) {
	toml := strings.Replace(baseTOML, "cpus = 2", "cpus = 2\ngpus = 2\nnetwork_mode = \"allowlist\"", 1)
	dir := nativeTask(t, toml, map[string]string{"environment/docker-compose.yaml": "services: {db: {image: x:1, privileged: true}}\n"})
	_, err := Load(dir, LoadOptions{})
	assert.NoError(t, err)
	_, err = Load(dir, LoadOptions{Local: true})
	assert.Error(t, err)
}

// A native task may have services and an allowlist: the native model runs
// them too.
func TestLoadNativeComposeAndAllowlist(t *testing.T) {
	toml := strings.Replace(baseTOML, "cpus = 2", "cpus = 2\nallowed_hosts = [\"pkgs.example.com\"]", 1)
	dir := nativeTask(t, toml, map[string]string{"environment/docker-compose.yaml": "services: {db: {image: x:1}}\n"})
	task, err := Load(dir, LoadOptions{Local: true})
	require.NoError(t, err)
	assert.NotEmpty(t, task.ComposePath())
	assert.NotEmpty(t, task.Config.Flightdeck.Grader.Command)
}

// Valid Harbor settings load for a local run.
func TestLoadNetworkAccepted(t *testing.T) {
	tests := []struct{ name, env, agent, verifier string }{
		{name: "public", env: `network_mode = "public"`},
		{name: "no-network", env: `network_mode = "no-network"`},
		{name: "allow_internet false", env: "allow_internet = false"},
		{name: "allow_internet false over allowed_hosts", env: "allow_internet = false\nallowed_hosts = [\"x.org\"]"},
		{name: "allowlist baseline overridden by both phases", env: `network_mode = "allowlist"`,
			agent: `network_mode = "no-network"`, verifier: `network_mode = "public"`},
		{name: "linux, no accelerators, shared verifier", env: "os = \"linux\"\ngpus = 0\ntpu = false",
			verifier: `environment_mode = "shared"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			toml := strings.Replace(baseTOML, "cpus = 2", "cpus = 2\n"+tc.env, 1)
			toml = strings.Replace(toml, "timeout_sec = 1800.0", "timeout_sec = 1800.0\n"+tc.agent, 1)
			toml = strings.Replace(toml, "timeout_sec = 600.0", "timeout_sec = 600.0\n"+tc.verifier, 1)
			dir := nativeTask(t, toml, nil)
			_, err := Load(dir, LoadOptions{Local: true})
			assert.NoError(t, err)
			assert.Empty(t, Check(dir))
		})
	}
}

func TestHealthcheckDefaults(t *testing.T) {
	var h Healthcheck
	assert.Equal(t, 5*time.Second, h.Interval())
	assert.Equal(t, 30*time.Second, h.Timeout())
	assert.Equal(t, time.Duration(0), h.StartPeriod())
	assert.Equal(t, 5*time.Second, h.StartInterval())
	assert.Equal(t, 3, h.RetryLimit())
	f := func(v float64) *float64 { return &v }
	zero := 0
	h = Healthcheck{IntervalSec: f(1), TimeoutSec: f(2.5), StartPeriodSec: f(10), StartIntervalSec: f(0.5), Retries: &zero}
	assert.Equal(t, time.Second, h.Interval())
	assert.Equal(t, 2500*time.Millisecond, h.Timeout())
	assert.Equal(t, 10*time.Second, h.StartPeriod())
	assert.Equal(t, 500*time.Millisecond, h.StartInterval())
	assert.Equal(t, 1, h.RetryLimit(), "at least one failure fails")
}

// A local run refuses a task with nothing in tests/ to grade it.
func TestLoadLocalRefusesEmptyTests(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "task.toml"), []byte("version = \"1.0\"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "instruction.md"), []byte("do it\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "environment"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "environment", "Dockerfile"), []byte("FROM scratch\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "tests", "empty"), 0o755))

	_, err := Load(dir, LoadOptions{})
	assert.NoError(t, err, "loading to check or export does not refuse it")
	_, err = Load(dir, LoadOptions{Local: true})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "tests")
	assert.Contains(t, err.Error(), "empty")
}

// Only environment/docker-compose.yaml makes a multi-container task, as in
// Harbor: an application's own docker-compose.yml beside the Dockerfile is
// workspace content. A local run accepts it; task check warns and does not
// refuse.
func TestLoadComposeYMLIsWorkspaceContent(t *testing.T) {
	dir := nativeTask(t, baseTOML, map[string]string{"environment/docker-compose.yml": "services: {app: {build: .}}\n"})
	_, err := Load(dir, LoadOptions{Local: true})
	require.NoError(t, err)
	var got []Finding
	for _, f := range Check(dir) {
		if strings.Contains(f.Path, "docker-compose") {
			got = append(got, f)
		}
	}
	require.Len(t, got, 1)
	assert.Equal(t, SeverityWarning, got[0].Severity)
	assert.Equal(t, filepath.Join(dir, "environment", "docker-compose.yml"), got[0].Path)
	assert.Contains(t, got[0].Message, "single-container task")
}
