package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A test binary started with FLIGHTDECK_SANDBOX_CHILD set plays a trial
// that is interrupted: see trialChild.
func TestMain(m *testing.M) {
	// What these tests and their children create is a test suite's.
	os.Setenv(TestEnv, testLabel)
	if os.Getenv("FLIGHTDECK_SANDBOX_CHILD") != "" {
		os.Exit(trialChild(os.Getenv("FLIGHTDECK_SANDBOX_RUN")))
	}
	os.Exit(m.Run())
}

// trialChild starts a labelled container, says "ready <id>", and execs a
// long sleep in it. SIGINT cancels the exec, which kills the container,
// and the deferred Remove cleans up: what flightdeck does on Ctrl-C.
func trialChild(run string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	d, err := New(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	c, err := d.Start(ctx, ContainerSpec{Image: baseImage, RunID: run, TrialID: "child"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer d.Remove(ctx, c.ID)
	fmt.Println("ready", c.ID)
	_, err = d.Exec(ctx, c.ID, ExecSpec{Cmd: []string{"sleep", "1000"}})
	if errors.Is(err, context.Canceled) {
		return 0
	}
	fmt.Fprintln(os.Stderr, "exec ended without cancellation:", err)
	return 1
}

// startTrialChild runs the test binary as a trial child and waits until
// its container runs.
func startTrialChild(t *testing.T, run string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "FLIGHTDECK_SANDBOX_CHILD=1", "FLIGHTDECK_SANDBOX_RUN="+run)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		ready <- strings.TrimSpace(line)
	}()
	select {
	case line := <-ready:
		id, ok := strings.CutPrefix(line, "ready ")
		require.True(t, ok, "child said %q", line)
		return cmd, id
	case <-time.After(60 * time.Second):
		t.Fatal("the child did not start its container")
		return nil, ""
	}
}

func TestReapRemovesOrphansAfterSIGKILL(t *testing.T) {
	d := newTestEngine(t)
	requireBaseImage(t, d)
	ctx := context.Background()
	run := testRunID(t, d)
	cmd, id := startTrialChild(t, run)

	reaped, err := d.Reap(ctx, ReapOptions{RunID: run, OrphansOnly: true})
	require.NoError(t, err)
	assert.Zero(t, reaped.Containers, "the owner is alive")

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	st, err := d.State(ctx, id)
	require.NoError(t, err)
	require.True(t, st.Running, "a killed process leaves its container behind")

	reaped, err = d.Reap(ctx, ReapOptions{RunID: run, OrphansOnly: true})
	require.NoError(t, err)
	assert.Equal(t, 1, reaped.Containers)
	require.Len(t, reaped.Removed, 1)
	assert.Contains(t, reaped.Removed[0], "run "+run)
	st, err = d.State(ctx, id)
	require.NoError(t, err)
	assert.True(t, st.Missing)
}

func TestSIGINTLeavesNothing(t *testing.T) {
	d := newTestEngine(t)
	requireBaseImage(t, d)
	run := testRunID(t, d)
	cmd, _ := startTrialChild(t, run)

	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "the child exits cleanly after SIGINT")
	case <-time.After(60 * time.Second):
		t.Fatal("the child did not exit after SIGINT")
	}
	list, err := d.api.ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", LabelRun+"="+run)})
	require.NoError(t, err)
	assert.Empty(t, list.Items, "nothing is left at exit")
}

