package tasks

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every key Config reads, flightdeck's and Harbor's, is in the schema: a
// key added to config.go never turns up as unknown.
func TestSchemaCoversConfig(t *testing.T) {
	schema := taskSchema()
	paths := structKeys(reflect.TypeFor[Config]())
	require.NotEmpty(t, paths)
	for _, p := range paths {
		parts := strings.Split(strings.TrimSuffix(p, ".*"), ".")
		n, _ := schema.lookup(parts)
		assert.Equal(t, len(parts), n, "%s is read by Config but not in the schema", p)
	}
	assert.Contains(t, paths, "flightdeck.grader.command")
	assert.Contains(t, paths, "flightdeck.agent.answers.reply")
	assert.Contains(t, paths, "metadata.*")
}

// harborEverything uses every kind of key Harbor's task.toml has, in every
// form TOML allows: none of it is unknown.
const harborEverything = `version = "1.0"
schema_version = "1.4"
source = "terminal-bench"
multi_step_reward_strategy = "final"
multi_step_reward_mode = "mean"
artifacts = ["/app/out.txt", { source = "/app/logs", destination = "logs", exclude = ["*.tmp"], service = "main" }]

[task]
name = "org/everything"
version = "1.0.0"
description = "all of it"
keywords = ["a"]
authors = [{ name = "A", email = "a@example.com" }]

[metadata]
difficulty = "hard"
anything = { goes = { here = 1 } }

[agent]
timeout_sec = 60
user = "agent"
network_mode = "allowlist"
allowed_hosts = ["example.com"]

[verifier]
timeout_sec = 60
user = "root"
network_mode = "public"
allowed_hosts = []
environment_mode = "separate"
env = { TOKEN = "${TOKEN}" }

[verifier.environment]
docker_image = "python:3.12"
cpus = 1

[verifier.continuous]
enabled = false
watch_dir = "/app/q"

[[verifier.collect]]
command = "pg_dump > /tmp/db.sql"
service = "db"
timeout_sec = 30
user = "postgres"

[solution.env]
ANY_NAME = "x"

[environment]
build_timeout_sec = 600
docker_image = "ubuntu:24.04"
os = "linux"
workdir = "/app"
cpus = 2
memory_mb = 2048
storage_mb = 10240
memory = "2G"
storage = "10G"
gpus = 0
gpu_types = ["H100"]
tpu = { type = "v6e", topology = "2x4" }
allow_internet = true
network_mode = "public"
allowed_hosts = ["pypi.org"]
skills_dir = "/skills"

[environment.env]
WHATEVER = "x"

[environment.healthcheck]
command = "true"
interval_sec = 1
timeout_sec = 2
start_period_sec = 3
start_interval_sec = 4
retries = 5

[[environment.mcp_servers]]
name = "tools"
transport = "stdio"
command = "tools"
args = ["--serve"]

[[steps]]
name = "one"
min_reward = { reward = 0.5, style = 1 }
artifacts = ["/app/one.txt"]
agent = { timeout_sec = 10, user = "a" }

[steps.verifier]
timeout_sec = 10
env = { X = "1" }

[[steps.verifier.collect]]
command = "true"

[steps.healthcheck]
command = "true"

[flightdeck]
tags = ["x"]
sealed = false
environment = "bare"
mined_after = "2025-01-01"
mined_from = "x"
max_turns = 3

[flightdeck.source]
repo = "r"
base_sha = "b"
base_branch = "main"
issue = "1"
verify = "make test"

[flightdeck.grader]
command = "bash tests/test.sh"
files_digest = ""

[[flightdeck.agent.answers]]
match = "a"
reply = "b"
`

// keyString writes an unknownKey as the tests do: "line path", the path in
// brackets for a table, then " ~ suggestion" when there is one.
func keyString(u unknownKey) string {
	s := strings.Join(u.path, ".")
	if u.table {
		s = "[" + s + "]"
	}
	if u.suggest != "" {
		s += " ~ " + u.suggest
	}
	return fmt.Sprintf("%02d %s", u.line, s)
}

