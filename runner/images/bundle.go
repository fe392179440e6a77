package images

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// A bundle (flightdeck images save / load) carries a suite's task images
// and their bases to a machine that cannot build or pull them: one tar of
// manifest.json (each image's ref and ID) and the engine's `docker save`
// stream, checked image by image after the load.

// Store is what a bundle needs of the engine.
type Store interface {
	ImageID(ctx context.Context, ref string) (string, error)
	SaveImages(ctx context.Context, refs []string, w io.Writer) error
	LoadImages(ctx context.Context, r io.Reader) error
}

// Built is a task image a bundle holds, and the bases it was built from.
type Built struct {
	Task  string
	Ref   string
	Bases []string
}

// Manifest is a bundle's manifest.json: what it holds, to check a
// load by.
type Manifest struct {
	Schema  int           `json:"schema"`
	Created time.Time     `json:"created"`
	Images  []BundleImage `json:"images"` // task images
	Bases   []BundleImage `json:"bases"`  // the images they were built from
}

type BundleImage struct {
	Task string `json:"task,omitempty"`
	Ref  string `json:"ref"`
	ID   string `json:"id"`
}

const (
	BundleSchema  = 1
	manifestEntry = "manifest.json"
	imagesEntry   = "images.tar"
)

// ManifestFor lists the built images and their bases with their IDs.
func ManifestFor(ctx context.Context, d Store, built []Built) (Manifest, []string, error) {
	m := Manifest{Schema: BundleSchema, Created: time.Now().UTC(), Images: []BundleImage{}, Bases: []BundleImage{}}
	seen := map[string]bool{}
	var refs []string
	add := func(list *[]BundleImage, task, ref string) error {
		if seen[ref] {
			return nil
		}
		seen[ref] = true
		id, err := d.ImageID(ctx, ref)
		if err != nil {
			return err
		}
		if id == "" {
			return fmt.Errorf("%s is not on the engine", ref)
		}
		*list = append(*list, BundleImage{Task: task, Ref: ref, ID: id})
		refs = append(refs, ref)
		return nil
	}
	for _, l := range built {
		if err := add(&m.Images, l.Task, l.Ref); err != nil {
			return m, nil, err
		}
	}
	for _, l := range built {
		for _, b := range l.Bases {
			if err := add(&m.Bases, "", b); err != nil {
				return m, nil, err
			}
		}
	}
	return m, refs, nil
}

// WriteBundle writes manifest.json and the images' `docker save` stream
// into one tar, atomically: a failed save leaves no bundle.
func WriteBundle(ctx context.Context, d Store, path string, m Manifest, refs []string) error {
	saved, err := os.CreateTemp(filepath.Dir(path), ".images-*.tar")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(saved.Name())
	defer saved.Close()
	if err := d.SaveImages(ctx, refs, saved); err != nil {
		return err
	}
	size, err := saved.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	if _, err := saved.Seek(0, io.SeekStart); err != nil {
		return err
	}
	out, err := os.CreateTemp(filepath.Dir(path), ".bundle-*.tar")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(out.Name())
	defer out.Close()
	tw := tar.NewWriter(out)
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	now := time.Now()
	if err := tw.WriteHeader(&tar.Header{Name: manifestEntry, Mode: 0o644, Size: int64(len(data)), ModTime: now}); err != nil {
		return err
	}
	if _, err := tw.Write(data); err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: imagesEntry, Mode: 0o644, Size: size, ModTime: now}); err != nil {
		return err
	}
	if _, err := io.Copy(tw, saved); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	if err := os.Rename(out.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// LoadBundle loads a bundle's images and checks that every image its
// manifest names is on the engine with the manifest's ID.
func LoadBundle(ctx context.Context, d Store, path string) (Manifest, error) {
	var m Manifest
	f, err := os.Open(path)
	if err != nil {
		return m, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	var haveManifest, loaded bool
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return m, fmt.Errorf("not a bundle of flightdeck images save: %w", err)
		}
		switch h.Name {
		case manifestEntry:
			data, err := io.ReadAll(io.LimitReader(tr, 16<<20))
			if err != nil {
				return m, err
			}
			if err := json.Unmarshal(data, &m); err != nil {
				return m, fmt.Errorf("%s: %w", manifestEntry, err)
			}
			if m.Schema != BundleSchema {
				return m, fmt.Errorf("%s: schema %d; this flightdeck reads %d", manifestEntry, m.Schema, BundleSchema)
			}
			haveManifest = true
		case imagesEntry:
			if !haveManifest {
				return m, fmt.Errorf("not a bundle of flightdeck images save: %s comes before %s", imagesEntry, manifestEntry)
			}
			if err := d.LoadImages(ctx, tr); err != nil {
				return m, err
			}
			loaded = true
		}
	}
	if !haveManifest || !loaded {
		return m, fmt.Errorf("not a bundle of flightdeck images save: it needs %s and %s", manifestEntry, imagesEntry)
	}
	for _, img := range append(slices.Clone(m.Images), m.Bases...) {
		id, err := d.ImageID(ctx, img.Ref)
		if err != nil {
			return m, err
		}
		if id != img.ID {
			return m, fmt.Errorf("after the load %s is %q, not the manifest's %s", img.Ref, id, img.ID)
		}
	}
	return m, nil
}