func TestReapSelectsByRunAndKind(t *testing.T) {
	d := newTestEngine(t)
	ctx := context.Background()
	runA, runB := testRunID(t, d), testRunID(t, d)
	a := startBase(t, d, ContainerSpec{RunID: runA})
	b := startBase(t, d, ContainerSpec{RunID: runB})
	snap, err := d.Commit(ctx, a.ID, nil)
	require.NoError(t, err)
	removeImageAfter(t, d, snap)

	reaped, err := d.Reap(ctx, ReapOptions{RunID: runA})
	require.NoError(t, err)
	assert.Equal(t, 1, reaped.Containers)
	assert.Equal(t, 1, reaped.Images, "the run's snapshot goes with it")
	for id, missing := range map[string]bool{a.ID: true, b.ID: false} {
		st, err := d.State(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, missing, st.Missing)
	}
	_, err = d.InspectImage(ctx, snap)
	assert.ErrorIs(t, err, ErrNoSuchImage)
	_, err = d.InspectImage(ctx, baseImage)
	assert.NoError(t, err, "images flightdeck did not make are never touched")
}

func TestReapRemovesSupersededTaskImages(t *testing.T) {
	d := newTestEngine(t)
	requireBaseImage(t, d)
	ctx := context.Background()
	run := testRunID(t, d)
	build := func(content string) Image {
		dir := envDir(t, "FROM "+baseImage+"\nCOPY f /f\n", map[string]string{"f": content})
		img, err := d.EnsureImage(ctx, BuildSpec{Name: testImageName(t), ContextDir: dir, Labels: map[string]string{LabelRun: run}})
		require.NoError(t, err)
		removeImageAfter(t, d, img.Ref)
		return img
	}
	old, current := build("old "+randomHex(4)), build("new "+randomHex(4))
	// Another process's build of the same tag wins: the old image loses it.
	_, err := d.api.ImageTag(ctx, client.ImageTagOptions{Source: current.ID, Target: old.Ref})
	require.NoError(t, err)

	// A task image never tagged: what a build makes before it tags it.
	c, err := d.Start(ctx, ContainerSpec{Image: baseImage, RunID: run})
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Remove(context.Background(), c.ID) })
	untagged, err := d.api.ContainerCommit(ctx, c.ID, client.ContainerCommitOptions{
		Config: &container.Config{Labels: d.ownedLabels(KindTaskImage, run, "", nil)}})
	require.NoError(t, err)
	removeImageAfter(t, d, untagged.ID)

	aged, err := NewWithOptions(ctx, Options{SupersededAge: time.Nanosecond})
	require.NoError(t, err)
	t.Cleanup(func() { aged.Close() })
	for _, tc := range []struct {
		name string
		d    *Docker
		id   string
		want bool
	}{
		{"tagged", aged, current.ID, false},
		{"tag moved on", aged, old.ID, true},
		{"tag moved on lately", d, old.ID, false},
		{"never tagged", aged, untagged.ID, false},
	} {
		r := &reaper{d: tc.d}
		assert.Equal(t, tc.want, r.superseded(ctx, tc.id), tc.name)
	}

	// Lately superseded, it stays for now.
	reaped, err := d.Reap(ctx, ReapOptions{RunID: run, OrphansOnly: true})
	require.NoError(t, err)
	assert.Zero(t, reaped.Images, "%v", reaped.Removed)
	_, err = d.InspectImage(ctx, old.ID)
	require.NoError(t, err)

	reaped, err = aged.Reap(ctx, ReapOptions{RunID: run, OrphansOnly: true})
	require.NoError(t, err)
	assert.Equal(t, 1, reaped.Images)
	_, err = d.InspectImage(ctx, old.ID)
	assert.ErrorIs(t, err, ErrNoSuchImage, "the superseded image is gone")
	_, err = d.InspectImage(ctx, current.Ref)
	assert.NoError(t, err, "tagged task images stay without TaskImages")
	_, err = d.InspectImage(ctx, untagged.ID)
	assert.NoError(t, err, "a task image never tagged may be a build in progress")
}

