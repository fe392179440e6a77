package text

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A misspelt name's nearest valid one: one or two edits away for a name
// long enough, or sharing a prefix.
func TestNearest(t *testing.T) {
	names := []string{"timeout_sec", "user", "network_mode", "allowed_hosts", "sealed", "command", "cpus", "memory_mb", "memory", "os"}
	for _, tt := range []struct{ key, want string }{
		{"timeot_sec", "timeout_sec"}, // a deletion
		{"saeled", "sealed"},          // a transposition
		{"comand", "command"},         // a deletion
		{"cpu", "cpus"},               // short, one edit
		{"memroy_mb", "memory_mb"},    // a transposition
		{"memory_m", "memory_mb"},     // nearer than memory
		{"timeout", "timeout_sec"},    // a shared prefix, 4 edits
		{"allowed_hosts_v4", "allowed_hosts"},
		{"bogus_table", ""},
		{"x", ""},  // too short for two edits to mean anything
		{"ab", ""}, // two edits from "os", but that is all of it
		{"usr", "user"},
	} {
		assert.Equal(t, tt.want, Nearest(tt.key, names), tt.key)
	}
}

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"abc", "abc", 0},
		{"abc", "acb", 1},
		{"sealed", "saeled", 1},
		{"kitten", "sitting", 3},
		{"héllo", "hello", 1}, // runes, not bytes
	} {
		assert.Equal(t, tt.want, editDistance(tt.a, tt.b), "%q %q", tt.a, tt.b)
		assert.Equal(t, tt.want, editDistance(tt.b, tt.a), "%q %q", tt.b, tt.a)
	}
}
