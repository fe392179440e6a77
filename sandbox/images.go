package sandbox

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// CachedImage is one of flightdeck's task images on the engine.
type CachedImage struct {
	ID   string
	Refs []string // its tags (flightdeck/<task>:<digest16>)
	// Size is the bytes of its own layers, those no other image on the
	// engine shares (its base image's are not counted): what removing
	// it frees. -1: not known from the listing (see TaskImageSizes).
	Size int64
	// Total is the image's whole size, base layers included.
	Total   int64
	Created time.Time
	// InUse: a container (running or not) is made from it; such an image
	// is never pruned.
	InUse bool
}

// ImageStore lists, saves and loads the images flightdeck keeps: the
// image cache's view of the engine.
type ImageStore interface {
	// TaskImages lists flightdeck's cached task images, from the image
	// list alone: an image's own size is -1 where that list cannot tell
	// it (an engine before API 1.42).
	TaskImages(ctx context.Context) ([]CachedImage, error)
	// TaskImageSizes is the own size of every task image, by image ID,
	// from the engine's disk usage: seconds on a large engine.
	TaskImageSizes(ctx context.Context) (map[string]int64, error)
	// MeasureImages is the own size of the task images ids, each its
	// size less its base image's, from their layers: no disk usage.
	MeasureImages(ctx context.Context, ids []string) (map[string]int64, error)
	// SaveImages writes the images refs name, with their layers, as one
	// `docker save` tar stream.
	SaveImages(ctx context.Context, refs []string, w io.Writer) error
	// LoadImages loads a `docker save` tar stream.
	LoadImages(ctx context.Context, r io.Reader) error
	// RemoveImage removes an image (its tag; the image when no other tag
	// is left).
	RemoveImage(ctx context.Context, ref string) error
	// ImageID is the engine's ID of ref; "" when it is not on the engine.
	ImageID(ctx context.Context, ref string) (string, error)
	// TaskImageRepos lists the repositories of the task images on the
	// engine (TaskImageRepo names a task's).
	TaskImageRepos(ctx context.Context) (map[string]bool, error)
}

var _ ImageStore = (*Docker)(nil)

// TaskImages lists flightdeck's cached task images, with whether a
// container uses each. It never asks for the engine's disk usage (seconds
// on a large engine, and one at a time): an engine before API 1.42 lists
// no shared sizes, and their own size is then -1, for the caller to take
// from its own records or from TaskImageSizes.
func (d *Docker) TaskImages(ctx context.Context) ([]CachedImage, error) {
	f := make(client.Filters).Add("label", LabelManaged+"=true").Add("label", LabelKind+"="+KindTaskImage)
	list, err := d.api.ImageList(ctx, client.ImageListOptions{Filters: f, SharedSize: true})
	if err != nil {
		return nil, engineErr("list task images", err)
	}
	cs, err := d.api.ContainerList(ctx, client.ContainerListOptions{All: true})
	if err != nil {
		return nil, engineErr("list containers", err)
	}
	used := map[string]bool{}
	for _, c := range cs.Items {
		used[c.ImageID] = true
	}
	var out []CachedImage
	for _, img := range list.Items {
		out = append(out, CachedImage{ID: img.ID, Refs: realTags(img.RepoTags), Size: ownSize(img.Size, img.SharedSize),
			Total: img.Size, Created: time.Unix(img.Created, 0).UTC(), InUse: used[img.ID]})
	}
	slices.SortFunc(out, func(a, b CachedImage) int {
		return strings.Compare(strings.Join(a.Refs, ","), strings.Join(b.Refs, ","))
	})
	return out, nil
}

// ownSize is an image's size less what it shares with other images; -1
// when shared is not known.
func ownSize(size, shared int64) int64 {
	switch {
	case shared < 0:
		return -1
	case shared <= size:
		return size - shared
	}
	return size
}

// TaskImageSizes is the own size of each task image, by ID, from the
// engine's disk usage.
func (d *Docker) TaskImageSizes(ctx context.Context) (map[string]int64, error) {
	du, err := d.diskUsage(ctx)
	if err != nil {
		return nil, engineErr("read the engine's disk usage", err)
	}
	out := map[string]int64{}
	for _, img := range du.Images.Items {
		if img.Labels[LabelKind] == KindTaskImage {
			out[img.ID] = ownSize(img.Size, img.SharedSize)
		}
	}
	return out, nil
}

