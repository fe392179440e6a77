package runner

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/sandbox"
)

// A failed build's line: the step, the engine's word and the step's own
// last line, and the log only when there is one.
func TestBuildLineText(t *testing.T) {
	log := filepath.Join(t.TempDir(), "t.log")
	require.NoError(t, os.WriteFile(log, []byte("E: Unable to locate package x\n"), 0o644))
	step := &sandbox.BuildError{Image: "flightdeck/t:1", Step: "RUN apt-get install -y x", Message: "returned a non-zero code: 100",
		Tail: []string{"Reading package lists...", "E: Unable to locate package x"}}
	tests := []struct {
		name string
		line BuildLine
		want string
	}{
		{"a step failed", BuildLine{Task: "t", Err: step, Log: log},
			"failed  t  at RUN apt-get install -y x: returned a non-zero code: 100; E: Unable to locate package x (log: " + log + ")"},
		{"nothing built, no log", BuildLine{Task: "t", Err: errors.New("FROM pyhton:3: not on this engine"), Log: filepath.Join(t.TempDir(), "none.log")},
			"failed  t  FROM pyhton:3: not on this engine"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.line.String())
		})
	}
}
