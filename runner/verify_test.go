package runner

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVerifyOptionsCheck(t *testing.T) {
	err := VerifyOptions{Skip: []string{"attack"}}.check()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--skip attack: not a check")
	assert.Contains(t, err.Error(), "did you mean attacks?")
	err = VerifyOptions{Skip: []string{"zzzzzz"}}.check()
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "did you mean")
	assert.NoError(t, VerifyOptions{Skip: []string{"attacks", "leaks"}}.check())
}
