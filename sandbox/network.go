package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// Kinds of the objects a multi-container trial adds, in LabelKind.
const (
	KindNetwork = "network"
	KindVolume  = "volume"
)

// NetworkSpec is a trial's private network.
type NetworkSpec struct {
	RunID   string
	TrialID string
	// Internal leaves the network without a route out: its containers
	// reach each other and nothing else.
	Internal bool
	// Waiting, when set, is told once why the network waits for a subnet
	// (every one of the ranges is taken).
	Waiting func(why string)
}

// networkRetries bounds the creates of one network that fail on the
// engine's side (a subnet another process took between the look and the
// create, say), each with a fresh subnet after a pause.
const networkRetries = 4

// CreateNetwork creates a bridge network carrying flightdeck's labels on a
// subnet of its own (subnets.go) and returns its name. Containers on it find
// each other by their aliases. When every subnet is taken it waits for one,
// saying so through spec.Waiting, until ctx ends.
func (d *Docker) CreateNetwork(ctx context.Context, spec NetworkSpec) (string, error) {
	name := containerName("flightdeck-" + spec.TrialID)
	waited := false
	var lastErr error
	for attempt := 0; attempt < networkRetries; {
		subnet, err := d.createOnSubnet(ctx, name, spec)
		switch {
		case err == nil:
			return name, nil
		case errors.Is(err, errNoSubnet):
			if !waited && spec.Waiting != nil {
				spec.Waiting(d.subnets.waitingText())
			}
			waited = true
			if err := sleepCtx(ctx, subnetWait); err != nil {
				return "", err
			}
			continue
		case ctx.Err() != nil:
			return "", ctx.Err()
		}
		lastErr = fmt.Errorf("on %s: %w", subnet, err)
		attempt++
		d.opts.Log.Debug("create network: retry with another subnet", "network", name, "subnet", subnet, "err", err)
		if err := sleepCtx(ctx, time.Duration(attempt)*300*time.Millisecond); err != nil {
			return "", err
		}
	}
	return "", engineErr("create network "+name, lastErr)
}

// createOnSubnet picks a free subnet and creates the network on it, one
// create of this process at a time so that the next sees this one's.
func (d *Docker) createOnSubnet(ctx context.Context, name string, spec NetworkSpec) (netip.Prefix, error) {
	d.subnets.mu.Lock()
	defer d.subnets.mu.Unlock()
	used, err := d.usedSubnets(ctx)
	if err != nil {
		return netip.Prefix{}, err
	}
	subnet, err := d.subnets.pick(used)
	if err != nil {
		return netip.Prefix{}, err
	}
	_, err = d.api.NetworkCreate(ctx, name, client.NetworkCreateOptions{
		Driver: "bridge", Internal: spec.Internal,
		IPAM:   &network.IPAM{Config: []network.IPAMConfig{{Subnet: subnet}}},
		Labels: d.ownedLabels(KindNetwork, spec.RunID, spec.TrialID, nil),
	})
	return subnet, err
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
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
