package tasks

import (
	"bytes"
	"reflect"
	"sort"
	"strings"

	"github.com/flightdeck/flightdeck/internal/text"
	"github.com/pelletier/go-toml/v2"
)

// The keys task.toml may hold, for `task check`'s unknown-key findings.
// Harbor ignores a key it does not know, so a misspelt timeout silently
// takes its default; Check names every key neither Harbor nor flightdeck
// knows, with the nearest valid key.

// keyNode is the schema of one key: the keys of the table it holds.
type keyNode struct {
	children map[string]*keyNode
	free     bool // any key below is valid: [metadata], env tables
}

// leaf reports whether the key holds a value of its own rather than a
// table of known keys: any value is accepted, and nothing below is checked
// (a table there is a type error, which Load reports).
func (n *keyNode) leaf() bool { return !n.free && len(n.children) == 0 }

// child returns the node of key k, making it when missing.
func (n *keyNode) child(k string) *keyNode {
	if n.children == nil {
		n.children = map[string]*keyNode{}
	}
	c, ok := n.children[k]
	if !ok {
		c = &keyNode{}
		n.children[k] = c
	}
	return c
}

// names lists the keys of the table, sorted.
func (n *keyNode) names() []string {
	out := make([]string, 0, len(n.children))
	for k := range n.children {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// add records the dotted paths under n; a last part "*" makes its table
// free-form. Arrays of tables are transparent: [[steps]]'s keys are
// steps.name, steps.agent.timeout_sec, ...
func (n *keyNode) add(paths ...string) *keyNode {
	for _, p := range paths {
		node := n
		for _, part := range strings.Split(p, ".") {
			if part == "*" {
				node.free = true
				break
			}
			node = node.child(part)
		}
	}
	return n
}

// prefixed puts prefix + "." before every path.
func prefixed(prefix string, paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = prefix + "." + p
	}
	return out
}

// Harbor's task.toml (harbor.models.task.config, schema 1.4 and the older
// formats), key by key. A key here that flightdeck does not read is still
// valid: Harbor tasks must check clean.
var (
	harborHealthcheckKeys = []string{
		"command", "interval_sec", "timeout_sec", "start_period_sec", "start_interval_sec", "retries",
	}
	harborEnvironmentKeys = append([]string{
		"build_timeout_sec", "docker_image", "os", "workdir",
		"cpus", "memory_mb", "storage_mb", "memory", "storage", // memory, storage: deprecated strings
		"gpus", "gpu_types", "tpu.type", "tpu.topology",
		"allow_internet", "network_mode", "allowed_hosts",
		"env.*", "skills_dir",
		"mcp_servers.name", "mcp_servers.transport", "mcp_servers.url", "mcp_servers.command", "mcp_servers.args",
	}, prefixed("healthcheck", harborHealthcheckKeys)...)
	harborAgentKeys = []string{"timeout_sec", "user", "network_mode", "allowed_hosts"}
	// harborContinuousKeys are [verifier.continuous], verifying submissions
	// during the agent's phase (some releases).
	harborContinuousKeys = []string{
		"enabled", "watch_dir", "results_dir", "return_results_to_agent", "poll_interval_sec",
		"max_concurrent", "max_submissions", "drain_pending_on_stop", "shared_scheduler_lock_path",
		"shared_result_cache_dir", "reuse_matching_result_for_final", "submission_path", "timeout_sec",
		"artifact_name",
	}
	harborVerifierKeys = concat(
		[]string{
			"timeout_sec", "env.*", "user", "network_mode", "allowed_hosts", "environment_mode",
			"collect.command", "collect.service", "collect.timeout_sec", "collect.user",
		},
		prefixed("environment", harborEnvironmentKeys),
		prefixed("continuous", harborContinuousKeys),
	)
	harborArtifactKeys = []string{"source", "destination", "exclude", "service"}
	harborStepKeys     = concat(
		[]string{"name", "min_reward.*"},
		prefixed("agent", harborAgentKeys),
		prefixed("verifier", harborVerifierKeys),
		prefixed("healthcheck", harborHealthcheckKeys),
		prefixed("artifacts", harborArtifactKeys),
	)
	harborKeys = concat(
		[]string{
			"schema_version",
			"version", // schema 1.0's schema_version
			"source",  // the dataset the task came from
			"multi_step_reward_strategy",
			"multi_step_reward_mode", // before schema 1.3; Harbor drops it
			"metadata.*",             // free-form
			"task.name", "task.version", "task.description", "task.keywords",
			"task.authors.name", "task.authors.email",
			"solution.env.*",
		},
		prefixed("artifacts", harborArtifactKeys),
		prefixed("agent", harborAgentKeys),
		prefixed("verifier", harborVerifierKeys),
		prefixed("environment", harborEnvironmentKeys),
		prefixed("steps", harborStepKeys),
	)
)

func concat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// flightdeckTable is the name of flightdeck's own table: an unknown key
// below it is an error, since nothing else reads it.
const flightdeckTable = "flightdeck"

// taskSchema is every key task.toml may hold: Harbor's, and under
// [flightdeck] whatever FlightdeckKeys reads.
func taskSchema() *keyNode {
	root := (&keyNode{}).add(harborKeys...)
	root.child(flightdeckTable).add(structKeys(reflect.TypeFor[FlightdeckKeys]())...)
	return root
}

// structKeys lists the dotted paths a struct reads through its toml tags:
// a map is free-form, a struct (or a pointer or slice of one) a table.
func structKeys(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice || ft.Kind() == reflect.Array {
			ft = ft.Elem()
		}
		switch ft.Kind() {
		case reflect.Map:
			out = append(out, name+".*")
		case reflect.Struct:
			sub := structKeys(ft)
			if len(sub) == 0 {
				out = append(out, name)
			}
			out = append(out, prefixed(name, sub)...)
		default:
			out = append(out, name)
		}
	}
	return out
}

