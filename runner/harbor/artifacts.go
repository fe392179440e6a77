package harbor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/flightdeck/flightdeck/internal/atomicfile"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/tasks"
)

// ArtifactManifest is the file, in the trial's artifacts dir, that lists
// what the task's artifacts list asked for and what became of each.
const ArtifactManifest = "manifest.json"

// artifactLimits caps what one artifact may bring into the results.
var artifactLimits = sandbox.CopyLimits{MaxBytes: 1 << 30, MaxEntries: 100000}

// ArtifactAbsent ends the error of an artifact that was not there to
// collect: the agent did not make it, which a regrade can replay (the
// verifier finds no such file), unlike a copy that failed.
const ArtifactAbsent = "does not exist in the container"

// ArtifactEntry is one line of the manifest, as Harbor writes it.
type ArtifactEntry struct {
	Source      string `json:"source"`
	Destination string `json:"destination"` // relative to the trial dir's logs/
	Type        string `json:"type"`        // "file" or "directory"
	Status      string `json:"status"`      // "ok" or "failed"
	Error       string `json:"error,omitempty"`
	Service     string `json:"service,omitempty"` // a sidecar's name; "" for main
}

// CollectArtifacts copies artifacts out of their containers into dir (the
// trial's logs/artifacts, where /logs/artifacts is mounted, or a step's
// own) and writes dir/manifest.json listing prior's entries, then these.
// containerOf gives the container of the artifact's service (main for an
// artifact of no service); "" when there is none, which fails that
// artifact. As Harbor's collection, it is best effort: an artifact that
// cannot be copied is "failed" in the manifest, not an error of the trial.
// An error is only the manifest's.
func CollectArtifacts(ctx context.Context, eng sandbox.Engine, containerOf func(service string) string, as []tasks.Artifact, dir string, prior []ArtifactEntry) ([]ArtifactEntry, error) {
	if len(as) == 0 && len(prior) == 0 {
		return nil, nil
	}
	out := slices.Clone(prior)
	for _, a := range as {
		e := ArtifactEntry{Source: a.Source, Destination: path.Join("artifacts", a.Destination), Type: "file", Status: "ok"}
		if a.Sidecar() {
			e.Service = a.Service
		}
		id := containerOf(a.Service)
		err := fmt.Errorf("no service %q is running", a.Service)
		if id != "" {
			err = collectOne(ctx, eng, id, a, dir, &e)
		}
		if err != nil {
			e.Status, e.Error = "failed", err.Error()
		}
		out = append(out, e)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return out, fmt.Errorf("write the artifacts manifest: %w", err)
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err == nil {
		err = atomicfile.WriteFile(filepath.Join(dir, ArtifactManifest), append(data, '\n'))
	}
	if err != nil {
		return out, fmt.Errorf("write the artifacts manifest: %w", err)
	}
	return out, nil
}

func collectOne(ctx context.Context, eng sandbox.Engine, container string, a tasks.Artifact, dir string, e *ArtifactEntry) error {
	mode, err := eng.StatPath(ctx, container, a.Source)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s %s", a.Source, ArtifactAbsent)
		}
		return err
	}
	target := filepath.Join(dir, filepath.FromSlash(a.Destination))
	if mode.IsDir() {
		e.Type = "directory"
		if err := os.MkdirAll(target, 0o755); err != nil {
			return err
		}
		if err := eng.CopyOut(ctx, container, a.Source, target, artifactLimits); err != nil {
			return err
		}
		return exclude(target, a.Exclude)
	}
	// A file lands under its own name: copy it beside the target, then
	// give it the destination's name.
	stage, err := os.MkdirTemp(filepath.Dir(dir), ".artifact-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	if err := eng.CopyOut(ctx, container, a.Source, stage, artifactLimits); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	return os.Rename(filepath.Join(stage, path.Base(a.Source)), target)
}

// exclude removes what the patterns match below dir: a pattern matches a
// path's last element or its whole path relative to dir, as tar --exclude
// patterns do.
func exclude(dir string, patterns []string) error {
	if len(patterns) == 0 {
		return nil
	}
	var gone []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		for _, pat := range patterns {
			if m, _ := path.Match(pat, d.Name()); m {
				gone = append(gone, p)
				break
			}
			if m, _ := path.Match(pat, filepath.ToSlash(rel)); m {
				gone = append(gone, p)
				break
			}
		}
		if len(gone) > 0 && gone[len(gone)-1] == p && d.IsDir() {
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range gone {
		if err := os.RemoveAll(p); err != nil {
			return err
		}
	}
	return nil
}

// ReadArtifactManifest reads an artifacts dir's manifest.json; none is no
// entry.
func ReadArtifactManifest(dir string) ([]ArtifactEntry, error) {
	p := filepath.Join(dir, ArtifactManifest)
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []ArtifactEntry
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return out, nil
}
