package images

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// memStore is an engine's image store in memory: ids by ref, and the
// bytes a save wrote and a load read.
type memStore struct {
	ids    map[string]string
	saved  []string
	loaded []byte
	onLoad map[string]string // ids the load sets
}

func (m *memStore) ImageID(_ context.Context, ref string) (string, error) { return m.ids[ref], nil }
func (m *memStore) SaveImages(_ context.Context, refs []string, w io.Writer) error {
	m.saved = refs
	_, err := w.Write([]byte("saved images"))
	return err
}
func (m *memStore) LoadImages(_ context.Context, r io.Reader) error {
	data, err := io.ReadAll(r)
	m.loaded = data
	for ref, id := range m.onLoad {
		m.ids[ref] = id
	}
	return err
}

func TestBundleRoundTrip(t *testing.T) {
	ctx := context.Background()
	src := &memStore{ids: map[string]string{"task-a": "sha256:a", "task-b": "sha256:b", "base": "sha256:base"}}
	m, refs, err := ManifestFor(ctx, src, []Built{{Task: "a", Ref: "task-a", Bases: []string{"base"}}, {Task: "b", Ref: "task-b", Bases: []string{"base"}}})
	require.NoError(t, err)
	assert.Equal(t, []string{"task-a", "task-b", "base"}, refs, "each image once, bases after the task images")
	path := filepath.Join(t.TempDir(), "bundle.tar")
	require.NoError(t, WriteBundle(ctx, src, path, m, refs))
	assert.Equal(t, refs, src.saved)

	dst := &memStore{ids: map[string]string{}, onLoad: src.ids}
	got, err := LoadBundle(ctx, dst, path)
	require.NoError(t, err)
	assert.Equal(t, "saved images", string(dst.loaded))
	assert.Equal(t, m.Images, got.Images)
	assert.Equal(t, m.Bases, got.Bases)

	// A load that does not give the manifest's IDs is refused, naming the image.
	wrong := &memStore{ids: map[string]string{}, onLoad: map[string]string{"task-a": "sha256:other", "task-b": "sha256:b", "base": "sha256:base"}}
	_, err = LoadBundle(ctx, wrong, path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "task-a")
}

func TestManifestForRefusesAnImageNotOnTheEngine(t *testing.T) {
	_, _, err := ManifestFor(context.Background(), &memStore{ids: map[string]string{}}, []Built{{Task: "a", Ref: "task-a"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "task-a is not on the engine")
}

func TestLoadBundleRefusesWhatIsNotABundle(t *testing.T) {
	dir := t.TempDir()
	n := 0
	tarOf := func(entries ...string) string {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for i := 0; i+1 < len(entries); i += 2 {
			require.NoError(t, tw.WriteHeader(&tar.Header{Name: entries[i], Mode: 0o644, Size: int64(len(entries[i+1]))}))
			_, err := tw.Write([]byte(entries[i+1]))
			require.NoError(t, err)
		}
		require.NoError(t, tw.Close())
		n++
		p := filepath.Join(dir, fmt.Sprintf("bundle-%d.tar", n))
		require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
		return p
	}
	cases := map[string]struct {
		path string
		want string
	}{
		"no manifest":    {tarOf(imagesEntry, "x"), "comes before"},
		"no images":      {tarOf(manifestEntry, `{"schema": 1}`), "it needs"},
		"a later schema": {tarOf(manifestEntry, `{"schema": 9}`, imagesEntry, "x"), "schema 9"},
		"not json":       {tarOf(manifestEntry, `nope`, imagesEntry, "x"), manifestEntry},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := LoadBundle(context.Background(), &memStore{ids: map[string]string{}}, tc.path)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := LoadBundle(context.Background(), &memStore{ids: map[string]string{}}, filepath.Join(dir, "missing.tar"))
	require.Error(t, err)
}
