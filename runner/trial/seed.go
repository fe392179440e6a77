package trial

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/flightdeck/flightdeck/internal/files"
	"github.com/flightdeck/flightdeck/sandbox"
)

// seeds keeps one host copy of each image's working directory per run,
// with its base commits made (see seedBase): the first trial of an image
// copies it out through a short-lived container, and every trial's work dir
// is a host copy of that.
type Seeds struct {
	dir string // where the copies live (under the run's .work)

	mu     sync.Mutex
	copies map[string]*seedCopy // by image ID and working directory
}

type seedCopy struct {
	done chan struct{}
	path string // holds tree/ and shadow.git
	base *seedBase
	err  error
}

func NewSeeds(dir string) *Seeds { return &Seeds{dir: dir, copies: map[string]*seedCopy{}} }

// get returns the prepared host copy of dir in spec.Image (whose ID is
// imageID), making it once.
//
// ownRepo makes the seeded tree a git repository with a base commit (the
// native model, whose work dir is this tree); without it the tree is left
// as the image has it and only the shadow records it (Harbor's model).
func (s *Seeds) get(ctx context.Context, eng sandbox.Engine, spec sandbox.ContainerSpec, imageID, dir string, ownRepo bool) (*seedBase, error) {
	key := imageID + "\x00" + dir + "\x00" + strconv.FormatBool(ownRepo)
	s.mu.Lock()
	c, ok := s.copies[key]
	if !ok {
		c = &seedCopy{done: make(chan struct{}), path: filepath.Join(s.dir, strconv.Itoa(len(s.copies)))}
		s.copies[key] = c
		s.mu.Unlock()
		tree := filepath.Join(c.path, "tree")
		c.err = files.ResetDir(c.path)
		if c.err == nil {
			c.err = files.ResetDir(tree)
		}
		if c.err == nil {
			c.err = seed(ctx, eng, spec, dir, tree)
		}
		if c.err == nil {
			c.base, c.err = prepareSeed(ctx, tree, c.path, ownRepo)
		}
		if c.err != nil {
			s.mu.Lock()
			delete(s.copies, key)
			s.mu.Unlock()
		}
		close(c.done)
		return c.base, c.err
	}
	s.mu.Unlock()
	select {
	case <-c.done:
		return c.base, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// seed copies the image's dir into hostDir through a container that is
// created and never started: the image's files, nothing run.
func seed(ctx context.Context, eng sandbox.Engine, spec sandbox.ContainerSpec, dir, hostDir string) (err error) {
	spec.Name = "seed"
	spec.Cmd = nil
	spec.Network = false
	spec.Mounts = nil
	spec.CreateOnly = true
	c, err := eng.Start(ctx, spec)
	if c.ID != "" {
		defer func() {
			if rerr := eng.Remove(context.WithoutCancel(ctx), c.ID); rerr != nil && err == nil {
				err = fmt.Errorf("remove seeding container: %w", rerr)
			}
		}()
	}
	if err != nil {
		return fmt.Errorf("create seeding container: %w", err)
	}
	if err := eng.CopyOut(ctx, c.ID, dir, hostDir, seedLimits); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // not in the image: the engine makes it, empty, when a container starts
		}
		return fmt.Errorf("copy %s out of the image: %w", dir, err)
	}
	return nil
}
