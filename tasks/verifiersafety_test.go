package tasks

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCheckVerifierIsolation(t *testing.T) {
	const df = "FROM flightdeck/base:bookworm\nWORKDIR /app\n"
	tests := []struct {
		name, testSh string
		native       bool
		rule         string
		line         int
	}{
		{"pytest in the work dir, as Harbor starts test.sh", "#!/bin/bash\npytest -q\n", false, rulePytestInTree, 2},
		{"pytest after a cd into the tree", "#!/bin/bash\ncp /tests/t.py /app/\ncd /app && python3 -I -m pytest -q t.py\n", false, rulePytestInTree, 3},
		{"pytest on a path in the tree", "#!/bin/bash\ncd /tmp\nuvx pytest /app/tests\n", false, rulePytestInTree, 3},
		{"pytest on the native tree", "#!/bin/bash\ncd \"$FLIGHTDECK_WORKDIR\"\npytest\n", true, rulePytestInTree, 3},
		{"with --noconftest", "#!/bin/bash\ncd /app && pytest --noconftest -q\n", false, "", 0},
		{"on the hidden tests, from the work dir", "#!/bin/bash\npytest /tests/test_outputs.py\n", false, "", 0},
		{"in a fresh dir", "#!/bin/bash\nw=$(mktemp -d)\ncp /tests/t.py \"$w\"\ncd \"$w\"\npytest -q\n", false, "", 0},
		{"a native grader starts outside the tree", "#!/bin/bash\npytest tests/\n", true, "", 0},
		{"python -m from the tree", "#!/bin/bash\npython3 -m unittest discover\n", false, rulePythonInTree, 2},
		{"python -c, isolated", "#!/bin/bash\npython3 -I -c 'print(1)'\n", false, "", 0},
		{"a script: its own dir goes first", "#!/bin/bash\npython3 /tests/check.py\n", false, "", 0},
		{"a comment", "#!/bin/bash\n# pytest -q\ncd /tmp\n", false, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, map[string]string{"environment/Dockerfile": df, "tests/test.sh": tt.testSh})
			got := checkVerifierIsolation(dir, tt.native)
			if tt.rule == "" {
				assert.Empty(t, got)
				return
			}
			if assert.Len(t, got, 1) {
				assert.Equal(t, tt.rule, got[0].Rule)
				assert.Equal(t, tt.line, got[0].Line)
				assert.Equal(t, SeverityWarning, got[0].Severity)
				assert.Contains(t, got[0].Message, "line ")
			}
		})
	}
}
