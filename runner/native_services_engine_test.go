package runner

import (
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/tasks"
)

// A flightdeck-native task with services and an allowlist for the agent's
// phase: the agent reaches the allowed service only (through the egress
// gateway); the grade, in a fresh container from the pristine image,
// reaches every service and has no route out; nop gets the services too
// and fails; nothing of the trial is left on the engine.
func TestEngineNativeServices(t *testing.T) {
	t.Parallel()
	eng := requireEngine(t)
	dir := t.TempDir()
	task := filepath.Join(dir, "native")
	outside := outsideHost(t)
	writeTestFile(t, filepath.Join(task, "instruction.md"), "Probe.\n")
	writeTestFile(t, filepath.Join(task, "environment", "Dockerfile"), "FROM "+FallbackImage+"\nWORKDIR /app\n")
	serve := `["sh", "-c", "mkdir -p /srv && echo $$HOSTNAME > /srv/name.txt && exec python3 -m http.server 8000 -d /srv"]`
	writeTestFile(t, filepath.Join(task, "environment", "docker-compose.yaml"), `services:
  main:
    depends_on: [api, other]
    environment:
      FROM_COMPOSE: "yes"
  api:
    image: `+FallbackImage+`
    hostname: api
    command: `+serve+`
  other:
    image: `+FallbackImage+`
    hostname: other
    command: `+serve+`
`)
	writeTestFile(t, filepath.Join(task, "solution", "solve.sh"), `#!/bin/bash
python3 - <<'PY'
import json, os, socket, time, urllib.request
out = {"env": os.environ.get("FROM_COMPOSE", "")}
for attempt in range(50):
    try:
        out["api"] = urllib.request.urlopen("http://api:8000/name.txt", timeout=2).read().decode().strip(); break
    except OSError as e:
        out["api"] = "fail: %s" % e; time.sleep(0.2)
try:
    socket.getaddrinfo("other", 8000); out["other"] = "resolved"
except OSError:
    out["other"] = "nxdomain"
try:
    urllib.request.urlopen("http://`+outside+`:8000/name.txt", timeout=2); out["outside"] = "reached"
except OSError:
    out["outside"] = "blocked"
json.dump(out, open("probe.json", "w"))
PY
`)
	writeTestFile(t, filepath.Join(task, "tests", "test.sh"), `#!/bin/bash
python3 - <<'PY'
import json, os, time, urllib.request
def get(host):
    for attempt in range(50):
        try:
            return urllib.request.urlopen("http://%s:8000/name.txt" % host, timeout=2).read().decode().strip()
        except OSError as e:
            err = str(e); time.sleep(0.2)
    return "fail: " + err
try:
    urllib.request.urlopen("http://`+outside+`:8000/name.txt", timeout=2); out = "reached"
except OSError:
    out = "blocked"
print("grade: api=%s other=%s outside=%s" % (get("api"), get("other"), out))
try:
    probe = json.load(open(os.path.join(os.environ["FLIGHTDECK_WORKDIR"], "probe.json")))
except OSError:
    probe = {}
print("probe:", json.dumps(probe, sort_keys=True))
ok = probe == {"api": "api", "other": "nxdomain", "outside": "blocked", "env": "yes"}
open(os.path.join(os.environ["FLIGHTDECK_REWARD_DIR"], "reward.txt"), "w").write("1" if ok else "0")
PY
`)
	digest, err := tasks.FilesDigest(task)
	require.NoError(t, err)
	writeTestFile(t, filepath.Join(task, "task.toml"), `[agent]
timeout_sec = 120.0
allowed_hosts = ["api"]

[verifier]
timeout_sec = 60.0

[flightdeck.grader]
command = "bash tests/test.sh"
files_digest = "`+digest+`"
`)
	suiteFile := filepath.Join(dir, "s.yaml")
	writeTestFile(t, suiteFile, "tasks: [native]\nvariants: {oracle: {agent: oracle}, nop: {agent: nop}}\nretries: 0\nresults: results\n")
	rec, res := runSuite(t, eng, suiteFile, suite.Options{})
	for variant, want := range map[string]grader.Outcome{"oracle": grader.OutcomePassed, "nop": grader.OutcomeFailed} {
		id := "native__" + variant + "__1"
		r := res[id]
		require.NotNil(t, r, id)
		log := readFile(t, filepath.Join(rec.Dir, id, "grader.log"))
		assert.Equal(t, want, r.Outcome, "%s: %s\n%s", id, r.Error, log)
		assert.Contains(t, log, "grade: api=api other=other outside=blocked", id)
	}
	assertNoLeftovers(t, eng, rec.RunID)
}

// outsideHost starts a container on the engine's default network serving
// HTTP on port 8000, reachable from it, and returns its address: a host
// outside any trial.
func outsideHost(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("docker", "run", "-d", "--rm", FallbackImage, "sh", "-c",
		"mkdir -p /srv && echo outside > /srv/name.txt && exec python3 -m http.server 8000 -d /srv").CombinedOutput()
	require.NoError(t, err, string(out))
	id := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", id).Run() })
	out, err = exec.Command("docker", "inspect", "-f", "{{.NetworkSettings.IPAddress}}", id).CombinedOutput()
	require.NoError(t, err, string(out))
	ip := strings.TrimSpace(string(out))
	require.NotEmpty(t, ip)
	// It answers from the engine's host: "blocked" in a trial is the
	// trial's network, not a host that is down.
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + ip + ":8000/name.txt")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return strings.TrimSpace(string(body)) == "outside"
	}, 30*time.Second, 100*time.Millisecond, "the outside host %s does not answer", ip)
	return ip
}
