// Package images gets a run's task images: each task's image built or
// found once per run however many trials need it, with the image map
// applied and, where the substitution rule allows, the offline base image
// standing in for a missing one; and what the run's planning needs to know
// of a task's base images before anything is built.
package images

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/flightdeck/flightdeck/internal/text"
	"github.com/flightdeck/flightdeck/runner/harbor"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/tasks"
)

// Fallback is the offline base image. An official image (python,
// debian, ubuntu, ...) that is neither present nor pullable is replaced by
// it, so that the default suite runs on an engine without a registry; every
// trial built on it records the substitution, and a suite's substitute:
// false (--no-substitute) forbids it. Any other missing image fails the
// trial as the task's defect, naming the line that names it.
const Fallback = "flightdeck/base:bookworm"

// ErrNoStandIn: an image is missing and so is Fallback, which would
// stand in for it: the machine's setup, not the task's defect.
var ErrNoStandIn = errors.New("the offline base image " + Fallback + " is missing too: build it with `flightdeck images base` " +
	"(about a minute; needs debootstrap, which it installs, and root or sudo), or map the image with --image-map FROM=TO")

// Set gets each task's image once per run, however many trials need
// it at once, applying the image map and the fallback.
type Set struct {
	eng      sandbox.Engine
	imageMap map[string]string
	logDir   string  // build logs, one per task
	mult     float64 // build timeout multiplier
	// NoSubstitute forbids Fallback standing in for a missing image.
	NoSubstitute bool
	// SuiteFile: the run has a suite file, whose images: can map an
	// image; messages name it beside --image-map only then.
	SuiteFile bool
	report    func(line string)
	// Touch records a use of an image; nil: none.
	Touch func(img sandbox.Image)

	mu        sync.Mutex
	builds    map[string]*imageBuild // by task dir
	fallbacks map[string]string      // base image → Fallback, decided during this run
}

type imageBuild struct {
	done chan struct{}
	img  sandbox.Image
	log  string
	err  error
}

func New(eng sandbox.Engine, imageMap map[string]string, logDir string, mult float64, report func(string)) *Set {
	return &Set{eng: eng, imageMap: imageMap, logDir: logDir, mult: mult, report: report,
		builds: map[string]*imageBuild{}, fallbacks: map[string]string{}}
}

