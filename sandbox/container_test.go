package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStartAppliesIsolationAndLabels(t *testing.T) {
	d := newTestEngine(t)
	run := testRunID(t, d)
	c := startBase(t, d, ContainerSpec{RunID: run, TrialID: "trial-1", Name: "iso test", Labels: map[string]string{"x": "y", LabelKind: "forged"}, MemoryBytes: 256 << 20, NanoCPUs: 1e9})
	assert.Regexp(t, `^iso-test-[0-9a-f]{8}$`, c.Name)

	res, err := d.api.ContainerInspect(context.Background(), c.ID, client.ContainerInspectOptions{})
	require.NoError(t, err)
	h, cfg := res.Container.HostConfig, res.Container.Config
	assert.Equal(t, "none", string(h.NetworkMode))
	assert.False(t, h.Privileged)
	require.NotNil(t, h.Init)
	assert.True(t, *h.Init)
	require.NotNil(t, h.PidsLimit)
	assert.Equal(t, int64(defaultPidsLimit), *h.PidsLimit)
	assert.Equal(t, int64(256<<20), h.Memory)
	assert.Empty(t, h.Binds)
	assert.Empty(t, h.Mounts)
	assert.Equal(t, "true", cfg.Labels[LabelManaged])
	assert.Equal(t, run, cfg.Labels[LabelRun])
	assert.Equal(t, "trial-1", cfg.Labels[LabelTrial])
	assert.Equal(t, KindContainer, cfg.Labels[LabelKind], "flightdeck's labels win over the caller's")
	assert.Equal(t, "y", cfg.Labels["x"])
	host, _ := os.Hostname()
	assert.Equal(t, host, cfg.Labels[LabelOwnerHost])
	assert.NotEmpty(t, cfg.Labels[LabelOwnerPID])
	assert.Equal(t, testLabel, cfg.Labels[LabelTest], "a test's container says it is one")
	_, err = time.Parse(time.RFC3339, cfg.Labels[LabelCreated])
	assert.NoError(t, err)

	st, err := d.State(context.Background(), c.ID)
	require.NoError(t, err)
	assert.True(t, st.Running, "the default command keeps the container alive")
}

func TestStartFailureLeavesNothing(t *testing.T) {
	d := newTestEngine(t)
	requireBaseImage(t, d)
	run := testRunID(t, d)
	// Created, then refused at start: a file mounted over a directory.
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	_, err := d.Start(context.Background(), ContainerSpec{Image: baseImage, RunID: run, Mounts: []Mount{{HostPath: file, ContainerPath: "/usr"}}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "start container")
	list, err := d.api.ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", LabelRun+"="+run)})
	require.NoError(t, err)
	assert.Empty(t, list.Items)
}

func TestDefaultContainerHasNoNetwork(t *testing.T) {
	d := newTestEngine(t)
	c := startBase(t, d, ContainerSpec{})
	script := `
import socket, sys
ok = []
for addr in [("1.1.1.1", 53), ("8.8.8.8", 53), ("172.17.0.1", 2375), ("10.0.0.1", 80)]:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect(addr)
        ok.append(addr)
    except OSError as e:
        print(addr, "refused:", e)
    finally:
        s.close()
print("connected" if ok else "isolated", ok)
sys.exit(1 if ok else 0)
`
	res, out := run(t, d, c.ID, "python3 -c '"+script+"' && ls /sys/class/net")
	assert.Equal(t, 0, res.ExitCode, out)
	assert.Contains(t, out, "isolated")
	assert.True(t, strings.HasSuffix(out, "\nlo\n"), "only loopback: %q", out)
}

func TestExecCapturesStreamsAndExitCode(t *testing.T) {
	d := newTestEngine(t)
	c := startBase(t, d, ContainerSpec{})
	dir := t.TempDir()
	stdout, stderr := filepath.Join(dir, "stdout"), filepath.Join(dir, "stderr")
	res, err := d.Exec(context.Background(), c.ID, ExecSpec{
		Cmd:        []string{"bash", "-c", `echo "out $FOO"; echo err >&2; pwd; exit 7`},
		Env:        []string{"FOO=bar"},
		Workdir:    "/tmp",
		StdoutPath: stdout, StderrPath: stderr,
	})
	require.NoError(t, err)
	assert.Equal(t, 7, res.ExitCode)
	assert.False(t, res.TimedOut)
	assert.False(t, res.Truncated)
	o, _ := os.ReadFile(stdout)
	e, _ := os.ReadFile(stderr)
	assert.Equal(t, "out bar\n/tmp\n", string(o))
	assert.Equal(t, "err\n", string(e))
}

func TestExecCapsOutput(t *testing.T) {
	d := newTestEngine(t)
	c := startBase(t, d, ContainerSpec{})
	out := filepath.Join(t.TempDir(), "out")
	res, err := d.Exec(context.Background(), c.ID, ExecSpec{
		Cmd:        []string{"bash", "-c", "head -c 300000 /dev/zero; echo done >&2"},
		StdoutPath: out, MaxOutput: 1000,
	})
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode, "the stream is drained past the cap")
	assert.True(t, res.Truncated)
	st, err := os.Stat(out)
	require.NoError(t, err)
	assert.Equal(t, int64(1000), st.Size())
}

