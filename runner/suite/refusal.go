package suite

import (
	"errors"
	"strings"

	"github.com/flightdeck/flightdeck/tasks"
)

// Refusal is why a task cannot run here: the file, the field (empty when
// the whole file is meant, or when the message does not single one out) and
// the rule it breaks.
type Refusal struct {
	File  string `json:"file,omitempty"`
	Field string `json:"field,omitempty"`
	Rule  string `json:"rule"`
}

// String prints "file: field: rule", leaving out what is empty.
func (r Refusal) String() string {
	var parts []string
	for _, p := range []string{r.File, r.Field, r.Rule} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, ": ")
}

// RefusedTask is a task a run found and cannot run (a task that needs GPUs,
// a Windows task, one whose task.toml does not parse, ...). Its trials are
// recorded with outcome refused and the reason; the run's other tasks run.
type RefusedTask struct {
	ID  string `json:"task_id"`
	Dir string `json:"task_dir"`
	Refusal
}

// RefusalOf describes err, why a task cannot run. A *tasks.LoadError has
// its parts already; another error's message begins with the file it is
// about (one of files) and often a "[table].key" field, which are split
// off.
func RefusalOf(err error, files ...string) Refusal {
	var le *tasks.LoadError
	if errors.As(err, &le) {
		return Refusal{File: le.File, Field: le.Field, Rule: le.Rule}
	}
	msg := err.Error()
	var r Refusal
	for _, f := range files {
		if rest, ok := strings.CutPrefix(msg, f+": "); ok {
			r.File, msg = f, rest
			break
		}
	}
	if field, rest, ok := strings.Cut(msg, ": "); ok && r.File != "" && isFieldName(field) {
		r.Field, msg = field, rest
	}
	r.Rule = msg
	return r
}

// isFieldName reports whether s names a task.toml field as messages do:
// "[table].key" or "[table]".
func isFieldName(s string) bool {
	if !strings.HasPrefix(s, "[") || strings.ContainsAny(s, " \t\"") {
		return false
	}
	end := strings.Index(s, "]")
	return end > 1 && (end == len(s)-1 || s[end+1] == '.' && end+2 < len(s))
}
