package images

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/sandbox/sandboxtest"
	"github.com/flightdeck/flightdeck/tasks"
)

// offlineEngine has only Fallback (and what the map turns into it):
// a build whose base image the map leaves unmapped fails as missing. maps
// gets the image map of each EnsureImage.
func offlineEngine(t *testing.T, maps *[]map[string]string) *sandboxtest.Engine {
	e := sandboxtest.New(t.TempDir())
	var mu sync.Mutex
	e.Build = func(spec sandbox.BuildSpec) (sandbox.Image, error) {
		mu.Lock()
		if maps != nil {
			*maps = append(*maps, spec.ImageMap)
		}
		mu.Unlock()
		base := spec.DockerImage
		if to, ok := sandbox.MapImage(base, spec.ImageMap); ok {
			base = to
		}
		if base != Fallback {
			return sandbox.Image{}, fmt.Errorf("image %s %w", base, sandbox.ErrImageMissing)
		}
		return sandbox.Image{Ref: Fallback, ID: "sha256:base"}, nil
	}
	e.Inspect = func(ref string) (sandbox.ImageInfo, error) {
		if ref == Fallback {
			return sandbox.ImageInfo{ID: "sha256:base"}, nil
		}
		return sandbox.ImageInfo{}, fmt.Errorf("inspect image %s: %w", ref, sandbox.ErrNoSuchImage)
	}
	return e
}

// A digest-pinned base image (as the ai-dlc importer writes) is mapped by
// its bare name, and falls back to the offline base image when unmapped.
func TestImagesPinnedReferences(t *testing.T) {
	pinned := "python:3.12-slim@sha256:" + strings.Repeat("0", 64)
	task := &tasks.Task{ID: "pinned", Dir: t.TempDir(), Config: tasks.Config{Environment: tasks.EnvConfig{DockerImage: pinned}}}
	tests := []struct {
		name      string
		imageMap  map[string]string
		builds    int
		fallbacks []string
	}{
		{name: "mapped by its bare name", imageMap: map[string]string{"python:3.12-slim": Fallback}, builds: 1},
		{name: "unmapped: the fallback", imageMap: map[string]string{}, builds: 2, fallbacks: []string{pinned + "=" + Fallback}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var maps []map[string]string
			eng := offlineEngine(t, &maps)
			var notes []string
			imgs := New(eng, tc.imageMap, filepath.Join(t.TempDir(), "builds"), 1, func(l string) { notes = append(notes, l) })
			img, _, err := imgs.Get(context.Background(), task)
			require.NoError(t, err)
			assert.Equal(t, Fallback, img.Ref)
			assert.Len(t, maps, tc.builds)
			assert.Equal(t, tc.fallbacks, imgs.FallbackPairs())
			if tc.fallbacks != nil {
				require.Len(t, notes, 1)
				assert.Contains(t, notes[0], pinned+" is not present and cannot be pulled; using "+Fallback+" in its place")
			}
		})
	}
}

// The substitution rule: the offline base stands in only for a missing
// official image, and not at all under --no-substitute; any other missing
// image is the task's defect, named where the task names it.
func TestImagesSubstitutionRule(t *testing.T) {
	tests := []struct {
		name         string
		image        string
		imageMap     map[string]string
		noSubstitute bool
		suiteFile    bool
		wantErr      string // "" : the fallback stands in
		notInErr     string
	}{
		{name: "an official image", image: "python:3.12-slim"},
		{name: "an official image in full", image: "docker.io/library/debian:bookworm"},
		{name: "another registry", image: "ghcr.io/nosuchorg/nosuchimage:1.0",
			wantErr: `[environment].docker_image = "ghcr.io/nosuchorg/nosuchimage:1.0": the image is not on this engine and cannot be pulled, and only Docker Hub's official images`},
		{name: "an organisation, run from the command line (task verify, --path)", image: "nosuchorg/img:1",
			wantErr: "map it: --image-map nosuchorg/img:1=IMAGE", notInErr: "suite"},
		{name: "an organisation, run from a suite file", image: "nosuchorg/img:1", suiteFile: true,
			wantErr: "map it: --image-map nosuchorg/img:1=IMAGE (or images: in the suite file)"},
		{name: "substitution off", image: "python:3.12-slim", noSubstitute: true, wantErr: "substitution is off (--no-substitute)"},
		{name: "mapped to a missing image", image: "python:3.12-slim", imageMap: map[string]string{"python:3.12-slim": "mine/py:1"},
			wantErr: "python:3.12-slim (mapped to mine/py:1 by the image map) is not on this engine"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			task := &tasks.Task{ID: "t", Dir: filepath.Join(t.TempDir(), "t"), Config: tasks.Config{Environment: tasks.EnvConfig{DockerImage: tc.image}}}
			var notes []string
			imgs := New(offlineEngine(t, nil), tc.imageMap, filepath.Join(t.TempDir(), "builds"), 1, func(l string) { notes = append(notes, l) })
			imgs.NoSubstitute = tc.noSubstitute
			imgs.SuiteFile = tc.suiteFile
			img, _, err := imgs.Get(context.Background(), task)
			if tc.wantErr == "" {
				require.NoError(t, err)
				assert.Equal(t, Fallback, img.Ref)
				require.Len(t, notes, 1)
				assert.Contains(t, notes[0], "verdicts hold for "+Fallback+", not for "+tc.image)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
			if tc.notInErr != "" {
				assert.NotContains(t, err.Error(), tc.notInErr)
			}
			var d *Defect
			assert.ErrorAs(t, err, &d, "the task's defect")
			assert.Empty(t, notes, "nothing stood in")
		})
	}
}

