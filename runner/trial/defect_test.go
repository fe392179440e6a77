package trial

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tail of a verifier's log, and the line that named its failure when
// the script carried on past it.
func TestLogTail(t *testing.T) {
	tests := []struct {
		name, log, want string
	}{
		{"the last lines", "a\nb\nc\n", "b | c"},
		{"the buried cause first", "import\nModuleNotFoundError: No module named 'pytestx'\n" + strings.Repeat("noise\n", 30) + "end\n",
			"ModuleNotFoundError: No module named 'pytestx' | … | noise | end"},
		{"a cause in the tail is not repeated", "x\nnoise\nError: boom\n", "noise | Error: boom"},
		{"blank lines skipped", "\n\nonly\n\n", "only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "grader.log")
			require.NoError(t, os.WriteFile(p, []byte(tt.log), 0o644))
			assert.Equal(t, tt.want, logTail(p, 2))
		})
	}
	assert.Empty(t, logTail(filepath.Join(t.TempDir(), "none"), 2))
}
