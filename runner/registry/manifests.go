package registry

import (
	"fmt"
	"path"
	"path/filepath"

	"github.com/flightdeck/flightdeck/internal/text"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/tasks"
)

// Manifests holds the dataset.toml of each dataset dir a run's tasks come
// from: a task it lists runs only if its files still hash to the digest
// listed, a task it lists that the dir lacks is refused, and the task dirs
// it does not list are left out, with a note.
type Manifests struct {
	byDir map[string]*Manifest
	notes []string
}

// Notes are what the manifests read so far have to say: the task dirs
// they leave out.
func (ms *Manifests) Notes() []string { return ms.notes }

// of is the manifest of a task dir's dataset dir (nil for none).
func (ms *Manifests) of(taskDir string) (*Manifest, error) {
	dir := filepath.Dir(taskDir)
	if m, seen := ms.byDir[dir]; seen {
		return m, nil
	}
	if ms.byDir == nil {
		ms.byDir = map[string]*Manifest{}
	}
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, suite.UsageErrorf("%v", err)
	}
	ms.byDir[dir] = m
	if m != nil {
		if _, left, err := m.Resolve(dir); err == nil && len(left) > 0 {
			ms.notes = append(ms.notes, fmt.Sprintf("%s: %s of %s not listed, left out (first: %s)",
				m.Path, text.Count(len(left), "task dir"), dir, filepath.Base(left[0])))
		}
	}
	return m, nil
}

// Missing is the refusal of a listed task the dataset dir lacks.
func (ms *Manifests) Missing(dir, name string) (suite.RefusedTask, error) {
	m, err := ms.of(dir)
	if err != nil || m == nil {
		return suite.RefusedTask{}, err
	}
	return suite.RefusedTask{ID: path.Base(name), Dir: filepath.Dir(dir), Refusal: suite.Refusal{
		File: m.Path, Field: "[[tasks]] " + name,
		Rule: fmt.Sprintf("listed, but no task dir of %s has [task].name = %q", filepath.Dir(dir), name),
	}}, nil
}

// Repin is what a refusal of a task that did not load adds when its dir's
// dataset.toml pins it: fixing the task changes its files, so the pin
// must follow, and saying so now spares a second refusal ("" without a
// dataset.toml).
func (ms *Manifests) Repin(taskDir string) (string, error) {
	m, err := ms.of(taskDir)
	if err != nil || m == nil {
		return "", err
	}
	return fmt.Sprintf("; then, since %s pins the task by its files: flightdeck dataset init --update %s", m.Path, filepath.Dir(m.Path)), nil
}

// Check refuses a task its dataset.toml pins by another digest than its
// files hash to (nil: it runs).
func (ms *Manifests) Check(t *tasks.Task) (*suite.Refusal, error) {
	m, err := ms.of(t.Dir)
	if err != nil || m == nil || t.Config.Task == nil {
		return nil, err
	}
	entry, ok := m.Listed(t.Config.Task.Name)
	if !ok {
		return nil, nil
	}
	got, err := tasks.HarborDigest(t.Dir)
	if err != nil {
		return nil, err
	}
	if got == entry.Digest {
		return nil, nil
	}
	return &suite.Refusal{File: m.Path, Field: "[[tasks]] " + entry.Name + " digest",
		Rule: fmt.Sprintf("lists %s, but the task's files hash to %s: the task changed since the dataset pinned it "+
			"(if the change is meant, flightdeck dataset init --update %s pins it anew)", entry.Digest, got, filepath.Dir(m.Path))}, nil
}
