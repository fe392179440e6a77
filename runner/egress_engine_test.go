package runner

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/runner/suite"
)

// An allowlist phase, enforced from the egress gateway: a *.domain lets
// in the names under it and nothing else; a name not allowed does not
// resolve, even asked of the engine's resolver directly; the agent cannot
// lift the rules (its container has no CAP_NET_ADMIN); the verifier's phase
// gets its own mode; nothing of the trial is left on the engine.
func TestEngineAllowlist(t *testing.T) {
	t.Parallel()
	eng := requireEngine(t)
	dir := t.TempDir()
	task := filepath.Join(dir, "allow")
	writeTestFile(t, filepath.Join(task, "task.toml"), `[agent]
timeout_sec = 120.0
allowed_hosts = ["*.allowed.test"]

[verifier]
timeout_sec = 60.0
network_mode = "no-network"
`)
	writeTestFile(t, filepath.Join(task, "instruction.md"), "Probe.\n")
	writeTestFile(t, filepath.Join(task, "environment", "Dockerfile"), "FROM "+FallbackImage+"\nWORKDIR /app\n")
	serve := `["sh", "-c", "mkdir -p /srv && echo $$HOSTNAME > /srv/name.txt && exec python3 -m http.server 8000 -d /srv"]`
	writeTestFile(t, filepath.Join(task, "environment", "docker-compose.yaml"), `services:
  main:
    depends_on: [api, other]
  api:
    image: `+FallbackImage+`
    hostname: api
    command: `+serve+`
    networks: {default: {aliases: [api.allowed.test]}}
  other:
    image: `+FallbackImage+`
    hostname: other
    command: `+serve+`
    networks: {default: {aliases: [other.denied.test]}}
`)
	probe := `import json, socket, urllib.request, time
out = {}
def get(url, timeout=2.0):
    return urllib.request.urlopen(url, timeout=timeout).read().decode().strip()
for attempt in range(50):
    try:
        out["api"] = get("http://api.allowed.test:8000/name.txt"); break
    except OSError as e:
        out["api"] = "fail: %s" % e; time.sleep(0.2)
for name in ["other.denied.test", "other"]:
    try:
        socket.getaddrinfo(name, 8000); out[name] = "resolved"
    except OSError:
        out[name] = "nxdomain"
# The engine's resolver, asked directly (a raw DNS query for "other").
q = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x05other\x00\x00\x01\x00\x01"
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
try:
    s.sendto(q, ("127.0.0.11", 53)); s.recvfrom(512); out["direct"] = "answered"
except OSError:
    out["direct"] = "blocked"
caps = [l for l in open("/proc/self/status") if l.startswith("CapEff")][0].split()[1]
out["net_admin"] = bool(int(caps, 16) & (1 << 12))
json.dump(out, open("/app/probe.json", "w"))
`
	writeTestFile(t, filepath.Join(task, "solution", "probe.py"), probe)
	writeTestFile(t, filepath.Join(task, "solution", "solve.sh"), "#!/bin/bash\npython3 /solution/probe.py\n")
	writeTestFile(t, filepath.Join(task, "tests", "test.sh"), `#!/bin/bash
cat /app/probe.json
if python3 -c "import socket; socket.getaddrinfo('api.allowed.test', 8000)" 2>/dev/null; then echo "verifier: resolved" > /app/verifier.txt; else echo "verifier: nxdomain" > /app/verifier.txt; fi
cat /app/verifier.txt
echo 1 > /logs/verifier/reward.txt
`)
	suiteFile := filepath.Join(dir, "s.yaml")
	writeTestFile(t, suiteFile, "tasks: [allow]\nvariants: {oracle: {agent: oracle}}\nretries: 0\nresults: results\n")
	rec, res := runSuite(t, eng, suiteFile, suite.Options{})
	r := res["allow__oracle__1"]
	require.NotNil(t, r)
	require.Equal(t, grader.OutcomePassed, r.Outcome, r.Error)
	log := readFile(t, filepath.Join(rec.Dir, "allow__oracle__1", "grader.log"))
	got := readFile(t, filepath.Join(rec.Dir, "allow__oracle__1", "verifier", "test-stdout.txt"))
	for _, want := range []string{`"api": "api"`, `"other.denied.test": "nxdomain"`, `"other": "nxdomain"`, `"direct": "blocked"`, `"net_admin": false`, "verifier: nxdomain"} {
		assert.Contains(t, got, want, "grader.log:\n%s", log)
	}
	assert.False(t, strings.Contains(got, "fail:"), got)
	assertNoLeftovers(t, eng, rec.RunID)
}

