package runner

import (
	"context"
	"time"

	"github.com/flightdeck/flightdeck/runner/imagecache"
	"github.com/flightdeck/flightdeck/runner/images"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/sandbox"
)

// touchImage records that the run used a task image (a build or a cache
// hit) in the image index, for the image cache's least-recently-used
// eviction. A failure is said, never the run's.
func (s *runState) touchImage(img sandbox.Image) {
	if s.r.ImageIndex == "" || img.Ref == "" {
		return
	}
	if err := imagecache.Open(s.r.ImageIndex).Touch([]imagecache.Touched{touched(img)}, s.runID, time.Now()); err != nil {
		s.progress.Line("image index: " + err.Error())
	}
}

// touched is what the index records of a use of img: its own size too,
// when the build measured it, so that listing the cache needs no disk
// usage from the engine.
func touched(img sandbox.Image) imagecache.Touched {
	t := imagecache.Touched{Ref: img.Ref}
	if img.Sized {
		t.ID, t.Size = img.ID, img.OwnSize
	}
	return t
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
	sum, err := images.Prune(ctx, store, s.r.ImageIndex, imagecache.Policy{MaxSize: budget}, time.Now())
	if err != nil {
		s.progress.Line("image budget: " + err.Error())
	}
	rec.Images = &sum
	s.progress.Line(sum.Line())
}
