package files

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The digest is remembered while the file's size and time stay, and taken
// anew when either changes; a stale cache line never answers for a
// changed file.
func TestCachedSHA256(t *testing.T) {
	dir := t.TempDir()
	f, cache := filepath.Join(dir, "exe"), filepath.Join(dir, "cache", "digests")
	require.NoError(t, os.WriteFile(f, []byte("one"), 0o755))
	want, err := SHA256(f)
	require.NoError(t, err)
	got, err := CachedSHA256(f, cache)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.FileExists(t, cache)
	again, err := CachedSHA256(f, cache)
	require.NoError(t, err)
	assert.Equal(t, want, again)

	require.NoError(t, os.WriteFile(f, []byte("two"), 0o755))
	require.NoError(t, os.Chtimes(f, time.Now().Add(time.Hour), time.Now().Add(time.Hour)))
	changed, err := CachedSHA256(f, cache)
	require.NoError(t, err)
	fresh, _ := SHA256(f)
	assert.Equal(t, fresh, changed)
	assert.NotEqual(t, want, changed)

	_, err = CachedSHA256(filepath.Join(dir, "none"), cache)
	assert.Error(t, err)
}
