package sandbox

import (
	"context"
	"path"
	"strings"
	"sync"

	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// LayersDir is where a container started with ContainerSpec.ReadLayers
// sees the engine's store of containers' writable layers, read-only.
const LayersDir = "/run/flightdeck-layers"

// layerStore is where the engine's storage driver keeps each container's
// writable layer as a plain directory (<store>/<id>/diff), on the engine's
// host: known for the overlay drivers, "" for the others (btrfs, zfs, the
// containerd snapshotters), whose layers are read no other way than
// through the container.
type layerStore struct {
	mu    sync.Mutex
	known bool
	dir   string
}

// overlayDrivers keep a container's writable layer as a directory,
// <root>/<driver>/<id>/diff (GraphDriver.Data["UpperDir"]).
var overlayDrivers = []string{"overlay2", "fuse-overlayfs"}

// set records the store from the engine's data root and storage driver.
func (s *layerStore) set(root, driver string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.known, s.dir = true, ""
	for _, d := range overlayDrivers {
		if driver == d && path.IsAbs(root) {
			s.dir = path.Join(root, driver)
		}
	}
}

// layers returns the engine's layer store, asking the engine once.
func (d *Docker) layers(ctx context.Context) string {
	d.layerStore.mu.Lock()
	known, dir := d.layerStore.known, d.layerStore.dir
	d.layerStore.mu.Unlock()
	if known {
		return dir
	}
	res, err := d.api.Info(ctx, client.InfoOptions{})
	if err != nil {
		return "" // asked again next time; meanwhile no layer is read directly
	}
	d.layerStore.set(res.Info.DockerRootDir, res.Info.Driver)
	return d.layers(ctx)
}

// layersMount is the read-only mount of the layer store for
// ContainerSpec.ReadLayers, nil when the engine keeps no such store. It
// is not recursive: the running containers' merged views mounted inside
// the store stay out of it.
func (d *Docker) layersMount(ctx context.Context) *mount.Mount {
	dir := d.layers(ctx)
	if dir == "" {
		return nil
	}
	return &mount.Mount{Type: mount.TypeBind, Source: dir, Target: LayersDir, ReadOnly: true,
		BindOptions: &mount.BindOptions{NonRecursive: true}}
}

// writableLayer is a container's writable layer (the overlay's upper
// directory, from its inspection) as a container started with ReadLayers
// sees it, "" when it is not in the layer store.
func (d *Docker) writableLayer(ctx context.Context, upper string) string {
	if upper == "" || !path.IsAbs(upper) {
		return ""
	}
	store := d.layers(ctx)
	rel, ok := strings.CutPrefix(path.Clean(upper), store+"/")
	if store == "" || !ok || rel == "" {
		return ""
	}
	return path.Join(LayersDir, rel)
}
