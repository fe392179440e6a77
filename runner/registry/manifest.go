package registry

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// ManifestFile is a dataset's manifest in Harbor's current format: a
// dataset dir holds it beside its task dirs.
const ManifestFile = "dataset.toml"

// missingMark starts the path that stands for a task a manifest lists and
// the dataset dir does not hold: loading it refuses the task.
const missingMark = ManifestFile + "#"

// Manifest is a dataset.toml: the tasks it runs, each pinned by Harbor's
// content hash, and its files (metric.py).
type Manifest struct {
	Dataset struct {
		Name        string `toml:"name"`
		Version     string `toml:"version"`
		Description string `toml:"description"`
	} `toml:"dataset"`
	Tasks []ManifestTask `toml:"tasks"`
	Files []ManifestRef  `toml:"files"`
	Path  string         `toml:"-"`
}

// ManifestTask is one [[tasks]] entry.
type ManifestTask struct {
	Name   string `toml:"name"`
	Digest string `toml:"digest"`
}

// ManifestRef is one [[files]] entry.
type ManifestRef struct {
	Path   string `toml:"path"`
	Digest string `toml:"digest"`
}

var digestRE = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)

// ReadManifest reads dir's dataset.toml; nil and no error when it has
// none.
func ReadManifest(dir string) (*Manifest, error) {
	p := filepath.Join(dir, ManifestFile)
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := toml.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %v", p, err)
	}
	m.Path = p
	seen := map[string]bool{}
	for i, t := range m.Tasks {
		switch {
		case t.Name == "":
			return nil, fmt.Errorf("%s: tasks[%d]: name is missing (org/name)", p, i)
		case !digestRE.MatchString(t.Digest):
			return nil, fmt.Errorf("%s: tasks[%d] %s: digest %q is not sha256:<64 hex digits> (task digest prints a task's harbor_digest)", p, i, t.Name, t.Digest)
		case seen[t.Name]:
			return nil, fmt.Errorf("%s: tasks[%d]: %s is listed twice", p, i, t.Name)
		}
		seen[t.Name] = true
	}
	if len(m.Tasks) == 0 {
		return nil, fmt.Errorf("%s: lists no task ([[tasks]] name, digest)", p)
	}
	return &m, nil
}

// Listed is the entry of the task named so, if any.
func (m *Manifest) Listed(name string) (ManifestTask, bool) {
	for _, t := range m.Tasks {
		if t.Name == name {
			return t, true
		}
	}
	return ManifestTask{}, false
}

// Resolve finds the listed tasks among dir's task dirs by [task].name, in
// the manifest's order: a listed task that none has is a path that loads
// as a refusal (MissingTask). leftOut are the task dirs it does not list.
func (m *Manifest) Resolve(dir string) (dirs, leftOut []string, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	byName := map[string]string{}
	var all []string
	for _, e := range ents {
		sub := filepath.Join(dir, e.Name())
		if !e.IsDir() || !isTaskDir(sub) {
			continue
		}
		all = append(all, sub)
		if name := taskName(sub); name != "" {
			if _, dup := byName[name]; !dup {
				byName[name] = sub
			}
		}
	}
	used := map[string]bool{}
	for _, t := range m.Tasks {
		if d, ok := byName[t.Name]; ok {
			dirs = append(dirs, d)
			used[d] = true
			continue
		}
		dirs = append(dirs, filepath.Join(dir, missingMark+url.PathEscape(t.Name)))
	}
	for _, d := range all {
		if !used[d] {
			leftOut = append(leftOut, d)
		}
	}
	return dirs, leftOut, nil
}

// MissingTask tells whether a task dir stands for a task a manifest lists
// and its dataset dir does not hold, and its name.
func MissingTask(dir string) (name string, ok bool) {
	esc, ok := strings.CutPrefix(filepath.Base(dir), missingMark)
	if !ok {
		return "", false
	}
	name, err := url.PathUnescape(esc)
	return name, err == nil
}

// taskName is a task dir's [task].name ("" when it has none).
func taskName(dir string) string {
	data, err := os.ReadFile(filepath.Join(dir, "task.toml"))
	if err != nil {
		return ""
	}
	var doc struct {
		Task struct {
			Name string `toml:"name"`
		} `toml:"task"`
	}
	if toml.Unmarshal(data, &doc) != nil {
		return ""
	}
	return doc.Task.Name
}