func TestExecAsUser(t *testing.T) {
	d := newTestEngine(t)
	c := startBase(t, d, ContainerSpec{})
	res, out := run(t, d, c.ID, "id -u; id -g", func(s *ExecSpec) { s.User = "1234:2345" })
	assert.Equal(t, 0, res.ExitCode)
	assert.Equal(t, "1234\n2345\n", out)
}

// The whole container is killed on timeout, so background children die
// with the script.
func TestExecTimeoutKillsContainerAndChildren(t *testing.T) {
	d := newTestEngine(t)
	c := startBase(t, d, ContainerSpec{})
	nonce := fmt.Sprintf("1000.%d", time.Now().UnixNano()%1000000)
	script := "sleep " + nonce + " & sleep " + nonce + " & (sleep " + nonce + " &) ; while true; do sleep 1; done"
	res, err := d.Exec(context.Background(), c.ID, ExecSpec{Cmd: []string{"bash", "-c", script}, Timeout: 3 * time.Second})
	require.NoError(t, err)
	assert.True(t, res.TimedOut)
	assert.Equal(t, -1, res.ExitCode)

	// Assert on state, with a generous deadline.
	require.Eventually(t, func() bool {
		st, err := d.State(context.Background(), c.ID)
		return err == nil && !st.Running && !hostHasProcess(t, "sleep "+nonce)
	}, time.Minute, 100*time.Millisecond, "container still running, or its children still alive")
	_, err = d.Exec(context.Background(), c.ID, ExecSpec{Cmd: []string{"true"}})
	assert.ErrorIs(t, err, ErrContainerGone, "nothing runs in a killed container")
}

// hostHasProcess looks for a process whose command line contains s. It
// sees container processes only when the engine shares this host's
// kernel (not Docker Desktop's VM); elsewhere it reports none.
func hostHasProcess(t *testing.T, s string) bool {
	if runtime.GOOS != "linux" {
		return false
	}
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	require.NoError(t, err)
	for _, p := range procs {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if strings.Contains(strings.ReplaceAll(string(data), "\x00", " "), s) {
			return true
		}
	}
	return false
}

func TestExecWhenContainerRemovedIsContainerGone(t *testing.T) {
	d := newTestEngine(t)
	c := startBase(t, d, ContainerSpec{})
	done := make(chan error, 1)
	go func() {
		_, err := d.Exec(context.Background(), c.ID, ExecSpec{Cmd: []string{"sleep", "600"}})
		done <- err
	}()
	require.Eventually(t, func() bool {
		ps, err := d.Processes(context.Background(), c.ID)
		for _, p := range ps {
			if err == nil && p.Command == "sleep 600" && p.PID > 0 {
				return true
			}
		}
		return false
	}, 30*time.Second, 20*time.Millisecond, "the exec's process runs")
	require.NoError(t, d.Remove(context.Background(), c.ID))
	select {
	case err := <-done:
		require.Error(t, err)
		assert.ErrorIs(t, err, ErrContainerGone)
		assert.True(t, IsEngineError(err))
	case <-time.After(30 * time.Second):
		t.Fatal("Exec did not return after its container was removed")
	}
	st, err := d.State(context.Background(), c.ID)
	require.NoError(t, err)
	assert.True(t, st.Missing)
}

