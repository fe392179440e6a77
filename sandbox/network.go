package sandbox

import (
	"context"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// Kinds of the objects a multi-container trial adds, in LabelKind.
const (
	KindNetwork = "network"
	KindVolume  = "volume"
)

// NetworkSpec describes a private network for one trial's containers.
type NetworkSpec struct {
	RunID   string
	TrialID string
	// Internal leaves the network without a route out: its containers
	// reach each other and nothing else.
	Internal bool
}

// CreateNetwork creates a bridge network carrying flightdeck's labels and
// returns its name. Containers on it find each other by their aliases.
func (d *Docker) CreateNetwork(ctx context.Context, spec NetworkSpec) (string, error) {
	name := containerName("flightdeck-" + spec.TrialID)
	_, err := d.api.NetworkCreate(ctx, name, client.NetworkCreateOptions{
		Driver: "bridge", Internal: spec.Internal,
		Labels: d.ownedLabels(KindNetwork, spec.RunID, spec.TrialID, nil),
	})
	if err != nil {
		return "", engineErr("create network "+name, err)
	}
	return name, nil
}

// RemoveNetwork removes a network, on a context the caller's cancellation
// does not reach; one already gone is fine.
func (d *Docker) RemoveNetwork(ctx context.Context, name string) error {
	cctx, cancel := d.cleanupContext(ctx)
	defer cancel()
	if _, err := d.api.NetworkRemove(cctx, name, client.NetworkRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
		return engineErr("remove network "+name, err)
	}
	return nil
}

// CreateVolume creates a named volume carrying flightdeck's labels, its
// name made unique from hint, and returns the name.
func (d *Docker) CreateVolume(ctx context.Context, runID, trialID, hint string) (string, error) {
	name := containerName(fmt.Sprintf("flightdeck-%s-%s", trialID, hint))
	_, err := d.api.VolumeCreate(ctx, client.VolumeCreateOptions{
		Name: name, Labels: d.ownedLabels(KindVolume, runID, trialID, nil),
	})
	if err != nil {
		return "", engineErr("create volume "+name, err)
	}
	return name, nil
}

// RemoveVolume removes a volume, on a context the caller's cancellation
// does not reach; one already gone is fine.
func (d *Docker) RemoveVolume(ctx context.Context, name string) error {
	cctx, cancel := d.cleanupContext(ctx)
	defer cancel()
	if _, err := d.api.VolumeRemove(cctx, name, client.VolumeRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
		return engineErr("remove volume "+name, err)
	}
	return nil
}