func TestUnknownKeys(t *testing.T) {
	for _, tt := range []struct {
		name string
		src  string
		want []string // keyString of each, in order
	}{
		{"every Harbor and flightdeck key", harborEverything, nil},
		{"the template", string(templateTOML(t)), nil},
		{"a misspelt Harbor key", "[verifier]\ntimeot_sec = 1\n", []string{"02 verifier.timeot_sec ~ timeout_sec"}},
		{"a misspelt flightdeck key", "[flightdeck]\ntags = []\nsaeled = true\n", []string{"03 flightdeck.saeled ~ sealed"}},
		{"a dotted key", "verifier.timeot_sec = 1\n", []string{"01 verifier.timeot_sec ~ timeout_sec"}},
		{"an unknown table, once", "[bogus_table]\na = 1\nb = 2\n\n[bogus_table.sub]\nc = 3\n", []string{"01 [bogus_table]"}},
		{"an unknown table below a known one", "[flightdeck.gradr]\ncommand = \"x\"\n", []string{"01 [flightdeck.gradr] ~ grader"}},
		{"an unknown dotted table, once", "x.a = 1\nx.b = 2\n", []string{"01 x"}},
		{"inside an inline table", "[flightdeck]\ngrader = { comand = \"x\", files_digest = \"\" }\n", []string{"02 flightdeck.grader.comand ~ command"}},
		{"inside an array of inline tables", "[environment]\nmcp_servers = [\n  { name = \"a\", url = \"u\" },\n  { name = \"b\", urll = \"u\" },\n]\n",
			[]string{"02 environment.mcp_servers.urll ~ url"}},
		{"in an array of tables", "[[steps]]\nname = \"a\"\n[steps.verifier]\ntimeout = 3\n", []string{"04 steps.verifier.timeout ~ timeout_sec"}},
		{"in a step's verifier environment", "[[steps]]\nname = \"a\"\n[steps.verifier.environment]\ncpu = 3\n", []string{"04 steps.verifier.environment.cpu ~ cpus"}},
		{"in a collect hook", "[[verifier.collect]]\ncommand = \"x\"\nservise = \"db\"\n", []string{"03 verifier.collect.servise ~ service"}},
		{"in an answer", "[[flightdeck.agent.answers]]\nmatch = \"x\"\nrepy = \"y\"\n", []string{"03 flightdeck.agent.answers.repy ~ reply"}},
		{"a table of the older format", "[grader]\ncommand = \"x\"\n", []string{"01 [grader] ~ [flightdeck.grader]"}},
		{"a flightdeck key at the top", "tags = [\"x\"]\n", []string{"01 tags ~ [flightdeck].tags"}},
		{"free-form tables", "[metadata.deep.er]\nx = 1\n[verifier.env]\nY = \"1\"\n[steps.min_reward]\nk = 1\n", nil},
		{"a value below a leaf", "[environment]\ncpus = 1\n[source]\nx = 1\n", nil},
		{"a quoted key", "[verifier]\n\"time out\" = 1\n", []string{"02 verifier.time out"}},
		{"CRLF lines", "[agent]\r\ntimeout_sec = 1\r\n\r\n[verifier]\r\ntimeot_sec = 1\r\n", []string{"05 verifier.timeot_sec ~ timeout_sec"}},
		{"a syntax error: reported elsewhere", "[verifier]\ntimeot_sec = \n", nil},
		{"empty", "", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, u := range unknownKeys([]byte(tt.src)) {
				got = append(got, keyString(u))
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// templateTOML is the template's task.toml with a name filled in.
func templateTOML(t *testing.T) []byte {
	t.Helper()
	b, err := templateFS.ReadFile(templateRoot + "/task.toml.tmpl")
	require.NoError(t, err)
	return []byte(strings.ReplaceAll(string(b), "{{name}}", `"org/x"`))
}

func TestUnknownKeySeverity(t *testing.T) {
	us := unknownKeys([]byte("tags = 1\n[flightdeck]\nx = 1\n[verifier]\nx = 1\n[flightdecks]\nx = 1\n"))
	require.Len(t, us, 4)
	assert.False(t, us[0].flightdeck(), "a key of flightdeck's at the top is Harbor's document: %v", us[0])
	assert.True(t, us[1].flightdeck(), "%v", us[1])
	assert.False(t, us[2].flightdeck(), "%v", us[2])
	assert.False(t, us[3].flightdeck(), "%v", us[3])
	assert.Equal(t, "flightdeck", us[3].suggest)
}

// FuzzUnknownKeys: never a panic, and each unknown key is reported at a
// line of the file, with a path whose last part alone is not valid.
func FuzzUnknownKeys(f *testing.F) {
	fuzzSeeds(f)
	f.Add([]byte(harborEverything))
	f.Add([]byte("[verifier]\ntimeot_sec = 1\n[bogus]\nx.y = 1\n[flightdeck]\ngrader = { comand = [{ a = 1 }] }\n"))
	f.Add([]byte("a = [{ b = { c = 1 } }]\r\n[[steps]]\r\nname = \"x\"\r\n"))
	schema := taskSchema()
	f.Fuzz(func(t *testing.T, src []byte) {
		lines := 1 + strings.Count(string(src), "\n")
		for _, u := range unknownKeys(src) {
			if u.line < 1 || u.line > lines {
				t.Fatalf("line %d of a file of %d lines: %+v", u.line, lines, u)
			}
			if n, _ := schema.lookup(u.path); len(u.path) == 0 || n != len(u.path)-1 {
				t.Fatalf("reported path %q: valid up to %d parts", u.path, n)
			}
		}
	})
}
