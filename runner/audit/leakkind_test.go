package audit

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/internal/vtrace"
)

const patch = `diff --git a/answer.txt b/answer.txt
new file mode 100644
index 0000000..d81cc07
--- /dev/null
+++ b/answer.txt
@@ -0,0 +1,2 @@
+forty-two is the answer
+the end
diff --git a/nonl.txt b/nonl.txt
new file mode 100644
index 0000000..1111111
--- /dev/null
+++ b/nonl.txt
@@ -0,0 +1 @@
+no newline here
\ No newline at end of file
diff --git a/old.txt b/old.txt
index 2222222..3333333 100644
--- a/old.txt
+++ b/old.txt
@@ -1 +1 @@
-a
+b
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
index 4444444..0000000
`

func TestPatchReading(t *testing.T) {
	assert.Equal(t, map[string]string{"d81cc07": "answer.txt", "1111111": "nonl.txt", "3333333": "old.txt"}, WrittenBlobs(patch))
	assert.Equal(t, map[string][]byte{
		"answer.txt": []byte("forty-two is the answer\nthe end\n"),
		"nonl.txt":   []byte("no newline here"),
	}, NewFiles(patch))
}

// A file of tests/ where the agent can read it is an input when the traced
// verifier reads it as data only and the oracle does not write it, an
// answer when the oracle writes the same bytes, and a leak otherwise (or
// with no trace to tell).
func TestClassifyLeaks(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	write("tests/data.txt", "alpha beta\ngamma delta\n")
	write("tests/expected.txt", "the expected answer\n")
	write("tests/test.sh", "#!/bin/bash\ncmp /tests/expected.txt /app/out.txt\n")
	blob, err := gitBlob(filepath.Join(dir, "tests/expected.txt"))
	require.NoError(t, err)
	g := &Grading{TestsDir: "/tests", WorkDir: "/app", Written: map[string]string{blob[:7]: "out.txt"}, Events: []vtrace.Event{
		{Op: "exec", Path: "/tests/test.sh", Argv: []string{"/tests/test.sh"}},
		{Op: "open", Path: "/tests/data.txt"},
		{Op: "open", Path: "/tests/expected.txt"},
	}}
	leaks := []string{
		"tests/data.txt is in the build context as environment/data.txt",
		"tests/data.txt is in the image at /app/data.txt",
		"tests/expected.txt is in the image at /opt/expected.txt",
		"tests/test.sh is in the image at /opt/checks/test.sh",
		"environment/Dockerfile:3: COPY copies tests/ into the image",
	}
	stand, inputs := classifyLeaks(dir, leaks, g)
	assert.Equal(t, []string{
		"tests/expected.txt is in the image at /opt/expected.txt: the answer is where the agent can read it (the oracle writes the same bytes to /app/out.txt)",
		"tests/test.sh is in the image at /opt/checks/test.sh",
		"environment/Dockerfile:3: COPY copies tests/ into the image",
	}, stand)
	assert.Equal(t, []string{"tests/data.txt (in the build context as environment/data.txt, in the image at /app/data.txt; the verifier reads it as data, the oracle does not write it)"}, inputs)

	stand, inputs = classifyLeaks(dir, leaks, nil)
	assert.Equal(t, leaks, stand, "no grading to tell: every one stands")
	assert.Empty(t, inputs)
}