func TestOrphaned(t *testing.T) {
	d := &Docker{host: "here", pid: os.Getpid()}
	now := time.Now().UTC().Format(time.RFC3339)
	dead := deadPID(t)
	tests := []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{"this process", map[string]string{LabelOwnerHost: "here", LabelOwnerPID: fmt.Sprint(os.Getpid()), LabelCreated: now}, false},
		{"live process", map[string]string{LabelOwnerHost: "here", LabelOwnerPID: "1", LabelCreated: now}, false},
		{"dead process", map[string]string{LabelOwnerHost: "here", LabelOwnerPID: fmt.Sprint(dead), LabelCreated: now}, true},
		{"other host", map[string]string{LabelOwnerHost: "there", LabelOwnerPID: fmt.Sprint(dead), LabelCreated: now}, false},
		{"unreadable pid", map[string]string{LabelOwnerHost: "here", LabelOwnerPID: "x", LabelCreated: now}, true},
	}
	if _, ok := processStart(1); ok {
		// pid 1 started long after 1971: the pid now belongs to another process.
		tests = append(tests, struct {
			name   string
			labels map[string]string
			want   bool
		}{"pid reused since", map[string]string{LabelOwnerHost: "here", LabelOwnerPID: "1", LabelCreated: "1971-01-01T00:00:00Z"}, true})
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, d.orphaned(tc.labels), tc.name)
	}
}

// deadPID returns the pid of a process that has exited.
func deadPID(t *testing.T) int {
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	return cmd.Process.Pid
}

func TestBaseImageScriptDoesNothingWhenPresent(t *testing.T) {
	d := newTestEngine(t)
	requireBaseImage(t, d)
	before, err := d.InspectImage(context.Background(), baseImage)
	require.NoError(t, err)
	out, err := exec.Command("bash", "base-image.sh").CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Equal(t, "base image "+baseImage+" is present\n", string(out))
	after, err := d.InspectImage(context.Background(), baseImage)
	require.NoError(t, err)
	assert.Equal(t, before.ID, after.ID)
}

// A reap beside builds never takes a build's image: a build makes its
// image before it tags it, and an untagged task image is not yet garbage.
func TestReapBesideBuilds(t *testing.T) {
	d := newTestEngine(t)
	requireBaseImage(t, d)
	ctx := context.Background()
	// The reaps keep to this test's run: other processes' orphans are theirs.
	run := testRunID(t, d)
	stop := make(chan struct{})
	reaps := make(chan error, 1)
	go func() {
		var errs []error
		for {
			select {
			case <-stop:
				reaps <- errors.Join(errs...)
				return
			default:
			}
			if _, err := d.Reap(ctx, ReapOptions{RunID: run, OrphansOnly: true}); err != nil {
				errs = append(errs, err)
			}
		}
	}()
	var built []Image
	for i := range 6 {
		dir := envDir(t, "FROM "+baseImage+"\nCOPY f /f\nRUN true\n", map[string]string{"f": fmt.Sprint(i, randomHex(4))})
		img, err := d.EnsureImage(ctx, BuildSpec{Name: testImageName(t), ContextDir: dir, Labels: map[string]string{LabelRun: run}})
		require.NoError(t, err)
		removeImageAfter(t, d, img.Ref)
		built = append(built, img)
	}
	close(stop)
	require.NoError(t, <-reaps)
	for _, img := range built {
		_, err := d.InspectImage(ctx, img.Ref)
		assert.NoError(t, err, "the reap beside its build removed %s", img.Ref)
	}
}

