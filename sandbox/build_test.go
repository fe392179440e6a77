package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// envDir writes an environment/ directory for a build test.
func envDir(t *testing.T, dockerfile string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	all := map[string]string{"Dockerfile": dockerfile}
	for k, v := range files {
		all[k] = v
	}
	writeTree(t, dir, all)
	return dir
}

func TestEnsureImageBuildsOnceByContent(t *testing.T) {
	d := newTestEngine(t)
	requireBaseImage(t, d)
	ctx := context.Background()
	dir := envDir(t, "FROM "+baseImage+"\nCOPY data.txt /data.txt\n", map[string]string{"data.txt": "one " + randomHex(4)})
	logPath := filepath.Join(t.TempDir(), "build.log")
	spec := BuildSpec{Name: testImageName(t), ContextDir: dir, LogPath: logPath, Labels: map[string]string{"flightdeck.task": "t", "odd": `a "b" $HOME \ c`}}

	first, err := d.EnsureImage(ctx, spec)
	require.NoError(t, err)
	removeImageAfter(t, d, first.Ref)
	assert.True(t, first.Built)
	assert.Regexp(t, `^flightdeck/test-[a-z0-9-]+:[0-9a-f]{16}$`, first.Ref)
	assert.True(t, strings.HasPrefix(first.ContextDigest, "sha256:"+first.Ref[len(first.Ref)-16:]))
	log, err := os.ReadFile(logPath)
	require.NoError(t, err)
	assert.Contains(t, string(log), "classic builder")

	second, err := d.EnsureImage(ctx, spec)
	require.NoError(t, err)
	assert.False(t, second.Built, "the second request finds the image")
	assert.Equal(t, first.Ref, second.Ref)
	assert.Equal(t, first.ID, second.ID)

	writeTree(t, dir, map[string]string{"data.txt": "One " + randomHex(4)})
	third, err := d.EnsureImage(ctx, spec)
	require.NoError(t, err)
	removeImageAfter(t, d, third.Ref)
	assert.True(t, third.Built)
	assert.NotEqual(t, first.Ref, third.Ref, "one changed byte makes a new tag")

	info, err := d.InspectImage(ctx, first.Ref)
	require.NoError(t, err)
	assert.Equal(t, first.ID, info.ID)
	labels := imageLabels(t, d, first.Ref)
	assert.Equal(t, "true", labels[LabelManaged])
	assert.Equal(t, KindTaskImage, labels[LabelKind])
	assert.Equal(t, first.ContextDigest, labels[labelContext])
	assert.Equal(t, "t", labels["flightdeck.task"])
	assert.Equal(t, `a "b" $HOME \ c`, labels["odd"])
}

func imageLabels(t *testing.T, d *Docker, ref string) map[string]string {
	t.Helper()
	res, err := d.api.ImageInspect(context.Background(), ref)
	require.NoError(t, err)
	require.NotNil(t, res.Config)
	return res.Config.Labels
}

func TestEnsureImageConcurrentRequestsBuildOnce(t *testing.T) {
	d := newTestEngine(t)
	requireBaseImage(t, d)
	dir := envDir(t, "FROM "+baseImage+"\nRUN echo "+randomHex(8)+" > /marker\n", nil)
	spec := BuildSpec{Name: testImageName(t), ContextDir: dir}

	const n = 4
	images := make([]Image, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			images[i], errs[i] = d.EnsureImage(context.Background(), spec)
		}()
	}
	wg.Wait()
	built := 0
	for i := range n {
		require.NoError(t, errs[i])
		assert.Equal(t, images[0].Ref, images[i].Ref)
		if images[i].Built {
			built++
		}
	}
	removeImageAfter(t, d, images[0].Ref)
	assert.Equal(t, 1, built, "one of the concurrent requests builds")
}

func TestEnsureImageMissingBaseImage(t *testing.T) {
	d := newTestEngine(t)
	requireBaseImage(t, d)
	ctx := context.Background()
	missing := "flightdeck-test/absent:" + randomHex(4)
	dir := envDir(t, "FROM "+missing+"\nRUN true\n", nil)

	_, err := d.EnsureImage(ctx, BuildSpec{Name: testImageName(t), ContextDir: dir})
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrImageMissing)
	assert.Contains(t, err.Error(), "base image "+missing+" is not present and cannot be pulled")
	assert.False(t, IsEngineError(err), "a missing base image is the task's problem")

	img, err := d.EnsureImage(ctx, BuildSpec{Name: testImageName(t), ContextDir: dir, ImageMap: map[string]string{missing: baseImage}})
	require.NoError(t, err)
	removeImageAfter(t, d, img.Ref)
	assert.True(t, img.Built)
	assert.Equal(t, []string{missing + "=" + baseImage}, img.Mapped)
}

