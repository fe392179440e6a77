package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/flightdeck/flightdeck/runner/harbor"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/tasks"
)

// FallbackImage is the offline base image. An official image (python,
// debian, ubuntu, ...) that is neither present nor pullable is replaced by
// it, so that the default suite runs on an engine without a registry; every
// trial built on it records the substitution, and a suite's substitute:
// false (--no-substitute) forbids it. Any other missing image fails the
// trial as the task's defect, naming the line that names it.
const FallbackImage = "flightdeck/base:bookworm"

// errNoStandIn: an image is missing and so is FallbackImage, which would
// stand in for it: the machine's setup, not the task's defect.
var errNoStandIn = errors.New("the offline base image " + FallbackImage + " is missing too: run `make base-image` (or map the image: --image-map, images: in the suite)")

// taskImages gets each task's image once per run, however many trials need
// it at once, applying the image map and the fallback.
type taskImages struct {
	eng      sandbox.Engine
	imageMap map[string]string
	logDir   string  // build logs, one per task
	mult     float64 // build timeout multiplier
	// noSubstitute forbids FallbackImage standing in for a missing image.
	noSubstitute bool
	report       func(line string)
	touch        func(ref string) // records a use of an image; nil: none

	mu        sync.Mutex
	builds    map[string]*imageBuild // by task dir
	fallbacks map[string]string      // base image → FallbackImage, decided during this run
}

type imageBuild struct {
	done chan struct{}
	img  sandbox.Image
	log  string
	err  error
}

func newTaskImages(eng sandbox.Engine, imageMap map[string]string, logDir string, mult float64, report func(string)) *taskImages {
	return &taskImages{eng: eng, imageMap: imageMap, logDir: logDir, mult: mult, report: report,
		builds: map[string]*imageBuild{}, fallbacks: map[string]string{}}
}

// get returns the task's image and its build log. A failed build is
// remembered for the run (the same context fails the same way) unless the
// engine itself failed.
func (s *taskImages) get(ctx context.Context, t *tasks.Task) (sandbox.Image, string, error) {
	s.mu.Lock()
	b, ok := s.builds[t.Dir]
	if !ok {
		b = &imageBuild{done: make(chan struct{})}
		s.builds[t.Dir] = b
		s.mu.Unlock()
		b.img, b.log, b.err = s.ensure(ctx, t)
		if b.err == nil && s.touch != nil {
			s.touch(b.img.Ref)
		}
		if b.err != nil && (sandbox.IsEngineError(b.err) || ctx.Err() != nil) {
			s.mu.Lock()
			delete(s.builds, t.Dir)
			s.mu.Unlock()
		}
		close(b.done)
		return b.img, b.log, b.err
	}
	s.mu.Unlock()
	select {
	case <-b.done:
		return b.img, b.log, b.err
	case <-ctx.Done():
		return sandbox.Image{}, "", ctx.Err()
	}
}

// forget drops the task's image from the run's memory when it is ref, so
// that the next get finds or builds it again: the image went from the
// engine under the run (a `docker rmi`, a `flightdeck gc --images`). A get
// still in progress is left alone.
func (s *taskImages) forget(t *tasks.Task, ref string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.builds[t.Dir]
	if !ok {
		return
	}
	select {
	case <-b.done:
		if b.err == nil && b.img.Ref == ref {
			delete(s.builds, t.Dir)
		}
	default:
	}
}

func (s *taskImages) ensure(ctx context.Context, t *tasks.Task) (sandbox.Image, string, error) {
	if err := os.MkdirAll(s.logDir, 0o755); err != nil {
		return sandbox.Image{}, "", fmt.Errorf("build log dir: %w", err)
	}
	logPath := filepath.Join(s.logDir, cleanName(t.ID)+".log")
	_, _, timeout := harbor.Timeouts(t.Config, suite.Multipliers{Build: s.mult})
	spec := sandbox.BuildSpec{
		Name:        t.ID,
		ContextDir:  t.Path("environment"),
		DockerImage: t.Config.Environment.DockerImage,
		ImageMap:    s.currentMap(),
		Timeout:     timeout,
		LogPath:     logPath,
	}
	img, err := s.eng.EnsureImage(ctx, spec)
	if err == nil || !errors.Is(err, sandbox.ErrImageMissing) {
		return img, logPath, wrapBuild(t, err)
	}
	added, ferr := s.fallback(ctx, t)
	if ferr != nil {
		return sandbox.Image{}, logPath, wrapBuild(t, ferr)
	}
	if !added {
		return sandbox.Image{}, logPath, wrapBuild(t, err)
	}
	spec.ImageMap = s.currentMap()
	img, err = s.eng.EnsureImage(ctx, spec)
	return img, logPath, wrapBuild(t, err)
}

