package registry

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultCacheDir(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	d, err := DefaultCacheDir(env(map[string]string{"HOME": "/home/u"}))
	require.NoError(t, err)
	assert.Equal(t, "/home/u/.cache/flightdeck/tasks", d)
	d, err = DefaultCacheDir(env(map[string]string{"HOME": "/home/u", "XDG_CACHE_HOME": "/xdg"}))
	require.NoError(t, err)
	assert.Equal(t, "/xdg/flightdeck/tasks", d)
	d, err = DefaultCacheDir(env(map[string]string{"HOME": "/home/u", "XDG_CACHE_HOME": "relative"}))
	require.NoError(t, err)
	assert.Equal(t, "/home/u/.cache/flightdeck/tasks", d, "a relative XDG_CACHE_HOME is ignored, as the spec says")
	d, err = DefaultCacheDir(env(map[string]string{"XDG_CACHE_HOME": "/xdg", cacheDirEnv: "/mine"}))
	require.NoError(t, err)
	assert.Equal(t, "/mine", d)
}
