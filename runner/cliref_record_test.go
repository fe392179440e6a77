package runner

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// The re-enactment's record matches every fixture as it is. A fixture (or
// the script, or the base image's recipe) changed without re-recording
// makes the engine test re-enact every such fixture: on a cold CI machine
// that is a quarter of an hour of the whole run's budget, paid on every
// run until someone records it. This test needs no engine, so the change
// that forgot it fails at once, naming the command that records.
func TestHarborCLIRecordIsCurrent(t *testing.T) {
	root := harborFixtureDir(t)
	exp := readHarborExpected(t)
	data, err := os.ReadFile(filepath.Join(root, harborCLIRecord))
	require.NoError(t, err)
	var rec harborCLIRecorded
	require.NoError(t, json.Unmarshal(data, &rec), harborCLIRecord)
	var stale []string
	for _, name := range slices.Sorted(maps.Keys(exp.Tasks)) {
		inputs, err := cliInputs(filepath.Join(root, "tasks", name), exp.ImageMap)
		require.NoError(t, err, name)
		if r, ok := rec.Tasks[name]; !ok || r.Inputs != inputs {
			stale = append(stale, name)
		}
	}
	require.Empty(t, stale, "fixtures/harbor/%s does not record the re-enactment of these fixtures as they are; "+
		"record it with: go test ./runner -run 'TestEngineHarborFixtures$' -update-harbor-cli", harborCLIRecord)
}
