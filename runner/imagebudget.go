package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/flightdeck/flightdeck/runner/imagecache"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/sandbox"
)

// touchImage records that the run used a task image (a build or a cache
// hit) in the image index, for the image cache's least-recently-used
// eviction. A failure is said, never the run's.
func (s *runState) touchImage(ref string) {
	if s.r.ImageIndex == "" || ref == "" {
		return
	}
	if err := imagecache.Open(s.r.ImageIndex).Touch([]string{ref}, s.runID, time.Now()); err != nil {
		s.progress.line("image index: " + err.Error())
	}
}

// enforceBudget evicts cached task images, least recently used first and
// never one a container uses, until they fit the run's image budget, and
// records what it did in the run's record.
func (s *runState) enforceBudget(ctx context.Context, rec *results.RunRecord) {
	budget := s.cfg.ImageBudget
	if budget <= 0 || s.eng == nil {
		return
	}
	store, ok := s.eng.(sandbox.ImageStore)
	if !ok {
		return
	}
	sum, err := PruneImages(ctx, store, s.r.ImageIndex, imagecache.Policy{MaxSize: budget}, time.Now())
	if err != nil {
		s.progress.line("image budget: " + err.Error())
	}
	rec.Images = &sum
	s.progress.line(sum.Line())
}

// PruneImages evicts the cached task images the policy picks (see
// imagecache.Plan), using the index in indexDir ("" for none: images are
// as old as their build) for their last use.
func PruneImages(ctx context.Context, store sandbox.ImageStore, indexDir string, p imagecache.Policy, now time.Time) (results.ImageBudget, error) {
	sum := results.ImageBudget{Budget: p.MaxSize}
	list, err := CachedImages(ctx, store, indexDir)
	if err != nil {
		return sum, err
	}
	var imgs []imagecache.Image
	for _, c := range list {
		imgs = append(imgs, c.Image)
	}
	sum.Before = imagecache.Total(imgs)
	evict, _ := imagecache.Plan(imgs, p, now)
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

// CachedImage is a cached task image with what the index knows of it.
type CachedImage struct {
	imagecache.Image
	ID      string
	Created time.Time
	Runs    []string // the last runs that used it
	Used    bool     // the index has a use of it (else LastUsed is Created)
}

// CachedImages lists the cached task images, one per tag, with their last
// use from the index in indexDir.
func CachedImages(ctx context.Context, store sandbox.ImageStore, indexDir string) ([]CachedImage, error) {
	list, err := store.TaskImages(ctx)
	if err != nil {
		return nil, err
	}
	uses := map[string]imagecache.Use{}
	if indexDir != "" {
		if uses, err = imagecache.Open(indexDir).Read(); err != nil {
			return nil, err
		}
	}
	var out []CachedImage
	for _, img := range list {
		for _, ref := range img.Refs {
			c := CachedImage{Image: imagecache.Image{Ref: ref, Size: img.Size, LastUsed: img.Created, InUse: img.InUse},
				ID: img.ID, Created: img.Created}
			if u, ok := uses[ref]; ok {
				c.LastUsed, c.Runs, c.Used = u.LastUsed, u.Runs, true
			}
			out = append(out, c)
			// An image with several tags is counted once.
			img.Size = 0
		}
	}
	return out, nil
}
