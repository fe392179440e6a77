package images

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
	imgs     []sandbox.CachedImage
	removed  []string
	fail     string           // a ref whose removal fails
	sizes    map[string]int64 // the disk usage's own sizes, by ID
	dfCalls  int
	measured []string // the ids MeasureImages was asked for
}

func (f *fakeImageStore) TaskImages(context.Context) ([]sandbox.CachedImage, error) {
	return f.imgs, nil
}
func (f *fakeImageStore) TaskImageSizes(context.Context) (map[string]int64, error) {
	f.dfCalls++
	out := map[string]int64{}
	for _, img := range f.imgs {
		out[img.ID] = f.sizes[img.ID]
	}
	return out, nil
}
func (f *fakeImageStore) MeasureImages(_ context.Context, ids []string) (map[string]int64, error) {
	f.measured = append(f.measured, ids...)
	out := map[string]int64{}
	for _, id := range ids {
		out[id] = f.sizes[id]
	}
	return out, nil
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
func TestPruneByLastUse(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	built := now.Add(-72 * time.Hour)
	store := &fakeImageStore{imgs: []sandbox.CachedImage{
		{ID: "1", Refs: []string{"flightdeck/old-but-used:1"}, Size: 100 << 10, Created: built},
		{ID: "2", Refs: []string{"flightdeck/new-never-used:1"}, Size: 100 << 10, Created: now.Add(-time.Hour)},
		{ID: "3", Refs: []string{"flightdeck/running:1"}, Size: 100 << 10, Created: built.Add(-time.Hour), InUse: true},
		{ID: "4", Refs: []string{"flightdeck/a:1", "flightdeck/a:2"}, Size: 100 << 10, Created: built.Add(-2 * time.Hour)},
	}}
	dir := t.TempDir()
	idx := imagecache.Open(dir)
	require.NoError(t, idx.Touch([]imagecache.Touched{{Ref: "flightdeck/old-but-used:1"}}, "run-1", now.Add(-time.Minute)))
	require.NoError(t, idx.Touch([]imagecache.Touched{{Ref: "flightdeck/a:1"}}, "run-0", built))

	// A dry run says what would go, and removes nothing.
	plan, err := PlanPrune(context.Background(), store, dir, imagecache.Policy{MaxSize: 200 << 10}, now)
	require.NoError(t, err)
	assert.Empty(t, store.removed, "a dry run removes nothing")
	assert.Equal(t, []string{"flightdeck/a:2", "flightdeck/a:1", "flightdeck/new-never-used:1"}, plan.Evicted)
	assert.Equal(t, int64(200<<10), plan.After)

	sum, err := Prune(context.Background(), store, dir, imagecache.Policy{MaxSize: 200 << 10}, now)
	require.NoError(t, err)
	assert.Equal(t, plan.Evicted, sum.Evicted, "what the dry run said is what goes")
	assert.Equal(t, []string{"flightdeck/a:2", "flightdeck/a:1", "flightdeck/new-never-used:1"}, store.removed,
		"least recently used first; a second tag of one image counts no size")
	assert.Equal(t, int64(400<<10), sum.Before)
	assert.Equal(t, int64(200<<10), sum.After)
	uses, err := idx.Read()
	require.NoError(t, err)
	assert.NotContains(t, uses, "flightdeck/a:1", "the index forgets what was evicted")
	assert.Contains(t, uses, "flightdeck/old-but-used:1")
	assert.Contains(t, sum.Line(), "evicted 3 least recently used")

	store = &fakeImageStore{imgs: store.imgs[:2], fail: "flightdeck/new-never-used:1"}
	sum, err = Prune(context.Background(), store, "", imagecache.Policy{MaxSize: 1}, now)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "evict flightdeck/new-never-used:1")
	assert.Equal(t, []string{"flightdeck/old-but-used:1"}, sum.Evicted, "without the index, the build time decides; one failure does not stop the rest")
}

func (f *fakeImageStore) TaskImageRepos(context.Context) (map[string]bool, error) { return nil, nil }

