package grader

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// maxSpecFileBytes caps one spec file.
const maxSpecFileBytes = 4 << 20

// LoadSpecs loads the specs in paths: each is a spec file, or a directory
// whose *.yaml and *.yml files (at any depth, in lexical order) are spec
// files. Unknown keys, bad values, a spec with no assert and no pending
// note (or both), and an id used twice are errors naming file:line; every
// error found is reported, not only the first.
func LoadSpecs(paths []string) ([]Spec, error) {
	files, err := specFiles(paths)
	if err != nil {
		return nil, err
	}
	var specs []Spec
	var errs []error
	for _, file := range files {
		data, err := readSpecFile(file)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		got, err := parseSpecs(file, data)
		if err != nil {
			errs = append(errs, err)
		}
		specs = append(specs, got...)
	}
	if err := duplicateIDs(specs); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return specs, nil
}

func specFiles(paths []string) ([]string, error) {
	var files []string
	seen := map[string]bool{}
	add := func(f string) {
		if !seen[filepath.Clean(f)] {
			seen[filepath.Clean(f)] = true
			files = append(files, f)
		}
	}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("spec path: %w", err)
		}
		if !fi.IsDir() {
			add(p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(f string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			ext := filepath.Ext(f)
			if !d.IsDir() && (ext == ".yaml" || ext == ".yml") {
				found = append(found, f)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("list spec files in %s: %w", p, err)
		}
		sort.Strings(found)
		for _, f := range found {
			add(f)
		}
	}
	return files, nil
}

func readSpecFile(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("read spec file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSpecFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read spec file %s: %w", file, err)
	}
	if len(data) > maxSpecFileBytes {
		return nil, fmt.Errorf("%s: a spec file is at most %d bytes", file, maxSpecFileBytes)
	}
	return data, nil
}

func duplicateIDs(specs []Spec) error {
	first := map[string]Spec{}
	var errs []error
	for _, s := range specs {
		if prev, ok := first[s.ID]; ok {
			errs = append(errs, fmt.Errorf("%s:%d: spec id %q is already used at %s:%d; ids must be unique",
				s.File, s.Line, s.ID, prev.File, prev.Line))
			continue
		}
		first[s.ID] = s
	}
	return errors.Join(errs...)
}

// parseSpecs parses one spec file's content. An empty file holds no specs.
func parseSpecs(file string, data []byte) ([]Spec, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		return nil, fmt.Errorf("%s:%d: a spec file holds one YAML document", file, next.Line)
	}
	p := &specParser{file: file}
	specs := p.document(&doc)
	return specs, errors.Join(p.errs...)
}

// specParser walks a spec file's node tree, collecting errors with file:line.
type specParser struct {
	file string
	errs []error
}

func (p *specParser) errorf(n *yaml.Node, format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf("%s:%d: "+format, append([]any{p.file, n.Line}, args...)...))
}

func (p *specParser) document(doc *yaml.Node) []Spec {
	root := doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil
		}
		root = root.Content[0]
	}
	fields, _ := p.mapping(root, "the spec file", "specs")
	if fields == nil {
		return nil
	}
	list, ok := fields["specs"]
	if !ok {
		p.errorf(root, "the spec file needs a specs: list")
		return nil
	}
	list = resolve(list)
	if list.Kind != yaml.SequenceNode {
		p.errorf(list, "specs must be a list of specs")
		return nil
	}
	var specs []Spec
	for _, item := range list.Content {
		if s, ok := p.spec(resolve(item)); ok {
			specs = append(specs, s)
		}
	}
	return specs
}

func (p *specParser) spec(n *yaml.Node) (Spec, bool) {
	before := len(p.errs)
	s := Spec{File: p.file, Line: n.Line}
	fields, _ := p.mapping(n, "a spec", "id", "description", "applies_when", "assert", "pending")
	if fields == nil {
		return s, false
	}
	if v, ok := fields["id"]; !ok {
		p.errorf(n, "a spec needs an id")
	} else if s.ID, ok = p.text(v, "id"); ok && !validID(s.ID) {
		p.errorf(v, "id %q must be non-empty, without spaces or control characters", s.ID)
	}
	if v, ok := fields["description"]; ok {
		s.Description, _ = p.text(v, "description")
	}
	if v, ok := fields["applies_when"]; ok {
		s.AppliesWhen = p.appliesWhen(resolve(v))
	}
	if v, ok := fields["pending"]; ok {
		if s.Pending, ok = p.text(v, "pending"); ok && strings.TrimSpace(s.Pending) == "" {
			p.errorf(v, "pending must be a note saying who records the verdict and how")
		}
	}
	a, hasAssert := fields["assert"]
	switch _, hasPending := fields["pending"]; {
	case hasAssert && hasPending:
		p.errorf(n, "spec %q has both assert and pending; give one", s.ID)
	case !hasAssert && !hasPending:
		p.errorf(n, "spec %q needs an assert, or a pending note for a verdict a person records", s.ID)
	case hasAssert:
		s.Assert = p.assert(resolve(a))
	}
	return s, len(p.errs) == before
}

