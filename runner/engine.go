package runner

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/flightdeck/flightdeck/runner/imagecache"
	"github.com/flightdeck/flightdeck/runner/images"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/sandbox"
)

// The command line never talks to the engine itself: what its commands do
// there outside a run (gc, the image cache, bundles, the base image) is a
// method of Engine, and a run opens its own through Connector.

// ReapOptions choose what Engine.Reap removes; Reaped counts it.
type (
	ReapOptions = sandbox.ReapOptions
	Reaped      = sandbox.Reaped
)

// Engine is a connection to the engine for the commands that run no trial.
type Engine struct {
	d *sandbox.Docker
}

// Connect opens the engine DOCKER_HOST names (else the docker context's,
// else the default socket); log is the diagnostic log (nil: none). When
// no engine answers, the error is one line saying how to start one.
func Connect(ctx context.Context, log *slog.Logger) (*Engine, error) {
	d, err := sandbox.NewWithOptions(ctx, sandbox.Options{Log: log})
	if err != nil {
		return nil, err
	}
	return &Engine{d: d}, nil
}

// Close releases the connection.
func (e *Engine) Close() error { return e.d.Close() }

// Reap removes flightdeck's objects as o says.
func (e *Engine) Reap(ctx context.Context, o ReapOptions) (Reaped, error) {
	return e.d.Reap(ctx, o)
}

// CachedImages lists the task images on the engine with their uses from
// the image index in indexDir (fresh: sizes measured anew).
func (e *Engine) CachedImages(ctx context.Context, indexDir string, fresh bool) ([]images.Cached, error) {
	return images.ListCached(ctx, e.d, indexDir, fresh)
}

// PruneImages evicts cached task images as p says.
func (e *Engine) PruneImages(ctx context.Context, indexDir string, p imagecache.Policy, now time.Time) (results.ImageBudget, error) {
	return images.Prune(ctx, e.d, indexDir, p, now)
}

// PlanPrune is what PruneImages would evict, removing nothing.
func (e *Engine) PlanPrune(ctx context.Context, indexDir string, p imagecache.Policy, now time.Time) (results.ImageBudget, error) {
	return images.PlanPrune(ctx, e.d, indexDir, p, now)
}

// SaveBundle writes the images of lines (each task's image and its bases)
// to a bundle at path.
func (e *Engine) SaveBundle(ctx context.Context, path string, lines []BuildLine) (images.Manifest, error) {
	built := make([]images.Built, len(lines))
	for i, l := range lines {
		built[i] = images.Built{Task: l.Task, Ref: l.Ref, Bases: l.Bases}
	}
	m, refs, err := images.ManifestFor(ctx, e.d, built)
	if err == nil {
		err = images.WriteBundle(ctx, e.d, path, m, refs)
	}
	return m, err
}

// LoadBundle loads a bundle SaveBundle wrote, checking each image.
func (e *Engine) LoadBundle(ctx context.Context, path string) (images.Manifest, error) {
	return images.LoadBundle(ctx, e.d, path)
}

// Connector opens the engine for runs, each when it first needs one, and
// closes every connection it opened.
type Connector struct {
	ProbeDir string // where the engine's bind-mount probe writes (the results dir)
	Log      *slog.Logger
	mu       sync.Mutex
	opened   []*sandbox.Docker
}

// Open is a Runner's EngineOpener.
func (c *Connector) Open(ctx context.Context) (sandbox.Engine, error) {
	d, err := sandbox.NewWithOptions(ctx, sandbox.Options{ProbeDir: c.ProbeDir, Log: c.Log})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.opened = append(c.opened, d)
	c.mu.Unlock()
	return d, nil
}

// Close closes what Open opened.
func (c *Connector) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range c.opened {
		d.Close()
	}
	c.opened = nil
}

// ProcessOwner is this process's user and group: the owner a run hands
// the files its containers wrote back to.
func ProcessOwner() sandbox.Owner {
	return sandbox.Owner{UID: os.Getuid(), GID: os.Getgid()}
}

// BuildBaseImage builds the offline base image (flightdeck/base:bookworm)
// from Debian, its progress on out.
func BuildBaseImage(ctx context.Context, out io.Writer) error {
	return sandbox.BuildBaseImage(ctx, out)
}