func TestEnsureImageMapChangesTag(t *testing.T) {
	d := newTestEngine(t)
	requireBaseImage(t, d)
	ctx := context.Background()
	dir := envDir(t, "FROM "+baseImage+"\nRUN echo "+randomHex(4)+"\n", nil)
	name := testImageName(t)
	plain, err := d.EnsureImage(ctx, BuildSpec{Name: name, ContextDir: dir})
	require.NoError(t, err)
	removeImageAfter(t, d, plain.Ref)

	// The snapshot of a container is another local image to map to.
	c := startBase(t, d, ContainerSpec{})
	snap, err := d.Commit(ctx, c.ID, nil)
	require.NoError(t, err)
	removeImageAfter(t, d, snap)
	mapped, err := d.EnsureImage(ctx, BuildSpec{Name: name, ContextDir: dir, ImageMap: map[string]string{baseImage: snap}})
	require.NoError(t, err)
	removeImageAfter(t, d, mapped.Ref)
	assert.NotEqual(t, plain.Ref, mapped.Ref, "a different image map gives a different tag")
}

func TestEnsureImageFailedBuildQuotesFailingStep(t *testing.T) {
	d := newTestEngine(t)
	requireBaseImage(t, d)
	marker := "marker-" + randomHex(4)
	dir := envDir(t, "FROM "+baseImage+"\nRUN echo first-step "+marker+"\nRUN echo "+marker+" && echo second-line && exit 3\n", nil)
	logPath := filepath.Join(t.TempDir(), "build.log")

	_, err := d.EnsureImage(context.Background(), BuildSpec{Name: testImageName(t), ContextDir: dir, LogPath: logPath})
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrBuildFailed)
	var be *BuildError
	require.True(t, errors.As(err, &be))
	assert.Contains(t, be.Step, "exit 3")
	assert.Contains(t, be.Tail, marker)
	assert.NotContains(t, be.Tail, "first-step", "only the failing step is quoted")
	assert.Contains(t, err.Error(), "failed (exit 3): second-line; build log: ")
	log, rerr := os.ReadFile(logPath)
	require.NoError(t, rerr)
	assert.Contains(t, string(log), marker)

	// The step that worked left no unlabelled image behind.
	list, lerr := d.api.ImageList(context.Background(), client.ImageListOptions{All: true, Filters: make(client.Filters).Add("dangling", "true")})
	require.NoError(t, lerr)
	for _, img := range list.Items {
		hist, err := d.api.ImageHistory(context.Background(), img.ID)
		if err == nil && len(hist.Items) > 0 {
			assert.NotContains(t, hist.Items[0].CreatedBy, marker)
		}
	}
}

// TestEnsureImageBuildLogIsText builds with the classic builder, which
// paints a step's stderr red: neither the build log nor the error keeps an
// escape sequence, only the text.
func TestEnsureImageBuildLogIsText(t *testing.T) {
	if testing.Short() {
		t.Skip("engine tests do not run with -short")
	}
	d := newTestEngine(t)
	requireBaseImage(t, d)
	marker := "marker-" + randomHex(4)
	// Both on stderr, in order: the engine's stream may put a stdout line
	// after a later stderr one.
	dir := envDir(t, "FROM "+baseImage+"\nRUN printf '\\033[91mred\\033[0m\\n' >&2 && echo "+marker+" >&2 && exit 4\n", nil)
	logPath := filepath.Join(t.TempDir(), "build.log")

	_, err := d.EnsureImage(context.Background(), BuildSpec{Name: testImageName(t), ContextDir: dir, LogPath: logPath})
	require.Error(t, err)
	var be *BuildError
	require.True(t, errors.As(err, &be), "%v", err)
	assert.Contains(t, be.Tail, "red")
	assert.Contains(t, be.Tail, marker)
	assert.Contains(t, err.Error(), "red")
	assert.Contains(t, err.Error(), "failed (exit 4): marker-")
	assert.NotContains(t, err.Error(), "\x1b")
	log, rerr := os.ReadFile(logPath)
	require.NoError(t, rerr)
	assert.Contains(t, string(log), "classic builder")
	assert.Contains(t, string(log), "red\n")
	assert.Contains(t, string(log), marker+"\n")
	assert.NotContains(t, string(log), "\x1b")
}

func TestEnsureImageWithBuildKitFeatures(t *testing.T) {
	d := newTestEngine(t)
	requireBaseImage(t, d)
	ctx := context.Background()
	dir := envDir(t, "# syntax=docker/dockerfile:1\nFROM "+baseImage+"\nCOPY --chmod=0750 tool.sh /usr/local/bin/tool\nRUN --mount=type=cache,target=/cache echo "+randomHex(4)+" > /cache/x\n",
		map[string]string{"tool.sh": "#!/bin/sh\necho tool\n"})
	logPath := filepath.Join(t.TempDir(), "build.log")
	img, err := d.EnsureImage(ctx, BuildSpec{Name: testImageName(t), ContextDir: dir, LogPath: logPath})
	require.NoError(t, err)
	removeImageAfter(t, d, img.Ref)
	log, err := os.ReadFile(logPath)
	require.NoError(t, err)
	assert.Contains(t, string(log), "BuildKit (line 3: COPY --chmod; line 4: RUN --mount)")
	assert.Equal(t, img.ContextDigest, imageLabels(t, d, img.Ref)[labelContext])

	c := startBase(t, d, ContainerSpec{Image: img.Ref})
	res, out := run(t, d, c.ID, "stat -c %a /usr/local/bin/tool && tool")
	assert.Equal(t, 0, res.ExitCode)
	assert.Equal(t, "750\ntool\n", out)
}

