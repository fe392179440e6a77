package tasks

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A separate verifier's environment is built from tests/, so Harbor
// starts a tests/docker-compose.yaml's services beside it: flightdeck,
// which would grade without them, refuses the task. In a verifier that
// runs in the agent's container, the file is only one of the tests.
func TestSeparateVerifierServicesAreRefused(t *testing.T) {
	compose := []byte("services:\n  db:\n    image: flightdeck/base:bookworm\n")
	for _, tc := range []struct {
		fixture string
		refused bool
	}{
		{"separate-verifier", true},
		{"reward-txt", false},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), tc.fixture)
			require.NoError(t, os.CopyFS(dir, os.DirFS(filepath.Join("..", "fixtures", "harbor", "tasks", tc.fixture))))
			require.NoError(t, os.WriteFile(filepath.Join(dir, TestsDir, "docker-compose.yaml"), compose, 0o644))
			_, err := Load(dir, LoadOptions{Local: true})
			if !tc.refused {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), filepath.Join("tests", "docker-compose.yaml"))
			assert.Contains(t, err.Error(), "a separate verifier's own services are not supported yet")
		})
	}
}