// MeasureImages is the own size of each of the task images ids: its size
// less that of the largest image (not a task image) whose layers it
// starts with, its base. It asks for the image list and a few image
// inspections, never the disk usage.
func (d *Docker) MeasureImages(ctx context.Context, ids []string) (map[string]int64, error) {
	list, err := d.api.ImageList(ctx, client.ImageListOptions{})
	if err != nil {
		return nil, engineErr("list images", err)
	}
	type candidate struct {
		id     string
		size   int64
		layers []string
		read   bool
	}
	var bases []*candidate
	for _, img := range list.Items {
		if img.Labels[LabelKind] != KindTaskImage {
			bases = append(bases, &candidate{id: img.ID, size: img.Size})
		}
	}
	slices.SortFunc(bases, func(a, b *candidate) int { return cmp.Compare(b.size, a.size) })
	out := map[string]int64{}
	for _, id := range ids {
		img, err := d.api.ImageInspect(ctx, id)
		if cerrdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, engineErr("inspect image "+short(id), err)
		}
		own := img.Size
		for _, b := range bases {
			if b.size > img.Size {
				continue
			}
			if !b.read {
				b.read = true
				if bi, err := d.api.ImageInspect(ctx, b.id); err == nil {
					b.layers = bi.RootFS.Layers
				}
			}
			if len(b.layers) > 0 && len(b.layers) <= len(img.RootFS.Layers) && slices.Equal(b.layers, img.RootFS.Layers[:len(b.layers)]) {
				own = img.Size - b.size
				break
			}
		}
		out[id] = max(own, 0)
	}
	return out, nil
}

// builtSize is the own size of a task image just built (MeasureImages);
// -1 when it cannot be told.
func (d *Docker) builtSize(ctx context.Context, id string) int64 {
	sizes, err := d.MeasureImages(ctx, []string{id})
	if n, ok := sizes[id]; err == nil && ok {
		return n
	}
	return -1
}

// diskUsage asks for the images' disk usage. The engine computes one at a
// time and refuses a second while the first runs ("a disk usage operation
// is already running": another flightdeck, a `docker system df`), so a
// refusal is waited out, up to a few minutes.
func (d *Docker) diskUsage(ctx context.Context) (client.DiskUsageResult, error) {
	delay := 500 * time.Millisecond
	deadline := time.Now().Add(3 * time.Minute)
	for {
		du, err := d.api.DiskUsage(ctx, client.DiskUsageOptions{Images: true, Verbose: true})
		if err == nil || !strings.Contains(err.Error(), "disk usage operation is already running") || time.Now().After(deadline) {
			return du, err
		}
		select {
		case <-ctx.Done():
			return du, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// SaveImages writes refs as one `docker save` stream.
func (d *Docker) SaveImages(ctx context.Context, refs []string, w io.Writer) error {
	rc, err := d.api.ImageSave(ctx, refs)
	if err != nil {
		return engineErr("save images", err)
	}
	defer rc.Close()
	if _, err := io.Copy(w, rc); err != nil {
		return engineErr("save images", err)
	}
	return nil
}

// LoadImages loads a `docker save` stream; the engine's messages are read
// to the end, and an error among them is the load's.
func (d *Docker) LoadImages(ctx context.Context, r io.Reader) error {
	res, err := d.api.ImageLoad(ctx, r, client.ImageLoadWithQuiet(true))
	if err != nil {
		return engineErr("load images", err)
	}
	defer res.Close()
	dec := json.NewDecoder(res)
	for {
		var m struct {
			Error *struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return engineErr("load images", err)
		}
		if m.Error != nil {
			return fmt.Errorf("load images: %s", m.Error.Message)
		}
	}
}

// ImageID is ref's ID on the engine, "" when it is not there.
func (d *Docker) ImageID(ctx context.Context, ref string) (string, error) {
	res, err := d.api.ImageInspect(ctx, ref)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return "", nil
		}
		return "", engineErr("inspect image "+ref, err)
	}
	return res.ID, nil
}

// TaskImageRepo is the repository of a task's images: flightdeck/<name>.
func TaskImageRepo(name string) string { return "flightdeck/" + repoName(name) }

// TaskImageRepos lists the repositories of the task images on the engine
// (a cheap listing: no sizes).
func (d *Docker) TaskImageRepos(ctx context.Context) (map[string]bool, error) {
	f := make(client.Filters).Add("label", LabelManaged+"=true").Add("label", LabelKind+"="+KindTaskImage)
	list, err := d.api.ImageList(ctx, client.ImageListOptions{Filters: f})
	if err != nil {
		return nil, engineErr("list task images", err)
	}
	repos := map[string]bool{}
	for _, img := range list.Items {
		for _, ref := range realTags(img.RepoTags) {
			repo, _, _ := strings.Cut(ref, ":")
			repos[repo] = true
		}
	}
	return repos, nil
}
