package text

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestOneLine(t *testing.T) {
	long := strings.Repeat("word ", 30)
	tests := []struct {
		name, in string
		n        int
		want     string
	}{
		{"short stays", "a  b\n c", 20, "a b c"},
		{"cut between words", "one two three four", 10, "one two…"},
		{"a path the cut would split is kept whole", "build failed: see /tmp/results/20261205/build.log now", 25,
			"build failed: see /tmp/results/20261205/build.log…"},
		{"the log's path after the cut follows", long + "(build log: /r/20261205-072243-ed/t__oracle__1/build.log)", 40,
			"word word word word word word word word… /r/20261205-072243-ed/t__oracle__1/build.log"},
		{"a URL is not a path", long + "see https://example.com/x", 20, "word word word word…"},
		{"a path after the cut that the kept part names, or named twice, is said once",
			"changed (/logs/r.txt created; /logs/r.txt modified; /logs/s.txt written; /logs/s.txt read)", 30,
			"changed (/logs/r.txt created;… /logs/s.txt"},
		{"one long word", strings.Repeat("x", 30), 10, "xxxxxxxxx…"},
		{"a path that ends the line over the length is whole, and nothing is said cut", "failed: see (/tmp/results/20261205/grader.log)", 25,
			"failed: see (/tmp/results/20261205/grader.log)"},
		{"a path in parentheses after the cut is the path alone", long + "(/r/t__nop__1/grader.log)", 20,
			"word word word word… /r/t__nop__1/grader.log"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, OneLine(tt.in, tt.n))
		})
	}
}