// Forget drops a finished get of that image, and nothing else.
func TestTaskImagesForget(t *testing.T) {
	task := &tasks.Task{Dir: "/t"}
	tests := []struct {
		name     string
		finished bool
		err      error
		ref      string
		gone     bool
	}{
		{"finished, that image", true, nil, "img:1", true},
		{"finished, another image", true, nil, "img:2", false},
		{"failed", true, fmt.Errorf("build failed"), "img:1", false},
		{"in progress", false, nil, "img:1", false},
	}
	for _, tc := range tests {
		s := New(nil, nil, t.TempDir(), 1, func(string) {})
		b := &imageBuild{done: make(chan struct{}), img: sandbox.Image{Ref: "img:1"}, err: tc.err}
		if tc.finished {
			close(b.done)
		}
		s.builds[task.Dir] = b
		s.Forget(task, tc.ref)
		_, kept := s.builds[task.Dir]
		assert.Equal(t, tc.gone, !kept, tc.name)
	}
	New(nil, nil, t.TempDir(), 1, func(string) {}).Forget(task, "img:1") // nothing to forget
}

// The offline base stands in only for the images it can truly replace:
// Python 3, Debian and Ubuntu; not another stack, not Python 2, not a typo.
func TestStandsInFor(t *testing.T) {
	for ref, want := range map[string]bool{
		"python:3.12-slim": true, "python": true, "python:latest": true, "python:slim-bookworm": true,
		"docker.io/library/python:3.11": true, "python:3.12@sha256:" + strings.Repeat("a", 64): true,
		"debian:bookworm": true, "debian": true, "ubuntu:24.04": true, "ubuntu:latest": true,
		"python:2.7": false, "pyhton:3.12-slim": false, "node:20": false, "golang:1.22": false,
		"rust:1": false, "alpine:3.19": false, "busybox": false,
	} {
		assert.Equal(t, want, StandsInFor(ref), ref)
	}
}

// A missing official image that is not on the list is the task's defect,
// naming the line, what gets a stand-in, and the likely name of a typo.
func TestStandInRefusal(t *testing.T) {
	s := New(nil, nil, t.TempDir(), 1, func(string) {})
	err := s.standIn("t/environment/Dockerfile:1: FROM pyhton:3.12-slim", "pyhton:3.12-slim", "pyhton:3.12-slim", false)
	var d *Defect
	require.ErrorAs(t, err, &d)
	assert.Contains(t, err.Error(), "t/environment/Dockerfile:1: FROM pyhton:3.12-slim: pyhton:3.12-slim is not on this engine")
	assert.Contains(t, err.Error(), "stands in only for "+StandInList)
	assert.Contains(t, err.Error(), "did you mean python:3.12-slim?")
	err = s.standIn("t/environment/Dockerfile:1: FROM node:20", "node:20", "node:20", false)
	require.ErrorAs(t, err, &d)
	assert.NotContains(t, err.Error(), "did you mean")
	assert.Contains(t, err.Error(), "--image-map node:20=IMAGE")
	err = s.standIn("t/environment/Dockerfile:1: FROM python:2.7", "python:2.7", "python:2.7", false)
	require.ErrorAs(t, err, &d)
	assert.NotContains(t, err.Error(), "did you mean", "a listed name with another version is no typo")
	assert.NoError(t, s.standIn("x", "ubuntu:24.04", "ubuntu:24.04", false))
}
