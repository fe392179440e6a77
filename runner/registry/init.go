package registry

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/flightdeck/flightdeck/internal/atomicfile"
	"github.com/flightdeck/flightdeck/tasks"
)

// MetricFile is a dataset's metric script, listed in [[files]] when the
// dataset dir has one.
const MetricFile = "metric.py"

// nameRE is Harbor's org/name pattern (harbor/constants.py).
var nameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]*/[a-zA-Z0-9][a-zA-Z0-9._-]*$`)

// ValidName reports whether name is Harbor's org/name.
func ValidName(name string) bool { return nameRE.MatchString(name) && !strings.Contains(name, "..") }

// InitOptions are what `dataset init` writes beside the tasks.
type InitOptions struct {
	Name, Description string
	// Update re-pins an existing manifest: its [dataset] is kept, its
	// tasks and files are those of the dir now.
	Update bool
}

// Init writes dir/dataset.toml for the task dirs in dir, each pinned by
// its Harbor content hash, and metric.py in [[files]] when there is one.
// Every task dir must name its task ([task].name, org/name) and no two the
// same; nothing is written otherwise.
func Init(dir string, opt InitOptions) (*Manifest, error) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%s: no such directory (a dataset dir holds task dirs)", dir)
	}
	path := filepath.Join(dir, ManifestFile)
	m := &Manifest{Path: path}
	// The [dataset] table as written, so that --update keeps what
	// flightdeck does not read (authors, keywords).
	info := map[string]any{}
	data, err := os.ReadFile(path)
	switch {
	case err == nil && !opt.Update:
		return nil, fmt.Errorf("%s exists: --update pins its tasks' digests anew (keeping its [dataset])", path)
	case err == nil:
		var doc map[string]any
		if err := toml.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		if t, ok := doc["dataset"].(map[string]any); ok {
			info = t
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, err
	case opt.Update:
		return nil, fmt.Errorf("%s does not exist: run without --update to write it", path)
	}
	if opt.Name != "" {
		info["name"] = opt.Name
	}
	if opt.Description != "" {
		info["description"] = opt.Description
	}
	if info["name"] == nil {
		info["name"] = "local/" + filepath.Base(dir)
	}
	if info["version"] == nil {
		info["version"] = "1.0.0"
	}
	if _, ok := info["description"]; !ok {
		info["description"] = ""
	}
	name, _ := info["name"].(string)
	if !ValidName(name) {
		return nil, fmt.Errorf("dataset name %v is not org/name (letters, digits, '.', '_' and '-'; --name sets it)", info["name"])
	}
	m.Dataset.Name = name
	m.Dataset.Version, _ = info["version"].(string)
	m.Dataset.Description, _ = info["description"].(string)
	if err := m.pinTasks(dir); err != nil {
		return nil, err
	}
	if data, err := os.ReadFile(filepath.Join(dir, MetricFile)); err == nil {
		sum := sha256.Sum256(data)
		m.Files = []ManifestRef{{Path: MetricFile, Digest: "sha256:" + hex.EncodeToString(sum[:])}}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := atomicfile.WriteFile(path, m.encode(info)); err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return m, nil
}

// pinTasks lists dir's task dirs by [task].name, in name order, with
// their digests.
func (m *Manifest) pinTasks(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	where := map[string]string{}
	ids := map[string]string{} // task id (the name's part after the /) → dir
	for _, e := range ents {
		sub := filepath.Join(dir, e.Name())
		if !e.IsDir() || !isTaskDir(sub) {
			continue
		}
		name := taskName(sub)
		file := filepath.Join(sub, tasks.TaskFile)
		switch {
		case name == "":
			return fmt.Errorf("%s: [task].name is missing: a dataset.toml lists a task by its org/name (add name = \"org/%s\" under [task])", file, e.Name())
		case !ValidName(name):
			return fmt.Errorf("%s: [task].name %q is not org/name: a dataset.toml lists a task by it", file, name)
		case where[name] != "":
			return fmt.Errorf("%s: [task].name %q is the task in %s/ too: a dataset.toml lists each task once", file, name, where[name])
		}
		id := tasks.NameID(name)
		if other := ids[id]; other != "" {
			return fmt.Errorf("%s: [task].name %q gives task id %s (the part after the /), as %s's does: a run names trials by task id, so each must be different", file, name, id, other)
		}
		where[name], ids[id] = e.Name(), e.Name()
		digest, err := tasks.HarborDigest(sub)
		if err != nil {
			return err
		}
		m.Tasks = append(m.Tasks, ManifestTask{Name: name, Digest: digest})
	}
	if len(m.Tasks) == 0 {
		return fmt.Errorf("%s holds no task dir (a dir with task.toml)", dir)
	}
	slices.SortFunc(m.Tasks, func(a, b ManifestTask) int { return strings.Compare(a.Name, b.Name) })
	return nil
}

// encode is the manifest in Harbor's layout: [dataset], then [[tasks]],
// then [[files]].
func (m *Manifest) encode(info map[string]any) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Dataset manifest for %s, written by flightdeck dataset init\n\n", m.Dataset.Name)
	section := func(v any) {
		data, _ := toml.Marshal(v) // plain strings: cannot fail
		b.Write(data)
		b.WriteString("\n")
	}
	section(map[string]any{"dataset": info})
	section(map[string]any{"tasks": m.Tasks})
	if len(m.Files) > 0 {
		section(map[string]any{"files": m.Files})
	}
	return append(bytes.TrimRight(b.Bytes(), "\n"), '\n')
}