func (p *specParser) appliesWhen(n *yaml.Node) AppliesWhen {
	var aw AppliesWhen
	fields, _ := p.mapping(n, "applies_when", "task_id", "variant")
	for _, f := range []struct {
		key string
		dst *string
	}{{"task_id", &aw.TaskID}, {"variant", &aw.Variant}} {
		key, dst := f.key, f.dst
		v, ok := fields[key]
		if !ok {
			continue
		}
		if *dst, ok = p.text(v, "applies_when."+key); ok && !validScope(*dst) {
			p.errorf(v, "applies_when.%s %q is not a valid pattern", key, *dst)
		}
	}
	return aw
}

func (p *specParser) assert(n *yaml.Node) *Assert {
	fields, ok := p.mapping(n, "assert", KindEventually, KindAny, KindBefore, KindArtifact)
	if !ok {
		return nil
	}
	if len(fields) != 1 {
		p.errorf(n, "assert needs exactly one of eventually, any, before, artifact (found %d)", len(fields))
		return nil
	}
	a := &Assert{}
	for kind, v := range fields {
		v = resolve(v)
		switch kind {
		case KindEventually:
			a.Eventually = p.eventually(v)
		case KindAny:
			a.Any = &AnyAssert{DiffFiles: p.glob(v, "any", "diff.files")}
		case KindBefore:
			f, _ := p.mapping(v, "assert.before", "before", "after")
			a.Before = &BeforeAssert{Before: p.requiredGlob(v, f, "before", "before"), After: p.requiredGlob(v, f, "before", "after")}
		case KindArtifact:
			a.Artifact = &ArtifactAssert{Expect: p.glob(v, "artifact", "expect")}
		}
	}
	return a
}

func (p *specParser) eventually(n *yaml.Node) *EventuallyAssert {
	f, ok := p.mapping(n, "assert.eventually", "event", "path")
	if !ok {
		return &EventuallyAssert{}
	}
	e := &EventuallyAssert{}
	if v, ok := f["event"]; !ok {
		p.errorf(n, "assert.eventually needs event (git.commit, edit, command, question or answer)")
	} else if e.Event, ok = p.text(v, "assert.eventually.event"); ok {
		switch e.Event {
		case EventGitCommit, EventEdit, EventCommand, EventQuestion, EventAnswer:
		default:
			p.errorf(v, "assert.eventually.event %q is not one of git.commit, edit, command, question, answer", e.Event)
		}
	}
	if v, ok := f["path"]; ok {
		e.Path = p.checkedGlob(v, "assert.eventually.path")
		if e.Event == EventCommand {
			p.errorf(v, "assert.eventually.path does not apply to command events")
		}
	}
	return e
}

// glob reads the only key of an assert's mapping as a glob.
func (p *specParser) glob(n *yaml.Node, kind, key string) string {
	f, _ := p.mapping(n, "assert."+kind, key)
	return p.requiredGlob(n, f, kind, key)
}

func (p *specParser) requiredGlob(n *yaml.Node, f map[string]*yaml.Node, kind, key string) string {
	if f == nil {
		return ""
	}
	v, ok := f[key]
	if !ok {
		p.errorf(n, "assert.%s needs %s", kind, key)
		return ""
	}
	if s, ok := p.text(v, "assert."+kind+"."+key); ok && strings.HasPrefix(s, eventPrefix) {
		switch strings.TrimPrefix(s, eventPrefix) {
		case EventGitCommit, EventEdit, EventCommand, EventQuestion, EventAnswer:
		default:
			p.errorf(v, "assert.%s.%s %q: after event: name one of git.commit, edit, command, question, answer", kind, key, s)
		}
		return s
	}
	return p.checkedGlob(v, "assert."+kind+"."+key)
}

func (p *specParser) checkedGlob(v *yaml.Node, field string) string {
	s, ok := p.text(v, field)
	if !ok {
		return ""
	}
	if err := validGlob(s); err != nil {
		p.errorf(v, "%s %q: %v", field, s, err)
	}
	return s
}

// mapping checks that n is a mapping whose keys are among allowed, each at
// most once, and returns its values by key.
func (p *specParser) mapping(n *yaml.Node, what string, allowed ...string) (map[string]*yaml.Node, bool) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "%s must be a mapping", what)
		return nil, false
	}
	fields := map[string]*yaml.Node{}
	ok := true
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || !isAllowed(k.Value, allowed) {
			p.errorf(k, "unknown key %q in %s (allowed: %s)", k.Value, what, strings.Join(allowed, ", "))
			ok = false
			continue
		}
		if _, dup := fields[k.Value]; dup {
			p.errorf(k, "key %q appears twice in %s", k.Value, what)
			ok = false
			continue
		}
		fields[k.Value] = v
	}
	return fields, ok
}

// text reads a scalar as text. Numbers are taken as written; null, booleans,
// lists and mappings are refused.
func (p *specParser) text(n *yaml.Node, field string) (string, bool) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode {
		p.errorf(n, "%s must be a string", field)
		return "", false
	}
	switch n.ShortTag() {
	case "!!str", "!!int", "!!float":
		return n.Value, true
	}
	p.errorf(n, "%s must be a string, not %s", field, strings.TrimPrefix(n.ShortTag(), "!!"))
	return "", false
}

// resolve follows aliases to the anchored node. The schema's depth is
// fixed, so following aliases cannot blow up.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func isAllowed(key string, allowed []string) bool {
	for _, a := range allowed {
		if key == a {
			return true
		}
	}
	return false
}

func validID(id string) bool {
	if id == "" {
		return false
	}
	for _, r := range id {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == unicode.ReplacementChar {
			return false
		}
	}
	return true
}
