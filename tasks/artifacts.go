package tasks

import (
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// Artifacts is the task's artifacts list, read (task.toml was checked when
// the task was loaded).
func (t *Task) Artifacts() []Artifact {
	as, _ := parseArtifacts(t.Config.RawArtifacts)
	return as
}

// serviceNameRE is Harbor's rule for an artifact's service.
var serviceNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// parseArtifacts reads Harbor's artifacts list: each entry a path, or a
// table with source (a path), destination (where in the artifacts dir),
// exclude (patterns) and service (a compose service to copy it from). Sources are absolute paths in the container;
// destinations stay inside the trial's artifacts dir.
func parseArtifacts(raw []any) ([]Artifact, error) {
	var out []Artifact
	for i, r := range raw {
		var a Artifact
		switch v := r.(type) {
		case string:
			a.Source = v
		case map[string]any:
			for k := range v {
				switch k {
				case "source", "destination", "exclude", "service":
				default:
					return nil, fmt.Errorf("entry %d: unknown key %q (source, destination, exclude, service)", i+1, k)
				}
			}
			src, ok := v["source"].(string)
			if !ok {
				return nil, fmt.Errorf("entry %d: source must be a string path", i+1)
			}
			a.Source = src
			if d, ok := v["destination"]; ok {
				if a.Destination, ok = d.(string); !ok {
					return nil, fmt.Errorf("entry %d: destination must be a string path", i+1)
				}
			}
			if sv, ok := v["service"]; ok {
				if a.Service, ok = sv.(string); !ok || !serviceNameRE.MatchString(a.Service) {
					return nil, fmt.Errorf("entry %d: service must be a compose service's name (letters, digits, _ . -), found %v", i+1, sv)
				}
			}
			if ex, ok := v["exclude"]; ok {
				list, ok := ex.([]any)
				if !ok {
					return nil, fmt.Errorf("entry %d: exclude must be a list of patterns", i+1)
				}
				for _, e := range list {
					p, ok := e.(string)
					if !ok {
						return nil, fmt.Errorf("entry %d: exclude must be a list of patterns", i+1)
					}
					if _, err := path.Match(p, ""); err != nil {
						return nil, fmt.Errorf("entry %d: exclude pattern %q: %v", i+1, p, err)
					}
					a.Exclude = append(a.Exclude, p)
				}
			}
		default:
			return nil, fmt.Errorf("entry %d: must be a path or a table with source", i+1)
		}
		if !path.IsAbs(a.Source) || path.Clean(a.Source) == "/" {
			return nil, fmt.Errorf("entry %d: source %q must be an absolute path below /", i+1, a.Source)
		}
		a.Source = path.Clean(a.Source)
		if a.Destination == "" {
			a.Destination = path.Base(a.Source)
		}
		if !filepath.IsLocal(filepath.FromSlash(a.Destination)) || strings.HasPrefix(a.Destination, "/") {
			return nil, fmt.Errorf("entry %d: destination %q must be a relative path inside the artifacts dir", i+1, a.Destination)
		}
		if a.Destination == "manifest.json" {
			return nil, fmt.Errorf("entry %d: destination manifest.json is the manifest's", i+1)
		}
		out = append(out, a)
	}
	return out, nil
}
