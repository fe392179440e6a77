package sandbox

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// Reap removes flightdeck's objects (containers, snapshot images, volumes,
// networks) selected by opts: those of opts.RunID when set, with
// OrphansOnly only those whose owner process is gone (same host, pid not
// alive or reused since), and with MinAge only those at least that old.
// Cached task images (and the preflight probe image) go only with
// opts.TaskImages, whatever their owner, except those whose tag moved on
// to a later build (see superseded), which always go; with RunID, only
// those labelled with that run. An image a running container uses is
// kept. Reap runs on a context the caller's cancellation does not reach,
// and carries on past failures, returning them joined.
func (d *Docker) Reap(ctx context.Context, opts ReapOptions) (Reaped, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*d.opts.CleanupTimeout)
	defer cancel()
	r := &reaper{d: d, opts: opts}
	r.containers(ctx)
	r.images(ctx)
	r.volumes(ctx)
	r.networks(ctx)
	err := errors.Join(r.errs...)
	log := d.logger().With("run", opts.RunID, "containers", r.out.Containers, "images", r.out.Images,
		"networks", r.out.Networks, "volumes", r.out.Volumes)
	if err != nil {
		log.Info("cleanup: reap left objects behind", "err", err)
	} else {
		log.Debug("cleanup: reaped")
	}
	return r.out, err
}

type reaper struct {
	d    *Docker
	opts ReapOptions
	out  Reaped
	errs []error
}

func (r *reaper) filters() client.Filters {
	f := make(client.Filters).Add("label", LabelManaged+"=true")
	if r.opts.RunID != "" {
		f.Add("label", LabelRun+"="+r.opts.RunID)
	}
	return f
}

// selected reports whether an object with these labels goes.
func (r *reaper) selected(labels map[string]string) bool {
	if r.opts.RunID != "" && labels[LabelRun] != r.opts.RunID {
		return false
	}
	if r.opts.MinAge > 0 && !olderThan(labels, r.opts.MinAge) {
		return false
	}
	if r.opts.LeaveKept && labels[LabelKeep] == "true" {
		return false
	}
	// Orphans of a test suite are its own to reap, and a test's reaper
	// leaves a user's alone.
	if r.opts.OrphansOnly && labels[LabelTest] != r.d.opts.Test {
		return false
	}
	return !r.opts.OrphansOnly || r.d.orphaned(labels)
}

// olderThan reports whether the object was created at least age ago; one
// without a readable created label counts as old.
func olderThan(labels map[string]string, age time.Duration) bool {
	created, err := time.Parse(time.RFC3339, labels[LabelCreated])
	return err != nil || time.Since(created) >= age
}

func (r *reaper) fail(err error) { r.errs = append(r.errs, err) }

// remove runs an engine removal, unless this is a dry run.
func (r *reaper) remove(f func() error) error {
	if r.opts.DryRun {
		return nil
	}
	return f()
}

func (r *reaper) removed(what string, labels map[string]string) {
	var ctx []string
	if v := labels[LabelRun]; v != "" {
		ctx = append(ctx, "run "+v)
	}
	if v := labels[LabelTrial]; v != "" {
		ctx = append(ctx, "trial "+v)
	}
	if v := labels[LabelOwnerPID]; v != "" && labels[LabelKind] != KindTaskImage {
		ctx = append(ctx, "pid "+v+"@"+labels[LabelOwnerHost])
	}
	if len(ctx) > 0 {
		what += " (" + strings.Join(ctx, ", ") + ")"
	}
	r.out.Removed = append(r.out.Removed, what)
}

func (r *reaper) containers(ctx context.Context) {
	list, err := r.d.api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: r.filters()})
	if err != nil {
		r.fail(engineErr("list containers", err))
		return
	}
	for _, c := range list.Items {
		if !r.selected(c.Labels) {
			continue
		}
		err := r.remove(func() error {
			_, err := r.d.api.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
			return err
		})
		if err != nil && !cerrdefs.IsNotFound(err) && !removalInProgress(err) {
			r.fail(engineErr("remove container "+short(c.ID), err))
			continue
		}
		name := short(c.ID)
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		r.out.Containers++
		r.removed("container "+name, c.Labels)
	}
}