// MinAge leaves objects younger than it, whoever their owner.
func TestReapSelectedMinAge(t *testing.T) {
	d := &Docker{host: "here", pid: os.Getpid()}
	dead := fmt.Sprint(deadPID(t))
	at := func(ago time.Duration) string { return time.Now().Add(-ago).UTC().Format(time.RFC3339) }
	orphan := func(created string) map[string]string {
		return map[string]string{LabelOwnerHost: "here", LabelOwnerPID: dead, LabelRun: "r", LabelCreated: created}
	}
	tests := []struct {
		name   string
		opts   ReapOptions
		labels map[string]string
		want   bool
	}{
		{"fresh orphan, no MinAge", ReapOptions{OrphansOnly: true}, orphan(at(0)), true},
		{"fresh orphan", ReapOptions{OrphansOnly: true, MinAge: time.Minute}, orphan(at(0)), false},
		{"old orphan", ReapOptions{OrphansOnly: true, MinAge: time.Minute}, orphan(at(2 * time.Minute)), true},
		{"no created label", ReapOptions{OrphansOnly: true, MinAge: time.Minute}, orphan(""), true},
		{"old, owner alive", ReapOptions{OrphansOnly: true, MinAge: time.Minute},
			map[string]string{LabelOwnerHost: "here", LabelOwnerPID: fmt.Sprint(os.Getpid()), LabelCreated: at(time.Hour)}, false},
		{"fresh, the run's own", ReapOptions{RunID: "r", MinAge: time.Minute}, orphan(at(0)), false},
		{"another run's", ReapOptions{RunID: "s", MinAge: time.Minute}, orphan(at(time.Hour)), false},
		{"a test's orphan, to a real run", ReapOptions{OrphansOnly: true}, tested(orphan(at(time.Hour)), "go-test"), false},
		{"a test's orphan, to gc --all", ReapOptions{}, tested(orphan(at(time.Hour)), "go-test"), true},
		// What a run kept with --keep outlives later runs' reaps of
		// orphans; a gc asked for takes it.
		{"kept, to a later run", ReapOptions{OrphansOnly: true, MinAge: time.Minute, LeaveKept: true}, kept(orphan(at(time.Hour))), false},
		{"kept, to gc --run", ReapOptions{RunID: "r", OrphansOnly: true}, kept(orphan(at(time.Hour))), true},
		{"not kept, to a later run", ReapOptions{OrphansOnly: true, MinAge: time.Minute, LeaveKept: true}, orphan(at(time.Hour)), true},
	}
	for _, tc := range tests {
		r := &reaper{d: d, opts: tc.opts}
		assert.Equal(t, tc.want, r.selected(tc.labels), tc.name)
	}
	// A test suite's reaper takes its own kind of orphan, not a user's.
	test := &Docker{host: "here", pid: os.Getpid(), opts: Options{Test: "go-test"}}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{"a test's orphan", tested(orphan(at(time.Hour)), "go-test"), true},
		{"a user's orphan", orphan(at(time.Hour)), false},
	} {
		r := &reaper{d: test, opts: ReapOptions{OrphansOnly: true}}
		assert.Equal(t, tc.want, r.selected(tc.labels), "a test's reaper, "+tc.name)
	}
}

// tested is labels with LabelTest set to test.
func tested(labels map[string]string, test string) map[string]string {
	labels[LabelTest] = test
	return labels
}

// Measuring task images at once from several processes works: the engine
// computes one disk usage at a time and refuses the others, which wait.
func TestTaskImagesConcurrently(t *testing.T) {
	d := newTestEngine(t)
	errs := make(chan error, 3)
	for range 3 {
		go func() {
			_, err := d.TaskImageSizes(context.Background())
			errs <- err
		}()
	}
	for range 3 {
		assert.NoError(t, <-errs)
	}
}

func kept(labels map[string]string) map[string]string {
	labels[LabelKeep] = "true"
	return labels
}

// Once marked kept, what the process creates carries the keep label, task
// images and the preflight probe apart.
func TestMarkKeptLabels(t *testing.T) {
	d := &Docker{host: "here", pid: os.Getpid()}
	assert.NotContains(t, d.ownedLabels(KindContainer, "r", "t", nil), LabelKeep)
	d.MarkKept()
	assert.Equal(t, "true", d.ownedLabels(KindContainer, "r", "t", nil)[LabelKeep])
	assert.Equal(t, "true", d.ownedLabels(KindNetwork, "r", "t", nil)[LabelKeep])
	assert.NotContains(t, d.ownedLabels(KindTaskImage, "", "", nil), LabelKeep)
	assert.NotContains(t, d.ownedLabels(KindProbe, "", "", nil), LabelKeep)
}
