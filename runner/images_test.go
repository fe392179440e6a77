package runner

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
	"github.com/flightdeck/flightdeck/tasks"
)

// offlineEngine has only FallbackImage (and what the map turns into it):
// a build whose base image the map leaves unmapped fails as missing.
type offlineEngine struct {
	sandbox.Engine
	mu   sync.Mutex
	maps []map[string]string // the image map of each EnsureImage
}

func (e *offlineEngine) EnsureImage(_ context.Context, spec sandbox.BuildSpec) (sandbox.Image, error) {
	e.mu.Lock()
	e.maps = append(e.maps, spec.ImageMap)
	e.mu.Unlock()
	base := spec.DockerImage
	if to, ok := sandbox.MapImage(base, spec.ImageMap); ok {
		base = to
	}
	if base != FallbackImage {
		return sandbox.Image{}, fmt.Errorf("image %s %w", base, sandbox.ErrImageMissing)
	}
	return sandbox.Image{Ref: FallbackImage, ID: "sha256:base"}, nil
}

func (e *offlineEngine) InspectImage(_ context.Context, ref string) (sandbox.ImageInfo, error) {
	if ref == FallbackImage {
		return sandbox.ImageInfo{ID: "sha256:base"}, nil
	}
	return sandbox.ImageInfo{}, fmt.Errorf("inspect image %s: %w", ref, sandbox.ErrNoSuchImage)
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
		{name: "mapped by its bare name", imageMap: map[string]string{"python:3.12-slim": FallbackImage}, builds: 1},
		{name: "unmapped: the fallback", imageMap: map[string]string{}, builds: 2, fallbacks: []string{pinned + "=" + FallbackImage}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			eng := &offlineEngine{}
			var notes []string
			imgs := newTaskImages(eng, tc.imageMap, filepath.Join(t.TempDir(), "builds"), 1, func(l string) { notes = append(notes, l) })
			img, _, err := imgs.get(context.Background(), task)
			require.NoError(t, err)
			assert.Equal(t, FallbackImage, img.Ref)
			assert.Len(t, eng.maps, tc.builds)
			assert.Equal(t, tc.fallbacks, imgs.fallbackPairs())
			if tc.fallbacks != nil {
				require.Len(t, notes, 1)
				assert.Contains(t, notes[0], pinned+" is not present and cannot be pulled; using "+FallbackImage)
			}
		})
	}
}

// forget drops a finished get of that image, and nothing else.
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
		s := newTaskImages(nil, nil, t.TempDir(), 1, func(string) {})
		b := &imageBuild{done: make(chan struct{}), img: sandbox.Image{Ref: "img:1"}, err: tc.err}
		if tc.finished {
			close(b.done)
		}
		s.builds[task.Dir] = b
		s.forget(task, tc.ref)
		_, kept := s.builds[task.Dir]
		assert.Equal(t, tc.gone, !kept, tc.name)
	}
	newTaskImages(nil, nil, t.TempDir(), 1, func(string) {}).forget(task, "img:1") // nothing to forget
}