func (r *reaper) images(ctx context.Context) {
	list, err := r.d.api.ImageList(ctx, client.ImageListOptions{Filters: r.filters()})
	if err != nil {
		r.fail(engineErr("list images", err))
		return
	}
	// Snapshots first: they are children of task images.
	for _, pass := range []bool{false, true} {
		for _, img := range list.Items {
			kind := img.Labels[LabelKind]
			cached := kind == KindTaskImage || kind == KindProbe
			if cached != pass {
				continue
			}
			tags := realTags(img.RepoTags)
			superseded := kind == KindTaskImage && len(tags) == 0 && r.superseded(ctx, img.ID)
			switch {
			case r.opts.RunID != "" && img.Labels[LabelRun] != r.opts.RunID:
				continue
			case cached && !r.opts.TaskImages && !superseded:
				continue
			case !cached && !r.selected(img.Labels):
				continue
			}
			name := img.ID
			if len(tags) > 0 {
				name = strings.Join(tags, ", ")
			}
			// Without --images a superseded image a container still
			// uses stays (no force).
			force := !cached || r.opts.TaskImages
			err := r.remove(func() error {
				_, err := r.d.api.ImageRemove(ctx, img.ID, client.ImageRemoveOptions{Force: force, PruneChildren: true})
				return err
			})
			if cerrdefs.IsConflict(err) {
				continue // a container uses it
			}
			if err != nil && !cerrdefs.IsNotFound(err) {
				r.fail(engineErr("remove image "+name, err))
				continue
			}
			r.out.Images++
			r.removed("image "+name, img.Labels)
		}
	}
}

// superseded reports whether an untagged task image is one whose tag
// moved on to a later build of the same context (another process built it
// too): garbage. The list it came from may be stale, so the image is read
// again. A build makes its image before it tags it, so an image never
// tagged may be a build in progress: it stays, as does one tagged less
// than Options.SupersededAge ago.
func (r *reaper) superseded(ctx context.Context, id string) bool {
	res, err := r.d.api.ImageInspect(ctx, id)
	if err != nil || len(realTags(res.RepoTags)) > 0 {
		return false
	}
	last := res.Metadata.LastTagTime
	return !last.IsZero() && time.Since(last) >= r.d.opts.SupersededAge
}

// realTags drops the "<none>:<none>" older engines list for untagged images.
func realTags(tags []string) []string {
	var out []string
	for _, t := range tags {
		if t != "<none>:<none>" {
			out = append(out, t)
		}
	}
	return out
}

func (r *reaper) volumes(ctx context.Context) {
	list, err := r.d.api.VolumeList(ctx, client.VolumeListOptions{Filters: r.filters()})
	if err != nil {
		r.fail(engineErr("list volumes", err))
		return
	}
	for _, v := range list.Items {
		if !r.selected(v.Labels) {
			continue
		}
		if err := r.remove(func() error {
			_, err := r.d.api.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true})
			return err
		}); err != nil && !cerrdefs.IsNotFound(err) {
			r.fail(engineErr("remove volume "+v.Name, err))
			continue
		}
		r.out.Volumes++
		r.removed("volume "+v.Name, v.Labels)
	}
}

func (r *reaper) networks(ctx context.Context) {
	list, err := r.d.api.NetworkList(ctx, client.NetworkListOptions{Filters: r.filters()})
	if err != nil {
		r.fail(engineErr("list networks", err))
		return
	}
	for _, n := range list.Items {
		if !r.selected(n.Labels) {
			continue
		}
		if err := r.remove(func() error {
			_, err := r.d.api.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{})
			return err
		}); err != nil && !cerrdefs.IsNotFound(err) {
			r.fail(engineErr("remove network "+n.Name, err))
			continue
		}
		r.out.Networks++
		r.removed("network "+n.Name, n.Labels)
	}
}

// orphaned reports whether an object's owner process is gone: the owner
// ran on this host, and its pid is not alive or now belongs to a process
// that started after the object was created.
func (d *Docker) orphaned(labels map[string]string) bool {
	if labels[LabelOwnerHost] != d.host {
		return false
	}
	pid, err := strconv.Atoi(labels[LabelOwnerPID])
	if err != nil || pid <= 0 {
		return true
	}
	if pid == d.pid {
		return false
	}
	if !processAlive(pid) {
		return true
	}
	created, err := time.Parse(time.RFC3339, labels[LabelCreated])
	if err != nil {
		return false
	}
	started, ok := processStart(pid)
	return ok && started.After(created.Add(2*time.Second))
}