func wrapBuild(t *tasks.Task, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("image of %s: %w", t.ID, err)
}

// currentMap is the configured image map plus the fallbacks decided so far.
func (s *taskImages) currentMap() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]string, len(s.imageMap)+len(s.fallbacks))
	for k, v := range s.imageMap {
		m[k] = v
	}
	for k, v := range s.fallbacks {
		if _, mapped := m[k]; !mapped {
			m[k] = v
		}
	}
	return m
}

// fallback maps the task's missing base images to FallbackImage when that
// image is present, reporting each substitution once per run. added is
// false when there was nothing it could map.
func (s *taskImages) fallback(ctx context.Context, t *tasks.Task) (added bool, err error) {
	bases, err := baseImages(t)
	if err != nil {
		return false, err
	}
	return s.standInFor(ctx, bases, func(base string) string { return imageNamedAt(t, base) })
}

// standInForBuild is standInFor over the bases of a Dockerfile other than
// the task's own (a service's, a separate verifier's), named in messages
// by their line of it, relative to the task's parent directory.
func (s *taskImages) standInForBuild(ctx context.Context, dockerfile, taskDir string) (bool, error) {
	data, err := os.ReadFile(dockerfile)
	if err != nil {
		return false, err
	}
	bases, err := sandbox.DockerfileBases(data)
	if err != nil {
		return false, fmt.Errorf("%s: %w", dockerfile, err)
	}
	rel, err := filepath.Rel(filepath.Dir(taskDir), dockerfile)
	if err != nil {
		rel = dockerfile
	}
	return s.standInFor(ctx, bases, func(base string) string { return dockerfileLineOf(rel, data, base) })
}

// standInFor maps those of bases that are missing to FallbackImage, where
// the substitution rule lets it stand in; where names, for messages, where
// the task names a base.
func (s *taskImages) standInFor(ctx context.Context, bases []string, where func(base string) string) (added bool, err error) {
	m := s.currentMap()
	var missing []string
	for _, base := range bases {
		ref, mapped := sandbox.MapImage(base, m)
		if ref == FallbackImage {
			continue
		}
		if _, err := s.eng.InspectImage(ctx, ref); err != nil {
			if !errors.Is(err, sandbox.ErrNoSuchImage) {
				return false, err
			}
			if err := s.standIn(where(base), base, ref, mapped); err != nil {
				return false, err
			}
			missing = append(missing, ref)
		}
	}
	if len(missing) == 0 {
		return false, nil
	}
	if _, err := s.eng.InspectImage(ctx, FallbackImage); err != nil {
		return false, errNoStandIn
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ref := range missing {
		if _, done := s.fallbacks[ref]; done {
			continue
		}
		s.fallbacks[ref] = FallbackImage
		s.report(fmt.Sprintf("%s is not present and cannot be pulled; using %s in its place: verdicts hold for %s, not for %s "+
			"(--no-substitute forbids this; --image-map or images: in the suite chooses another image)", ref, FallbackImage, FallbackImage, ref))
	}
	return true, nil
}

// standIn says why FallbackImage may not stand in for ref, a missing image
// the task names as base (mapped from it when mapped): substitution is off,
// or ref is not an official image. The error is the task's defect and names
// where the task names the image.
func (s *taskImages) standIn(where, base, ref string, mapped bool) error {
	what := ref
	if mapped {
		what = fmt.Sprintf("%s (mapped to %s by the image map)", base, ref)
	}
	switch {
	case s.noSubstitute:
		return asTaskError(fmt.Errorf("%s: %s is not on this engine and cannot be pulled, and substitution is off "+
			"(--no-substitute): load it (docker load, flightdeck images load) or run where a registry has it", where, what))
	case mapped:
		return asTaskError(fmt.Errorf("%s: %s is not on this engine: build or load %s, or map %s to an image the engine has", where, what, ref, base))
	case !sandbox.IsOfficialImage(ref):
		return asTaskError(fmt.Errorf("%s: the image is not on this engine and cannot be pulled, and only Docker Hub's official images "+
			"(python, debian, ...) get a stand-in: load it, or map it: --image-map %s=IMAGE (or images: in the suite)", where, ref))
	}
	return nil
}

// fallbackPairs lists the fallbacks decided, as "from=to".
func (s *taskImages) fallbackPairs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := imagePairs(s.fallbacks)
	sort.Strings(out)
	return out
}