// A verifier's allowlist holds for a grade in a fresh container too: a
// snapshot grade and a separate verifier join the trial's egress gateway
// with the verifier's policy in force, reaching the allowed service and not
// the other, as the live grade does.
func TestEngineVerifierAllowlist(t *testing.T) {
	t.Parallel()
	eng := requireEngine(t)
	dir := t.TempDir()
	serve := `["sh", "-c", "mkdir -p /srv && echo $$HOSTNAME > /srv/name.txt && exec python3 -m http.server 8000 -d /srv"]`
	compose := `services:
  main:
    depends_on: [api, other]
  api:
    image: ` + FallbackImage + `
    hostname: api
    command: ` + serve + `
    networks: {default: {aliases: [api.allowed.test]}}
  other:
    image: ` + FallbackImage + `
    hostname: other
    command: ` + serve + `
    networks: {default: {aliases: [other.denied.test]}}
`
	test := `#!/bin/bash
python3 - <<'PY'
import socket, time, urllib.request
ok = False
for _ in range(50):
    try:
        ok = urllib.request.urlopen("http://api.allowed.test:8000/name.txt", timeout=2).read().decode().strip() == "api"
        break
    except OSError:
        time.sleep(0.2)
try:
    socket.getaddrinfo("other.denied.test", 8000)
    denied = False
except OSError:
    denied = True
print("api reached:", ok, "other denied:", denied)
open("/logs/verifier/reward.txt", "w").write("1" if ok and denied else "0")
PY
`
	for name, verifier := range map[string]string{"shared": "", "separate": "environment_mode = \"separate\"\n"} {
		task := filepath.Join(dir, name)
		writeTestFile(t, filepath.Join(task, "task.toml"), "[agent]\ntimeout_sec = 120.0\nnetwork_mode = \"no-network\"\n"+
			"[verifier]\ntimeout_sec = 60.0\nallowed_hosts = [\"*.allowed.test\"]\n"+verifier)
		writeTestFile(t, filepath.Join(task, "instruction.md"), "Nothing.\n")
		writeTestFile(t, filepath.Join(task, "environment", "Dockerfile"), "FROM "+FallbackImage+"\nWORKDIR /app\n")
		writeTestFile(t, filepath.Join(task, "environment", "docker-compose.yaml"), compose)
		writeTestFile(t, filepath.Join(task, "solution", "solve.sh"), "#!/bin/bash\necho done > /app/done\n")
		writeTestFile(t, filepath.Join(task, "tests", "test.sh"), test)
		if verifier != "" {
			writeTestFile(t, filepath.Join(task, "tests", "Dockerfile"), "FROM "+FallbackImage+"\nCOPY test.sh /tests/test.sh\nWORKDIR /app\n")
		}
	}
	suiteFile := filepath.Join(dir, "s.yaml")
	writeTestFile(t, suiteFile, "tasks: [shared, separate]\nvariants: {oracle: {agent: oracle}, snapshot: {agent: oracle, grading: snapshot}}\nretries: 0\nresults: results\n")
	rec, res := runSuite(t, eng, suiteFile, suite.Options{})
	for trial, mode := range map[string]string{"shared__oracle__1": "live", "shared__snapshot__1": "snapshot", "separate__oracle__1": "separate"} {
		r := res[trial]
		require.NotNil(t, r, trial)
		out := readFile(t, filepath.Join(rec.Dir, trial, "verifier", "test-stdout.txt"))
		assert.Equal(t, mode, r.GradePhase.Mode, trial)
		assert.Contains(t, out, "api reached: True other denied: True", trial)
		assert.Equal(t, grader.OutcomePassed, r.Outcome, "%s: %s\n%s", trial, r.Error, out)
	}
	assertNoLeftovers(t, eng, rec.RunID)
}
