package runner

import (
	"testing"

	"github.com/distribution/reference"
	"github.com/flightdeck/flightdeck/runner/images"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRelevantImageMap(t *testing.T) {
	m := map[string]string{"python:3.12-slim": "flightdeck/base:bookworm", "node:20": "x:1"}
	assert.Equal(t, []string{"python:3.12-slim=flightdeck/base:bookworm"}, images.Relevant([]string{"python:3.12-slim", "golang:1"}, m))
	short, err := reference.ParseNormalizedNamed("python:3.12-slim")
	require.NoError(t, err)
	full := short.String() // the default registry's long form
	assert.Equal(t, []string{full + "=flightdeck/base:bookworm"},
		images.Relevant([]string{full}, m), "references match in normalized form")
}
