//go:build unix

package tasktest

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBaseEnv(t *testing.T) {
	t.Setenv("PYTHONPATH", "/forged")
	t.Setenv("HANGAR_REPO", "/forged")
	t.Setenv("TMPDIR", "/forged")
	t.Setenv("NODE_OPTIONS", "--require=/forged.js")
	t.Setenv("TASKTEST_KEPT", "1")

	env := BaseEnv()
	assert.Contains(t, env, "TASKTEST_KEPT=1")
	assert.Contains(t, env, "NODE_OPTIONS=--require=/forged.js", "only the prefixes asked for are dropped")
	assert.Contains(t, env, "PYTHONDONTWRITEBYTECODE=1")
	for _, kv := range []string{"PYTHONPATH=/forged", "HANGAR_REPO=/forged", "TMPDIR=/forged"} {
		assert.NotContains(t, env, kv)
	}
	assert.NotContains(t, BaseEnv("NODE_"), "NODE_OPTIONS=--require=/forged.js")
}

func TestRunErr(t *testing.T) {
	code, out, err := RunErr(t.TempDir(), nil, "sh", "-c", "echo out; echo err >&2; exit 3")
	require.NoError(t, err, "a non-zero exit is not an error")
	assert.Equal(t, 3, code)
	assert.Equal(t, "out\nerr\n", out)

	_, _, err = RunErr(t.TempDir(), nil, "tasktest-no-such-command")
	assert.ErrorIs(t, err, exec.ErrNotFound)
}