func TestExecCancelKillsContainer(t *testing.T) {
	d := newTestEngine(t)
	c := startBase(t, d, ContainerSpec{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(500*time.Millisecond, cancel)
	_, err := d.Exec(ctx, c.ID, ExecSpec{Cmd: []string{"sleep", "60"}})
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)
	assert.False(t, IsEngineError(err))
	st, err := d.State(context.Background(), c.ID)
	require.NoError(t, err)
	assert.False(t, st.Running)
}

func TestCopyInWriteFilesCopyOut(t *testing.T) {
	d := newTestEngine(t)
	ctx := context.Background()
	c := startBase(t, d, ContainerSpec{})
	src := t.TempDir()
	writeTree(t, src, map[string]string{"a.txt": "alpha", "sub/b.txt": "beta"})
	require.NoError(t, os.Chmod(filepath.Join(src, "a.txt"), 0o755))
	require.NoError(t, os.Symlink("a.txt", filepath.Join(src, "link")))
	owner := Owner{UID: 1234, GID: 2345}

	require.NoError(t, d.CopyIn(ctx, c.ID, src, "/work/new/dir", owner))
	require.NoError(t, d.WriteFiles(ctx, c.ID, "/work/new/dir", []File{
		{Path: "notes/n.txt", Data: []byte("note")},
		{Path: "run.sh", Data: []byte("#!/bin/sh\n"), Mode: 0o700},
	}, owner))
	res, out := run(t, d, c.ID, "cd /work && find . | sort | xargs stat -c '%n %u:%g %a'")
	require.Equal(t, 0, res.ExitCode, out)
	assert.Equal(t, strings.Join([]string{
		". 1234:2345 755", // missing parents are made, owned by owner
		"./new 1234:2345 755",
		"./new/dir 1234:2345 755",
		"./new/dir/a.txt 1234:2345 755",
		"./new/dir/link 1234:2345 777",
		"./new/dir/notes 1234:2345 755",
		"./new/dir/notes/n.txt 1234:2345 644",
		"./new/dir/run.sh 1234:2345 700",
		"./new/dir/sub 1234:2345 755",
		"./new/dir/sub/b.txt 1234:2345 644",
	}, "\n")+"\n", out)

	dst := filepath.Join(t.TempDir(), "out")
	require.NoError(t, d.CopyOut(ctx, c.ID, "/work/new/dir", dst, CopyLimits{}))
	got, err := os.ReadFile(filepath.Join(dst, "sub", "b.txt"))
	require.NoError(t, err)
	assert.Equal(t, "beta", string(got))
	got, err = os.ReadFile(filepath.Join(dst, "notes", "n.txt"))
	require.NoError(t, err)
	assert.Equal(t, "note", string(got))
	_, err = os.Lstat(filepath.Join(dst, "link"))
	assert.ErrorIs(t, err, os.ErrNotExist, "links are not extracted")

	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, d.CopyOut(ctx, c.ID, "/work/new/dir/a.txt", file, CopyLimits{}))
	got, err = os.ReadFile(filepath.Join(file, "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "alpha", string(got))

	err = d.CopyOut(ctx, c.ID, "/no/such/path", t.TempDir(), CopyLimits{})
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestCopyOutRefusesEscapingSymlinkAndDevice(t *testing.T) {
	d := newTestEngine(t)
	ctx := context.Background()
	c := startBase(t, d, ContainerSpec{})
	res, out := run(t, d, c.ID, "mkdir -p /out/a /out/b && echo x > /out/a/f && ln -s /etc/passwd /out/a/abs && ln -s ../../../../etc /out/a/up && mknod /out/b/null c 1 3")
	require.Equal(t, 0, res.ExitCode, out)

	for _, p := range []string{"/out/a", "/out/b"} {
		parent := t.TempDir()
		err := d.CopyOut(ctx, c.ID, p, filepath.Join(parent, "dst"), CopyLimits{})
		require.Error(t, err, p)
		assert.ErrorIs(t, err, ErrUnsafeArchive, p)
	}
	err := d.CopyOut(ctx, c.ID, "/out/a/f", t.TempDir(), CopyLimits{MaxBytes: 1})
	assert.ErrorIs(t, err, ErrCopyLimit)

	// A trusted source's links can be kept as they are.
	dst := t.TempDir()
	require.NoError(t, d.CopyOut(ctx, c.ID, "/out/a", dst, CopyLimits{Symlinks: true}))
	target, err := os.Readlink(filepath.Join(dst, "abs"))
	require.NoError(t, err)
	assert.Equal(t, "/etc/passwd", target)
}

func TestCommitSnapshot(t *testing.T) {
	d := newTestEngine(t)
	ctx := context.Background()
	run1 := testRunID(t, d)
	c := startBase(t, d, ContainerSpec{RunID: run1, TrialID: "t1"})
	res, _ := run(t, d, c.ID, "echo kept > /kept.txt")
	require.Equal(t, 0, res.ExitCode)

	id, err := d.Commit(ctx, c.ID, map[string]string{"flightdeck.phase": "agent"})
	require.NoError(t, err)
	removeImageAfter(t, d, id)
	labels := imageLabels(t, d, id)
	assert.Equal(t, KindSnapshot, labels[LabelKind])
	assert.Equal(t, run1, labels[LabelRun])
	assert.Equal(t, "t1", labels[LabelTrial])
	assert.Equal(t, "agent", labels["flightdeck.phase"])
	inspect, err := d.api.ImageInspect(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, []string{"/bin/bash"}, inspect.Config.Cmd, "the image's command, not the keep-alive")
	assert.Empty(t, inspect.Config.Entrypoint)

	g := startBase(t, d, ContainerSpec{Image: id, RunID: run1})
	res, out := run(t, d, g.ID, "cat /kept.txt")
	assert.Equal(t, 0, res.ExitCode)
	assert.Equal(t, "kept\n", out)
}

func TestHandBack(t *testing.T) {
	d := newTestEngine(t)
	ctx := context.Background()
	host := t.TempDir()
	c := startBase(t, d, ContainerSpec{Mounts: []Mount{{HostPath: host, ContainerPath: "/work"}}})
	res, out := run(t, d, c.ID, "mkdir -p /work/d && echo x > /work/d/f && ln -s /etc/passwd /work/link")
	require.Equal(t, 0, res.ExitCode, out)
	owner := Owner{UID: 4321, GID: 4322}
	require.NoError(t, d.HandBack(ctx, c.ID, "/work", owner))
	for _, p := range []string{"d", "d/f", "link"} {
		assertOwner(t, filepath.Join(host, p), owner)
	}
	res, out = run(t, d, c.ID, "stat -c %u:%g /etc/passwd")
	assert.Equal(t, "0:0\n", out, "links are not followed")

	// A stopped container (killed after a timeout) is handed back too.
	res, _ = run(t, d, c.ID, "touch /work/later")
	require.Equal(t, 0, res.ExitCode)
	require.NoError(t, d.Stop(ctx, c.ID))
	require.NoError(t, d.HandBack(ctx, c.ID, "/work", Owner{UID: 5000, GID: 5001}))
	assertOwner(t, filepath.Join(host, "later"), Owner{UID: 5000, GID: 5001})
}

func assertOwner(t *testing.T, path string, want Owner) {
	t.Helper()
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	st, ok := fi.Sys().(*syscall.Stat_t)
	require.True(t, ok)
	assert.Equal(t, want, Owner{UID: int(st.Uid), GID: int(st.Gid)}, path)
}

func TestStopAndRemoveAreIdempotent(t *testing.T) {
	d := newTestEngine(t)
	ctx, cancel := context.WithCancel(context.Background())
	c := startBase(t, d, ContainerSpec{})
	cancel() // cleanup must still run
	require.NoError(t, d.Stop(ctx, c.ID))
	require.NoError(t, d.Stop(ctx, c.ID))
	require.NoError(t, d.Remove(ctx, c.ID))
	require.NoError(t, d.Remove(ctx, c.ID))
	st, err := d.State(context.Background(), c.ID)
	require.NoError(t, err)
	assert.True(t, st.Missing)
	assert.NoError(t, d.RemoveImage(ctx, "flightdeck-test/absent:"+randomHex(4)))
}

func TestNewWithoutEngineIsOneClearLine(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	_, err := New(context.Background())
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrEngineUnavailable))
	assert.True(t, IsEngineError(err))
	assert.NotContains(t, err.Error(), "\n")
	assert.Contains(t, err.Error(), "DOCKER_HOST")
	assert.Contains(t, err.Error(), "unix:///nonexistent/docker.sock")
	assert.Contains(t, err.Error(), "start")
}

func TestPreflight(t *testing.T) {
	d := newTestEngine(t)
	info, err := d.Preflight(context.Background())
	require.NoError(t, err)
	assert.NotEmpty(t, info.ServerVersion)
	assert.Regexp(t, `^1\.\d+$`, info.APIVersion)
	assert.NotEmpty(t, info.StorageDriver)
	ok, warning := d.ProbeBindMount(context.Background())
	assert.True(t, ok, warning)
	assert.Empty(t, warning)

	// A directory the engine cannot see: a bind mount of it shows nothing.
	d2, err := NewWithOptions(context.Background(), Options{ProbeDir: "/proc/self"})
	require.NoError(t, err)
	defer d2.Close()
	ok, warning = d2.ProbeBindMount(context.Background())
	assert.False(t, ok)
	assert.Contains(t, warning, "bind-mounted into a container is not visible there")
}

// A container created and not started runs nothing, and CopyOut reads the
// image's files from it, the work dir the image made included.
func TestCreateOnlyCopiesTheImagesFiles(t *testing.T) {
	d := newTestEngine(t)
	requireBaseImage(t, d)
	run := testRunID(t, d)
	c, err := d.Start(context.Background(), ContainerSpec{Image: baseImage, RunID: run, Workdir: "/etc/apt", CreateOnly: true})
	require.NoError(t, err)
	st, err := d.State(context.Background(), c.ID)
	require.NoError(t, err)
	assert.False(t, st.Running, "created, not started")
	dir := t.TempDir()
	require.NoError(t, d.CopyOut(context.Background(), c.ID, "/etc/apt", dir, CopyLimits{}))
	assert.DirExists(t, filepath.Join(dir, "sources.list.d"))
	err = d.CopyOut(context.Background(), c.ID, "/no/such/dir", t.TempDir(), CopyLimits{})
	assert.ErrorIs(t, err, fs.ErrNotExist)
	require.NoError(t, d.Remove(context.Background(), c.ID))
}

// Dirs are made before the container starts (its command sees them),
// writable by every user; a dir the image has is left as it is. The
// second container from the image makes them from what the first found
// of them (no stat), the same.
func TestStartMakesDirs(t *testing.T) {
	d := newTestEngine(t)
	requireBaseImage(t, d)
	run := testRunID(t, d)
	for i := range 2 {
		_, cached := d.ancestry.get(baseImage, "/logs/verifier")
		assert.Equal(t, i > 0, cached, "container %d", i)
		out := filepath.Join(t.TempDir(), "out")
		c, err := d.Start(context.Background(), ContainerSpec{Image: baseImage, RunID: run,
			Cmd:  []string{"sh", "-c", "stat -c '%a %U' /logs/verifier /logs/artifacts /tmp > /seen.tmp && mv /seen.tmp /seen; sleep 600"},
			Dirs: []string{"/logs/verifier", "/logs/artifacts", "/tmp"}})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			return d.CopyOut(context.Background(), c.ID, "/seen", out, CopyLimits{}) == nil
		}, 2*time.Minute, 50*time.Millisecond, "the container writes what it saw")
		seen, err := os.ReadFile(filepath.Join(out, "seen"))
		require.NoError(t, err)
		assert.Equal(t, "777 root\n777 root\n1777 root\n", string(seen), "container %d", i)
		require.NoError(t, d.Remove(context.Background(), c.ID))
	}
}

