package agent

import (
	"os/exec"
	"testing"

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