// get returns the task's image and its build log. A failed build is
// remembered for the run (the same context fails the same way) unless the
// engine itself failed.
func (s *Set) Get(ctx context.Context, t *tasks.Task) (sandbox.Image, string, error) {
	s.mu.Lock()
	b, ok := s.builds[t.Dir]
	if !ok {
		b = &imageBuild{done: make(chan struct{})}
		s.builds[t.Dir] = b
		s.mu.Unlock()
		b.img, b.log, b.err = s.ensure(ctx, t)
		if b.err == nil && s.Touch != nil {
			s.Touch(b.img)
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
func (s *Set) Forget(t *tasks.Task, ref string) {
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

func (s *Set) ensure(ctx context.Context, t *tasks.Task) (sandbox.Image, string, error) {
	if err := os.MkdirAll(s.logDir, 0o755); err != nil {
		return sandbox.Image{}, "", fmt.Errorf("build log dir: %w", err)
	}
	logPath := filepath.Join(s.logDir, text.FileName(t.ID)+".log")
	_, _, timeout := harbor.Timeouts(t.Config, suite.Multipliers{Build: s.mult})
	spec := sandbox.BuildSpec{
		Name:        t.ID,
		ContextDir:  t.Path("environment"),
		DockerImage: t.Config.Environment.DockerImage,
		ImageMap:    s.Map(),
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
	// Another task's build may have decided the stand-in for this task's
	// base while this one tried the map without it: nothing is added now,
	// but the map it failed with is not the run's map any more.
	if !added && maps.Equal(spec.ImageMap, s.Map()) {
		return sandbox.Image{}, logPath, wrapBuild(t, err)
	}
	spec.ImageMap = s.Map()
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
func (s *Set) Map() map[string]string {
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

// fallback maps the task's missing base images to Fallback when that
// image is present, reporting each substitution once per run. added is
// false when there was nothing it could map.
func (s *Set) fallback(ctx context.Context, t *tasks.Task) (added bool, err error) {
	bases, err := Bases(t)
	if err != nil {
		return false, err
	}
	return s.StandInFor(ctx, bases, func(base string) string { return NamedAt(t, base) })
}

// standInForBuild is standInFor over the bases of a Dockerfile other than
// the task's own (a service's, a separate verifier's), named in messages
// by their line of it, relative to the task's parent directory.
func (s *Set) StandInForBuild(ctx context.Context, dockerfile, taskDir string) (bool, error) {
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
	return s.StandInFor(ctx, bases, func(base string) string { return LineOf(rel, data, base) })
}

// standInFor maps those of bases that are missing to Fallback, where
// the substitution rule lets it stand in; where names, for messages, where
// the task names a base.
func (s *Set) StandInFor(ctx context.Context, bases []string, where func(base string) string) (added bool, err error) {
	m := s.Map()
	var missing []string
	for _, base := range bases {
		ref, mapped := sandbox.MapImage(base, m)
		if ref == Fallback {
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
	if _, err := s.eng.InspectImage(ctx, Fallback); err != nil {
		return false, ErrNoStandIn
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ref := range missing {
		if _, done := s.fallbacks[ref]; done {
			continue
		}
		s.fallbacks[ref] = Fallback
		s.report(fmt.Sprintf("%s is not present and cannot be pulled; using %s in its place: verdicts hold for %s, not for %s "+
			"(--no-substitute forbids this; %s chooses another image)", ref, Fallback, Fallback, ref, s.mapHint(ref)))
	}
	return true, nil
}

// mapHint says how to map ref to another image in this run: with
// --image-map, and with the suite's images: where there is a suite file.
func (s *Set) mapHint(ref string) string {
	h := "--image-map " + ref + "=IMAGE"
	if s.SuiteFile {
		h += " (or images: in the suite file)"
	}
	return h
}

// standIn says why Fallback may not stand in for ref, a missing image
// the task names as base (mapped from it when mapped): substitution is off,
// or ref is not an official image. The error is the task's defect and names
// where the task names the image.
func (s *Set) standIn(where, base, ref string, mapped bool) error {
	what := ref
	if mapped {
		what = fmt.Sprintf("%s (mapped to %s by the image map)", base, ref)
	}
	switch {
	case s.NoSubstitute:
		return defect(fmt.Errorf("%s: %s is not on this engine and cannot be pulled, and substitution is off "+
			"(--no-substitute): load it (docker load, flightdeck images load) or run where a registry has it", where, what))
	case mapped:
		return defect(fmt.Errorf("%s: %s is not on this engine: build or load %s, or map %s to an image the engine has", where, what, ref, base))
	case !sandbox.IsOfficialImage(ref):
		return defect(fmt.Errorf("%s: the image is not on this engine and cannot be pulled, and only Docker Hub's official images "+
			"%s get a stand-in: load it, or map it: %s", where, StandInList, s.mapHint(ref)))
	case !StandsInFor(ref):
		hint := ""
		name, _, _ := sandbox.OfficialImage(ref)
		if near := text.Nearest(name, standInRepos); near != "" && near != name {
			hint = fmt.Sprintf("did you mean %s? ", strings.Replace(ref, name, near, 1))
		}
		return defect(fmt.Errorf("%s: %s is not on this engine and cannot be pulled, and %s (Debian with python3) stands in only for %s: "+
			"%sload it, or map it: %s", where, ref, Fallback, StandInList, hint, s.mapHint(ref)))
	}
	return nil
}

// standInRepos are the official images Fallback can truly stand in for:
// Debian itself, Ubuntu (Debian's derivative: the same tools, packages and
// layout) and Python 3 on Debian. Another stack's image (node, golang,
// rust, ...) never gets the stand-in, where a task's tests could only fail
// for the wrong reason; nor does a misspelt name (pyhton).
var standInRepos = []string{"python", "debian", "ubuntu"}

// StandInList says which images get the stand-in, for messages and docs.
const StandInList = "python:3 (any 3.x tag), debian and ubuntu (any tag)"

// StandsInFor reports whether Fallback may stand in for ref: an official
// image of standInRepos, and for python a Python 3 tag (or a tag that
// names no version: latest, slim, ...).
func StandsInFor(ref string) bool {
	name, tag, ok := sandbox.OfficialImage(ref)
	switch {
	case !ok || !slices.Contains(standInRepos, name):
		return false
	case name == "python":
		return tag == "" || tag[0] < '0' || tag[0] > '9' || strings.HasPrefix(tag, "3")
	}
	return true
}

// fallbackPairs lists the fallbacks decided, as "from=to".
func (s *Set) FallbackPairs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := Pairs(s.fallbacks)
	sort.Strings(out)
	return out
}

// Bases lists the images a task's environment starts from: its
// [environment].docker_image, or the images a build of
// environment/Dockerfile reads, as sandbox.DockerfileBases reads them (the
// build's own reading, so the image map and the fallback see what the
// build sees). A Dockerfile that cannot be read or that the build refuses
// is an error naming the file.
func Bases(t *tasks.Task) ([]string, error) {
	if img := t.Config.Environment.DockerImage; img != "" {
		return []string{img}, nil
	}
	path := t.Path("environment", "Dockerfile")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	bases, err := sandbox.DockerfileBases(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return bases, nil
}

// NamedAt is where a task names a base image, for messages: the
// Dockerfile's line that names it (a FROM, or the ARG whose default a FROM
// reads), else task.toml's docker_image, else the Dockerfile itself, by
// its whole path (one that opens from wherever the user is).
func NamedAt(t *tasks.Task, ref string) string {
	name := t.Dir
	if img := t.Config.Environment.DockerImage; img != "" {
		return fmt.Sprintf("%s: [environment].docker_image = %q", filepath.Join(name, tasks.TaskFile), img)
	}
	data, err := os.ReadFile(t.Path("environment", "Dockerfile"))
	path := filepath.Join(name, "environment", "Dockerfile")
	if err != nil {
		return path
	}
	return LineOf(path, data, ref)
}

// LineOf is "path:line: text" of the Dockerfile's first line
// naming ref, else path.
func LineOf(path string, data []byte, ref string) string {
	for i, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, ref) {
			return fmt.Sprintf("%s:%d: %s", path, i+1, strings.TrimSpace(line))
		}
	}
	return path
}

// MapEnv names the environment variable holding extra image-map
// entries, "from=to,from=to".
const MapEnv = "FLIGHTDECK_IMAGE_MAP"

// ResolveMap merges the suite's image map, FLIGHTDECK_IMAGE_MAP and the
// --image-map flags; a later source wins on a key.
func ResolveMap(fromSuite map[string]string, env string, flags []string) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range fromSuite {
		out[k] = v
	}
	fromEnv, err := sandbox.ParseImageMap(env)
	if err != nil {
		return nil, suite.UsageErrorf("%s: %v", MapEnv, err)
	}
	for k, v := range fromEnv {
		out[k] = v
	}
	for _, f := range flags {
		m, err := sandbox.ParseImageMap(f)
		if err != nil || len(m) != 1 {
			return nil, suite.UsageErrorf("--image-map %q: want FROM=TO (two image references)", f)
		}
		for k, v := range m {
			out[k] = v
		}
	}
	return out, nil
}

// Relevant is the part of the image map that applies to a task's
// base images, as sorted "from=to" entries (part of the cache key).
func Relevant(bases []string, m map[string]string) []string {
	var out []string
	for _, b := range bases {
		if to, ok := sandbox.MapImage(b, m); ok {
			out = append(out, b+"="+to)
		}
	}
	sort.Strings(out)
	return out
}

// Pairs renders a map as sorted "from=to" entries.
func Pairs(m map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, fmt.Sprintf("%s=%s", k, m[k]))
	}
	return out
}

// Engine is the engine the set builds on.
func (s *Set) Engine() sandbox.Engine { return s.eng }

// LogDir is where the set writes build logs, one per task.
func (s *Set) LogDir() string { return s.logDir }

// Defect is an image error that is the task's own defect (an image it
// names that cannot be had here, and may not be stood in for), not the
// machine's.
type Defect struct{ Err error }

func (e *Defect) Error() string { return e.Err.Error() }
func (e *Defect) Unwrap() error { return e.Err }

// defect marks err as the task's defect.
func defect(err error) error { return &Defect{Err: err} }

// AddMapped adds the substitutions of another image the trial used (a
// service's, a separate verifier's) to those it records, once each.
func AddMapped(have, more []string) []string {
	for _, m := range more {
		if !slices.Contains(have, m) {
			have = append(have, m)
		}
	}
	return have
}
