package gitignore

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The cases follow git check-ignore, as Python's pathspec (which Harbor
// uses) implements it, on file paths.
func TestMatch(t *testing.T) {
	defaults := []string{"__pycache__/", "*.pyc", ".DS_Store", "*.swp", "*.swo", "*~"}
	tests := []struct {
		patterns []string
		path     string
		want     bool
	}{
		{defaults, "tests/__pycache__/test_x.cpython-312.pyc", true},
		{defaults, "__pycache__/x.py", true},
		{defaults, "environment/app/mod.pyc", true},
		{defaults, "environment/.DS_Store", true},
		{defaults, "solution/solve.sh~", true},
		{defaults, "tests/test.sh", false},
		{defaults, "environment/__pycache__", false}, // a file named so: only what is under a directory
		{[]string{"/build"}, "build/x", true},
		{[]string{"/build"}, "src/build/x", false},
		{[]string{"build"}, "src/build/x", true},
		{[]string{"docs/*.md"}, "docs/a.md", true},
		{[]string{"docs/*.md"}, "x/docs/a.md", false},
		{[]string{"docs/*.md"}, "docs/sub/a.md", false},
		{[]string{"a/**/b"}, "a/b", true},
		{[]string{"a/**/b"}, "a/x/y/b", true},
		{[]string{"**/logs"}, "deep/down/logs/x.txt", true},
		{[]string{"logs/**"}, "logs/a/b", true},
		{[]string{"*.log", "!keep.log"}, "keep.log", false},
		{[]string{"*.log", "!keep.log"}, "other.log", true},
		{[]string{"data[0-9].csv"}, "data7.csv", true},
		{[]string{"data[!0-9].csv"}, "data7.csv", false},
		{[]string{"data[!0-9].csv"}, "datax.csv", true},
		{[]string{"file?.txt"}, "file1.txt", true},
		{[]string{"file?.txt"}, "file10.txt", false},
		{[]string{"# a comment", "", "/"}, "anything", false},
		{[]string{`\#hash`}, "#hash", true},
		{[]string{"*"}, "a/b/c", true},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Compile(tt.patterns).Match(tt.path), "%v %s", tt.patterns, tt.path)
	}
}
