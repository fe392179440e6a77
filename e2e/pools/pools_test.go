// Package pools tests flightdeck's trial networks on an engine whose
// default address pools are nearly or wholly taken. It takes the engine's
// pools from everything else on it, so the Makefile runs it alone, after
// the other packages.
package pools

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/internal/testenv"
)

// defaultPools is how many networks an engine with Docker's default
// address pools holds (measured: the 31st `docker network create` fails,
// the bridge holding one of 31).
const defaultPools = 30

// label marks the networks this test takes the pools with.
const label = "flightdeck-test-pools"

// taken numbers the networks takePools made, for their names.
var taken int

func docker(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command("docker", args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return "", fmt.Errorf("docker %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// takePools creates networks of the engine's default size until n pools
// are held by this test's networks or the engine has none left; it returns
// how many it took. They are removed when the test ends.
func takePools(t *testing.T, n int) int {
	t.Helper()
	t.Cleanup(func() {
		ids, _ := docker(t, "network", "ls", "-q", "--filter", "label="+label)
		for _, id := range strings.Fields(ids) {
			docker(t, "network", "rm", id)
		}
	})
	took := 0
	for i := 0; i < n; i++ {
		taken++
		if _, err := docker(t, "network", "create", "--label", label, fmt.Sprintf("%s-%d-%d", label, os.Getpid(), taken)); err != nil {
			require.Contains(t, err.Error(), "could not find an available, non-overlapping IPv4 address pool", "only the pools may run out")
			break
		}
		took++
	}
	return took
}

// heldPools counts the networks on the engine that hold a default pool
// whole (a /16 of 172.16.0.0/12 or a /20 of 192.168.0.0/16).
func heldPools(t *testing.T) int {
	t.Helper()
	out, err := docker(t, "network", "ls", "-q")
	require.NoError(t, err)
	n := 0
	for _, id := range strings.Fields(out) {
		subnets, err := docker(t, "network", "inspect", id, "--format", "{{range .IPAM.Config}}{{.Subnet}} {{end}}")
		if err != nil {
			continue // gone meanwhile
		}
		for _, s := range strings.Fields(subnets) {
			if strings.HasPrefix(s, "172.") && strings.HasSuffix(s, "/16") || strings.HasPrefix(s, "192.168.") && strings.HasSuffix(s, "/20") {
				n++
			}
		}
	}
	return n
}

type result struct {
	Trial   string   `json:"trial"`
	Outcome string   `json:"outcome"`
	Error   string   `json:"error"`
	Reward  *float64 `json:"reward"`
}

type run struct {
	stdout, stderr string
	code           int
	trials         []result
}

// flightdeck runs the binary on the fixture tasks with extra environment.
func flightdeck(t *testing.T, bin, dir string, env []string, args ...string) run {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &out, &errb
	cmd.Env = append(os.Environ(), env...)
	err := cmd.Run()
	r := run{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	var rec struct {
		Trials []result `json:"trials"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &rec), "run.json on stdout (--json):\n%s\n%s", r.stdout, r.stderr)
	r.trials = rec.Trials
	return r
}

func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "flightdeck")
	out, err := exec.Command("go", "build", "-o", bin, "../../cmd/flightdeck").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

func fixture(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "fixtures", "harbor", "tasks", name))
	require.NoError(t, err)
	return p
}

// leftNetworks are the networks of flightdeck's a run left.
func leftNetworks(t *testing.T) string {
	t.Helper()
	out, err := docker(t, "network", "ls", "-q", "--filter", "label=flightdeck.managed=true", "--filter", "label=flightdeck.kind=network")
	require.NoError(t, err)
	return out
}

// With 27 of the engine's 30 default pools taken, multi-container trials
// (compose-sidecar, six at once) and allowlist trials behind a gateway
// (allowlist, four at once) all pass: each takes a /28 of its own, none
// a pool. With every pool taken, the user's range (FLIGHTDECK_SUBNETS)
// serves them; a range with one /28 for two trials at once makes the
// second wait, saying why, and both pass. No network of flightdeck's is
// left.
func TestEngineTrialNetworksOnATakenEngine(t *testing.T) {
	testenv.Short(t)
	testenv.Engine(t)
	bin := build(t)
	dir := t.TempDir()
	imageMap := []string{"--image-map", "python:3.12-slim=flightdeck/base:bookworm"}
	base := append([]string{"run", "--json", "--no-cache", "--results", filepath.Join(dir, "results")}, imageMap...)

	want := defaultPools - 3 - heldPools(t)
	took := takePools(t, want)
	t.Logf("took %d pools (%d were held already)", took, defaultPools-3-want)

	compose := flightdeck(t, bin, dir, nil, append(base, "--path", fixture(t, "compose-sidecar"), "--attempts", "6", "--jobs", "6")...)
	allow := flightdeck(t, bin, dir, nil, append(base, "--path", fixture(t, "allowlist"), "--attempts", "4", "--jobs", "4")...)
	for _, r := range []run{compose, allow} {
		assert.Equal(t, 0, r.code, r.stderr)
		for _, tr := range r.trials {
			assert.Equal(t, "passed", tr.Outcome, "%s: %s", tr.Trial, tr.Error)
			assert.NotContains(t, tr.Error, "address pool")
		}
	}
	assert.Len(t, compose.trials, 6)
	assert.Len(t, allow.trials, 4)
	assert.Empty(t, leftNetworks(t))

	// Every pool taken: the default pools have no /28 left, the user's
	// range does; one /28 for two trials: the second waits.
	takePools(t, defaultPools)
	full := flightdeck(t, bin, dir, []string{"FLIGHTDECK_SUBNETS=10.213.0.0/24"}, append(base, "--path", fixture(t, "compose-sidecar"), "--attempts", "3", "--jobs", "3")...)
	assert.Equal(t, 0, full.code, full.stderr)
	assert.Len(t, full.trials, 3)
	for _, tr := range full.trials {
		assert.Equal(t, "passed", tr.Outcome, "%s: %s", tr.Trial, tr.Error)
	}

	// The user's range full (its one /28 held by a network of the test's):
	// the trial waits and says why, and runs once the network is gone.
	_, err := docker(t, "network", "create", "--label", label, "--subnet", "10.213.1.0/28", fmt.Sprintf("%s-%d-block", label, os.Getpid()))
	require.NoError(t, err)
	cmd := exec.Command(bin, append(base, "--path", fixture(t, "compose-sidecar"))...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "FLIGHTDECK_SUBNETS=10.213.1.0/28")
	var out bytes.Buffer
	cmd.Stdout = &out
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill() })
	// A trial that never stops waiting fails the test, not the package.
	watchdog := time.AfterFunc(5*time.Minute, func() { cmd.Process.Kill() })
	defer watchdog.Stop()
	sc := bufio.NewScanner(stderr)
	var said []string
	waited := false
	for sc.Scan() {
		said = append(said, sc.Text())
		if strings.Contains(sc.Text(), "waiting for a subnet: every /28 of FLIGHTDECK_SUBNETS 10.213.1.0/28 is taken; it starts when another trial's network is removed") {
			waited = true
			_, err := docker(t, "network", "rm", fmt.Sprintf("%s-%d-block", label, os.Getpid()))
			require.NoError(t, err)
		}
	}
	require.NoError(t, cmd.Wait(), strings.Join(said, "\n"))
	assert.True(t, waited, "the trial said it waits:\n%s", strings.Join(said, "\n"))
	assert.Contains(t, strings.Join(said, "\n"), "room for 0 trial networks in FLIGHTDECK_SUBNETS 10.213.1.0/28")
	var rec struct {
		Trials []result `json:"trials"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &rec))
	require.Len(t, rec.Trials, 1)
	assert.Equal(t, "passed", rec.Trials[0].Outcome, rec.Trials[0].Error)
	assert.Empty(t, leftNetworks(t))
}
