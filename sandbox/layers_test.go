package sandbox

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A container's writable layer is read where the overlay drivers keep it,
// under the engine's data root, as the inspector's mount of the store
// shows it; another driver, or a layer outside the store, is none.
func TestWritableLayer(t *testing.T) {
	for _, tc := range []struct {
		root, driver, upper, want string
	}{
		{"/var/lib/docker", "overlay2", "/var/lib/docker/overlay2/abc/diff", LayersDir + "/abc/diff"},
		{"/var/lib/docker", "fuse-overlayfs", "/var/lib/docker/fuse-overlayfs/abc/diff", LayersDir + "/abc/diff"},
		{"/home/u/.local/share/docker", "overlay2", "/home/u/.local/share/docker/overlay2/abc/diff", LayersDir + "/abc/diff"},
		{"/var/lib/docker", "overlay2", "/elsewhere/overlay2/abc/diff", ""},
		{"/var/lib/docker", "overlay2", "/var/lib/docker/overlay2x/abc/diff", ""},
		{"/var/lib/docker", "overlay2", "/var/lib/docker/overlay2/../x/diff", ""},
		{"/var/lib/docker", "overlay2", "", ""},
		{"/var/lib/docker", "btrfs", "/var/lib/docker/btrfs/subvolumes/abc", ""},
		{"/var/lib/docker", "overlayfs", "/var/lib/docker/overlayfs/abc/diff", ""}, // the containerd snapshotter's: not read
	} {
		d := &Docker{}
		d.layerStore.set(tc.root, tc.driver)
		assert.Equal(t, tc.want, d.writableLayer(context.Background(), tc.upper), "%s %s", tc.driver, tc.upper)
	}
}