func TestEnsureImageRefusesSecretMount(t *testing.T) {
	d := newTestEngine(t)
	requireBaseImage(t, d)
	dir := envDir(t, "FROM "+baseImage+"\nRUN --mount=type=secret,id=tok cat /run/secrets/tok\n", nil)
	_, err := d.EnsureImage(context.Background(), BuildSpec{Name: testImageName(t), ContextDir: dir})
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrDockerfile)
	assert.Contains(t, err.Error(), filepath.Join(dir, "Dockerfile")+": ")
	assert.Contains(t, err.Error(), "line 2")
}

func TestEnsureImageBuildTimeout(t *testing.T) {
	d := newTestEngine(t)
	requireBaseImage(t, d)
	ctx := context.Background()
	dir := envDir(t, "FROM "+baseImage+"\nRUN sleep 60 # "+randomHex(4)+"\n", nil)
	spec := BuildSpec{Name: testImageName(t), ContextDir: dir, Timeout: 2 * time.Second}
	_, err := d.EnsureImage(ctx, spec)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrBuildTimeout)

	// No build container goes on sleeping.
	require.Eventually(t, func() bool {
		list, err := d.api.ContainerList(ctx, listAll())
		require.NoError(t, err)
		for _, c := range list.Items {
			if strings.Contains(c.Command, "sleep 60 # ") && c.State == "running" {
				return false
			}
		}
		return true
	}, 2*time.Minute, 200*time.Millisecond, "a timed-out build's container still runs")
}

func TestEnsureImageDockerImageUsedAsIs(t *testing.T) {
	d := newTestEngine(t)
	requireBaseImage(t, d)
	ctx := context.Background()
	img, err := d.EnsureImage(ctx, BuildSpec{DockerImage: "python:3.12-slim", ImageMap: map[string]string{"python:3.12-slim": baseImage}})
	require.NoError(t, err)
	assert.Equal(t, baseImage, img.Ref)
	assert.False(t, img.Built)
	assert.Empty(t, img.ContextDigest)
	assert.Equal(t, []string{"python:3.12-slim=" + baseImage}, img.Mapped)

	_, err = d.EnsureImage(ctx, BuildSpec{DockerImage: "flightdeck-test/absent:" + randomHex(4)})
	assert.ErrorIs(t, err, ErrImageMissing)
}

// Build args reach the build (a global ARG in FROM too, image map applied)
// and a target stops the build at its stage; both are part of the tag.
func TestEnsureImageArgsAndTarget(t *testing.T) {
	d := newTestEngine(t)
	requireBaseImage(t, d)
	ctx := context.Background()
	missing := "example.invalid/none:" + randomHex(4)
	dir := envDir(t, "ARG BASE=example.invalid/unset\nFROM ${BASE} AS one\nARG MSG=default\nRUN echo $MSG > /msg\n"+
		"FROM one AS two\nRUN echo two > /two\nFROM one AS three\nRUN exit 7\n", nil)
	spec := BuildSpec{Name: testImageName(t), ContextDir: dir, ImageMap: map[string]string{missing: baseImage},
		Args: map[string]string{"BASE": missing, "MSG": "hello " + randomHex(4)}, Target: "two"}
	img, err := d.EnsureImage(ctx, spec)
	require.NoError(t, err, "the failing last stage is not built")
	removeImageAfter(t, d, img.Ref)
	assert.Equal(t, []string{missing + "=" + baseImage}, img.Mapped)
	c := startBase(t, d, ContainerSpec{Image: img.Ref})
	_, out := run(t, d, c.ID, "cat /msg /two")
	assert.Equal(t, spec.Args["MSG"]+"\ntwo\n", out)

	other := spec
	other.Args = map[string]string{"BASE": missing, "MSG": "other"}
	img2, err := d.EnsureImage(ctx, other)
	require.NoError(t, err)
	removeImageAfter(t, d, img2.Ref)
	assert.NotEqual(t, img.Ref, img2.Ref, "another arg value, another tag")
	assert.True(t, img2.Built)

	last := spec
	last.Target = ""
	_, err = d.EnsureImage(ctx, last)
	assert.ErrorIs(t, err, ErrBuildFailed, "without the target the last stage is built, and fails")
}