// lookup walks path from n: the length of the longest prefix of path that
// is valid (len(path) when all of it is), and the node of the last valid
// part. Below a free-form table or a leaf everything is valid.
func (n *keyNode) lookup(path []string) (int, *keyNode) {
	node := n
	for i, part := range path {
		if node.free || node.leaf() {
			return len(path), node
		}
		c, ok := node.children[part]
		if !ok {
			return i, node
		}
		node = c
	}
	return len(path), node
}

// unknownKey is a key of task.toml that neither Harbor nor flightdeck
// knows.
type unknownKey struct {
	line    int      // 1-based
	path    []string // from the document's root to the unknown part
	table   bool     // a table header names it
	suggest string   // the nearest valid key, as it would be written; may be empty
}

// flightdeck reports whether the key is in flightdeck's own table.
func (u unknownKey) flightdeck() bool { return len(u.path) > 1 && u.path[0] == flightdeckTable }

// unknownKeys lists the unknown keys of task.toml (src) in file order, each
// once: below an unknown key or table nothing more is reported. Keys inside
// inline tables count too. Nothing is reported for a file that does not
// parse: that is a finding of its own.
func unknownKeys(src []byte) []unknownKey {
	if _, err := parseDoc(src); err != nil {
		return nil
	}
	stmts, err := scanTOML(src)
	if err != nil {
		return nil
	}
	u := keyWalk{schema: taskSchema(), seen: map[string]bool{}}
	for _, st := range stmts {
		line := 1 + bytes.Count(src[:st.lineStart], []byte("\n"))
		node := u.check(st.fullPath(), line, st.kind != stmtKeyValue)
		if node == nil || st.kind != stmtKeyValue || node.free || node.leaf() {
			continue
		}
		val := src[st.valStart:st.valEnd]
		if len(val) == 0 || (val[0] != '{' && val[0] != '[') {
			continue
		}
		var doc map[string]any
		if toml.Unmarshal(append([]byte("v = "), crlfToLF(val)...), &doc) == nil {
			u.inline(st.fullPath(), doc["v"], line)
		}
	}
	return u.found
}

// keyWalk checks key paths against the schema, once each.
type keyWalk struct {
	schema *keyNode
	seen   map[string]bool // the unknown paths reported, joined by NUL
	found  []unknownKey
}

// check returns the node of path, or nil (reporting the unknown part once)
// when path is not valid.
func (u *keyWalk) check(path []string, line int, header bool) *keyNode {
	n, parent := u.schema.lookup(path)
	if n == len(path) {
		return parent
	}
	bad := path[:n+1]
	id := strings.Join(bad, "\x00")
	if u.seen[id] {
		return nil
	}
	u.seen[id] = true
	k := bad[n]
	suggest := text.Nearest(k, parent.names())
	if n == 0 {
		if fd, ok := u.schema.children[flightdeckTable].children[k]; ok {
			// A table of the older format, before it moved under [flightdeck].
			suggest = formatKey([]string{flightdeckTable, k})
			if !fd.leaf() {
				suggest = "[" + flightdeckTable + "." + quoteKey(k) + "]"
			}
		}
	}
	u.found = append(u.found, unknownKey{line: line, path: bad, table: header && n+1 == len(path), suggest: suggest})
	return nil
}

// inline checks the keys of the inline table (or array of them) v that
// the key at path holds.
func (u *keyWalk) inline(path []string, v any, line int) {
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			u.inline(path, e, line)
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := append(append([]string{}, path...), k)
			if c := u.check(p, line, false); c != nil && !c.free && !c.leaf() {
				u.inline(p, v[k], line)
			}
		}
	}
}
