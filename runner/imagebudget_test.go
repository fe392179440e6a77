package runner

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/runner/imagecache"
	"github.com/flightdeck/flightdeck/sandbox"
)

// fakeImageStore is an engine's task images, for the eviction's logic
// (the engine's listing and removal are tested in sandbox and by the
// images script).
type fakeImageStore struct {
	imgs    []sandbox.CachedImage
	removed []string
	fail    string // a ref whose removal fails
}

func (f *fakeImageStore) TaskImages(context.Context) ([]sandbox.CachedImage, error) {
	return f.imgs, nil
}
func (f *fakeImageStore) SaveImages(context.Context, []string, io.Writer) error { return nil }
func (f *fakeImageStore) LoadImages(context.Context, io.Reader) error           { return nil }
func (f *fakeImageStore) ImageID(context.Context, string) (string, error)       { return "", nil }
func (f *fakeImageStore) RemoveImage(_ context.Context, ref string) error {
	if ref == f.fail {
		return errors.New("image is being used")
	}
	f.removed = append(f.removed, ref)
	return nil
}

// The budget evicts by the index's last use, not the build time; an image
// in use stays; the index forgets what was evicted; a failed removal is
// said and the rest still goes.
func TestPruneImagesByLastUse(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	built := now.Add(-72 * time.Hour)
	store := &fakeImageStore{imgs: []sandbox.CachedImage{
		{ID: "1", Refs: []string{"flightdeck/old-but-used:1"}, Size: 100, Created: built},
		{ID: "2", Refs: []string{"flightdeck/new-never-used:1"}, Size: 100, Created: now.Add(-time.Hour)},
		{ID: "3", Refs: []string{"flightdeck/running:1"}, Size: 100, Created: built.Add(-time.Hour), InUse: true},
		{ID: "4", Refs: []string{"flightdeck/a:1", "flightdeck/a:2"}, Size: 100, Created: built.Add(-2 * time.Hour)},
	}}
	dir := t.TempDir()
	idx := imagecache.Open(dir)
	require.NoError(t, idx.Touch([]string{"flightdeck/old-but-used:1"}, "run-1", now.Add(-time.Minute)))
	require.NoError(t, idx.Touch([]string{"flightdeck/a:1"}, "run-0", built))

	sum, err := PruneImages(context.Background(), store, dir, imagecache.Policy{MaxSize: 200}, now)
	require.NoError(t, err)
	assert.Equal(t, []string{"flightdeck/a:2", "flightdeck/a:1", "flightdeck/new-never-used:1"}, store.removed,
		"least recently used first; a second tag of one image counts no size")
	assert.Equal(t, int64(400), sum.Before)
	assert.Equal(t, int64(200), sum.After)
	uses, err := idx.Read()
	require.NoError(t, err)
	assert.NotContains(t, uses, "flightdeck/a:1", "the index forgets what was evicted")
	assert.Contains(t, uses, "flightdeck/old-but-used:1")
	assert.Contains(t, sum.Line(), "evicted 3 least recently used")

	store = &fakeImageStore{imgs: store.imgs[:2], fail: "flightdeck/new-never-used:1"}
	sum, err = PruneImages(context.Background(), store, "", imagecache.Policy{MaxSize: 1}, now)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "evict flightdeck/new-never-used:1")
	assert.Equal(t, []string{"flightdeck/old-but-used:1"}, sum.Evicted, "without the index, the build time decides; one failure does not stop the rest")
}

func (f *fakeImageStore) TaskImageRepos(context.Context) (map[string]bool, error) { return nil, nil }
