package tasks

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Dockerfile line that starts with no instruction is named with the
// nearest one; continuations, heredocs, comments and directives are not.
func TestCheckDockerfileInstructions(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "environment"), 0o755))
	df := "# syntax=docker/dockerfile:1\nFROM flightdeck/base:bookworm\nRUN apt-get update && \\\n    apt-get install -y curl\n" +
		"RUN <<EOF\nnotaninstruction here\nEOF\nrun echo lower case is fine\nRUNN echo hi\n  COPPY a b\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "environment", "Dockerfile"), []byte(df), 0o644))
	got := checkDockerfileInstructions(dir)
	require.Len(t, got, 2, "%v", got)
	assert.Equal(t, "line 9: RUNN is not a Dockerfile instruction: the build fails at this line; did you mean RUN?", got[0].Message)
	assert.Equal(t, SeverityWarning, got[0].Severity)
	assert.Equal(t, "dockerfile.instruction", got[0].Rule)
	assert.Contains(t, got[1].Message, "line 10: COPPY is not a Dockerfile instruction")
}