// A service on an internal network (no route out) that is given a network
// gets the engine's default network besides; one without stays on the
// services' network only. Both find the other services by name.
func TestServiceOnInternalNetwork(t *testing.T) {
	d := newTestEngine(t)
	requireBaseImage(t, d)
	ctx := context.Background()
	runID := testRunID(t, d)
	name, err := d.CreateNetwork(ctx, NetworkSpec{RunID: runID, TrialID: "internal-" + runID, Internal: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.RemoveNetwork(context.Background(), name) })
	startBase(t, d, ContainerSpec{RunID: runID, Name: "peer-" + runID, Service: &ServiceSpec{NetworkName: name, Aliases: []string{"peer"}, Entrypoint: keepAlive()}})
	for _, tc := range []struct {
		network bool
		want    string
	}{{true, "eth0 eth1 lo"}, {false, "eth0 lo"}} {
		c := startBase(t, d, ContainerSpec{RunID: runID, Network: tc.network, Service: &ServiceSpec{NetworkName: name, Entrypoint: keepAlive()}})
		res, out := run(t, d, c.ID, `echo $(ls /sys/class/net); getent hosts peer >/dev/null && echo peer found`)
		assert.Equal(t, 0, res.ExitCode, out)
		assert.Equal(t, tc.want+"\npeer found\n", out, "network %v", tc.network)
	}
}

// The engine reports a container's peak memory on cgroup v1 (a process
// that held 64 MiB shows at least that), and nothing on cgroup v2.
func TestPeakMemory(t *testing.T) {
	d := newTestEngine(t)
	info, err := d.Preflight(context.Background())
	require.NoError(t, err)
	c := startBase(t, d, ContainerSpec{MemoryBytes: 512 << 20})
	res, out := run(t, d, c.ID, `python3 -c 'b = bytearray(64 << 20); b[::4096] = b"x" * len(b[::4096])'`)
	require.Equal(t, 0, res.ExitCode, out)
	peak, err := d.PeakMemory(context.Background(), c.ID)
	require.NoError(t, err)
	if info.CgroupVersion == "1" {
		assert.GreaterOrEqual(t, peak, int64(64<<20))
		assert.Less(t, peak, int64(512<<20))
	} else {
		assert.Zero(t, peak, "cgroup %s: the engine reports no peak", info.CgroupVersion)
	}
}