// A listing takes own sizes from the image list, else from the index
// (recorded by a build), else measures them from the images' layers; the
// engine's disk usage is asked only with fresh. What is measured is kept.
// Index entries of images gone from the engine are dropped.
func TestListCachedSizes(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	dir := t.TempDir()
	idx := imagecache.Open(dir)
	require.NoError(t, idx.Touch([]imagecache.Touched{{Ref: "flightdeck/built:1", ID: "b", Size: 70}}, "run-1", now.Add(-time.Hour)))
	require.NoError(t, idx.Touch([]imagecache.Touched{{Ref: "flightdeck/moved:1", ID: "old-id", Size: 99}}, "run-1", now.Add(-time.Hour)))
	require.NoError(t, idx.Touch([]imagecache.Touched{{Ref: "flightdeck/removed-by-hand:1"}}, "run-0", now.Add(-time.Hour)))
	store := &fakeImageStore{imgs: []sandbox.CachedImage{
		{ID: "l", Refs: []string{"flightdeck/listed:1"}, Size: 5, Created: now},
		{ID: "b", Refs: []string{"flightdeck/built:1"}, Size: -1, Created: now},
	}, sizes: map[string]int64{"l": 6, "b": 71, "m": 12}}

	sizeOf := func(list []Cached) map[string]int64 {
		out := map[string]int64{}
		for _, c := range list {
			out[c.Ref] = c.Size
		}
		return out
	}
	list, err := ListCached(ctx, store, dir, false)
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"flightdeck/listed:1": 5, "flightdeck/built:1": 70}, sizeOf(list))
	assert.Zero(t, store.dfCalls, "every size was known without the disk usage")
	uses, err := idx.Read()
	require.NoError(t, err)
	assert.NotContains(t, uses, "flightdeck/removed-by-hand:1")
	assert.NotContains(t, uses, "flightdeck/moved:1")

	// A tag that now names another image: the index's figure was for the
	// old one.
	store.imgs = append(store.imgs, sandbox.CachedImage{ID: "m", Refs: []string{"flightdeck/moved:1"}, Size: -1, Created: now})
	require.NoError(t, idx.Touch([]imagecache.Touched{{Ref: "flightdeck/moved:1", ID: "old-id", Size: 99}}, "run-2", now))
	list, err = ListCached(ctx, store, dir, false)
	require.NoError(t, err)
	assert.Equal(t, int64(12), sizeOf(list)["flightdeck/moved:1"])
	assert.Equal(t, []string{"m"}, store.measured, "measured from its layers: only the image without a figure")
	assert.Zero(t, store.dfCalls, "no disk usage")
	uses, err = idx.Read()
	require.NoError(t, err)
	assert.Equal(t, imagecache.Use{LastUsed: uses["flightdeck/moved:1"].LastUsed, Runs: []string{"run-2"}, SizeOf: "m", Size: 12},
		uses["flightdeck/moved:1"], "the measured size is kept, the use too")
	_, err = ListCached(ctx, store, dir, false)
	require.NoError(t, err)
	assert.Equal(t, []string{"m"}, store.measured, "kept: not measured again")

	list, err = ListCached(ctx, store, dir, true)
	require.NoError(t, err)
	assert.Equal(t, 1, store.dfCalls, "fresh: the disk usage")
	assert.Equal(t, map[string]int64{"flightdeck/listed:1": 6, "flightdeck/built:1": 71, "flightdeck/moved:1": 12}, sizeOf(list), "fresh: all measured anew")
}

// A prune narrowed by a match says what is cached of the matched images
// alone.
func TestPruneMatchedTotal(t *testing.T) {
	now := time.Now()
	store := &fakeImageStore{imgs: []sandbox.CachedImage{
		{ID: "1", Refs: []string{"flightdeck/slow:1"}, Size: 0, Created: now},
		{ID: "2", Refs: []string{"flightdeck/other:1"}, Size: 500, Created: now},
	}}
	sum, err := Prune(context.Background(), store, "", imagecache.Policy{MaxSize: 1,
		Match: func(ref string) bool { return ref == "flightdeck/slow:1" }}, now)
	require.NoError(t, err)
	assert.Equal(t, []string{"flightdeck/slow:1"}, sum.Evicted)
	assert.Zero(t, sum.Before)
	assert.Zero(t, sum.After)
}
