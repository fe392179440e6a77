package agent

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParsePlanted(t *testing.T) {
	log := "=== attack: conftest\nattack: as uid 0\nplanted: /app/conftest.py\nnoise\nplanted: /conftest.py\nplanted: /app/conftest.py\n"
	assert.Equal(t, []string{"/app/conftest.py", "/conftest.py"}, ParsePlanted(log))
	assert.Empty(t, ParsePlanted("nothing here\n"))
	assert.True(t, RanAsRoot(log))
	assert.False(t, RanAsRoot("attack: as uid 1000\n"))
	assert.False(t, RanAsRoot("attack: as uid 00\n"))
}

// Every attack's script is bash that parses, and each hack is known.
func TestAttackScriptsParse(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal("bash is needed to check the attacks' scripts")
	}
	require.Len(t, attackScripts, len(Attacks))
	for _, name := range Attacks {
		script, ok := attackScripts[name]
		require.True(t, ok, name)
		out, err := exec.Command("bash", "-n", "-c", attackCommon+script).CombinedOutput()
		assert.NoError(t, err, "%s: %s", name, out)
	}
}

// A stub prints what its file's own run printed, where the tracer saw
// it, and the verifier's output otherwise.
func TestRewriteStubPrints(t *testing.T) {
	dir := t.TempDir()
	own, other := filepath.Join(dir, "verify.py"), filepath.Join(dir, "helper.sh")
	for _, f := range []string{own, other} {
		require.NoError(t, os.WriteFile(f, []byte("original\n"), 0o644))
	}
	script := rewriteScript(&suite.Rewrite{Files: []string{own, other}, Output: "the verifier's output\n",
		Printed: map[string]string{own: "SUCCESS\n"}})
	out, err := exec.Command("bash", "-c", attackCommon+script, "attack").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, []string{own, other}, ParsePlanted(string(out)))
	got, err := exec.Command("python3", own).Output()
	require.NoError(t, err)
	assert.Equal(t, "SUCCESS\n", string(got))
	got, err = exec.Command("sh", other).Output()
	require.NoError(t, err)
	assert.Equal(t, "the verifier's output\n", string(got))
}
