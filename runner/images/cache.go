package images

import (
	"context"
	"fmt"
	"time"

	"github.com/flightdeck/flightdeck/runner/imagecache"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/sandbox"
)

// The image cache's policy over the engine's task images: what is cached
// with its last use (the index in imagecache), and what an eviction takes.

// Prune evicts the cached task images the policy picks (see
// imagecache.Plan), using the index in indexDir ("" for none: images are
// as old as their build) for their last use.
func Prune(ctx context.Context, store sandbox.ImageStore, indexDir string, p imagecache.Policy, now time.Time) (results.ImageBudget, error) {
	sum, evict, err := planPrune(ctx, store, indexDir, p, now)
	if err != nil {
		return sum, err
	}
	var removed []string
	var firstErr error
	for _, e := range evict {
		if err := store.RemoveImage(ctx, e.Ref); err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("evict %s: %w", e.Ref, err)
			}
			continue
		}
		removed = append(removed, e.Ref)
		sum.Evicted = append(sum.Evicted, e.Ref)
		sum.Freed += e.Size
	}
	sum.After = sum.Before - sum.Freed
	if indexDir != "" && len(removed) > 0 {
		if err := imagecache.Open(indexDir).Forget(removed); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return sum, firstErr
}

// PlanPrune is what Prune would evict, removing nothing: the
// summary's Evicted and Freed are what would go.
func PlanPrune(ctx context.Context, store sandbox.ImageStore, indexDir string, p imagecache.Policy, now time.Time) (results.ImageBudget, error) {
	sum, evict, err := planPrune(ctx, store, indexDir, p, now)
	for _, e := range evict {
		sum.Evicted = append(sum.Evicted, e.Ref)
		sum.Freed += e.Size
	}
	sum.After = sum.Before - sum.Freed
	return sum, err
}

// planPrune lists the cached task images and picks those p evicts.
func planPrune(ctx context.Context, store sandbox.ImageStore, indexDir string, p imagecache.Policy, now time.Time) (results.ImageBudget, []imagecache.Image, error) {
	sum := results.ImageBudget{Budget: p.MaxSize}
	list, err := ListCached(ctx, store, indexDir, false)
	if err != nil {
		return sum, nil, err
	}
	var imgs []imagecache.Image
	for _, c := range list {
		imgs = append(imgs, c.Image)
	}
	// What is said to be cached is what the policy considered: the
	// matched images alone.
	sum.Before = imagecache.Total(imagecache.Select(imgs, p))
	evict, _ := imagecache.Plan(imgs, p, now)
	return sum, evict, nil
}

// Cached is a cached task image with what the index knows of it.
type Cached struct {
	imagecache.Image
	ID      string
	Created time.Time
	Runs    []string // the last runs that used it
	Used    bool     // the index has a use of it (else LastUsed is Created)
}

// ListCached lists the cached task images, one per tag, with their last
// use and own size from the index in indexDir. The engine's disk usage
// (seconds on a large engine) is asked for only when fresh; an image whose
// own size is neither in the listing nor in the index is measured from its
// layers (MeasureImages), and the sizes found are kept in the index. Index entries of images no longer on the
// engine (removed by hand) are dropped.
func ListCached(ctx context.Context, store sandbox.ImageStore, indexDir string, fresh bool) ([]Cached, error) {
	listed := time.Now()
	list, err := store.TaskImages(ctx)
	if err != nil {
		return nil, err
	}
	uses := map[string]imagecache.Use{}
	idx := imagecache.Open(indexDir)
	if indexDir != "" {
		if uses, err = idx.Read(); err != nil {
			return nil, err
		}
	}
	if err := fillSizes(ctx, store, idx, indexDir, list, uses, fresh); err != nil {
		return nil, err
	}
	present := map[string]bool{}
	var out []Cached
	for _, img := range list {
		size := max(img.Size, 0)
		for i, ref := range img.Refs {
			present[ref] = true
			c := Cached{Image: imagecache.Image{Ref: ref, Size: size, LastUsed: img.Created, InUse: img.InUse, Retag: i > 0},
				ID: img.ID, Created: img.Created}
			if u, ok := uses[ref]; ok && !u.LastUsed.IsZero() {
				c.LastUsed, c.Runs, c.Used = u.LastUsed, u.Runs, true
			}
			out = append(out, c)
			// An image with several tags is counted once.
			size = 0
		}
	}
	var stale []string
	for ref, u := range uses {
		// A use recorded after the listing is an image built since.
		if !present[ref] && u.LastUsed.Before(listed) {
			stale = append(stale, ref)
		}
	}
	if indexDir != "" && len(stale) > 0 {
		if err := idx.Forget(stale); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// fillSizes gives each listed image its own size: from the index when a
// build recorded it for this image id (unless fresh), else measured, and
// records what was measured in the index.
func fillSizes(ctx context.Context, store sandbox.ImageStore, idx imagecache.Index, indexDir string, list []sandbox.CachedImage, uses map[string]imagecache.Use, fresh bool) error {
	missing := false
	var err error
	for i, img := range list {
		if img.Size >= 0 && !fresh {
			continue
		}
		list[i].Size = -1
		for _, ref := range img.Refs {
			if u := uses[ref]; u.SizeOf == img.ID && !fresh {
				list[i].Size = u.Size
			}
		}
		missing = missing || list[i].Size < 0
	}
	if missing {
		var sizes map[string]int64
		if fresh {
			sizes, err = store.TaskImageSizes(ctx)
		} else {
			// Images no build of this index recorded (loaded, or built
			// by another user): measured from their layers, not from
			// the disk usage.
			var ids []string
			for _, img := range list {
				if img.Size < 0 {
					ids = append(ids, img.ID)
				}
			}
			sizes, err = store.MeasureImages(ctx, ids)
		}
		if err != nil {
			return err
		}
		var record []imagecache.Touched
		for i, img := range list {
			if n, ok := sizes[img.ID]; ok && img.Size < 0 {
				list[i].Size = n
				for _, ref := range img.Refs {
					record = append(record, imagecache.Touched{Ref: ref, ID: img.ID, Size: n})
				}
			}
		}
		if indexDir != "" && len(record) > 0 {
			if err := idx.SetSizes(record); err != nil {
				return err
			}
		}
	}
	return nil
}
