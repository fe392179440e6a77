package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/flightdeck/flightdeck/runner/imagecache"
	"github.com/flightdeck/flightdeck/sandbox"
)

// makeTaskImages leaves n task images on the engine, each with an ID of its
// own, and their sizes in the image index at cache, as n builds would.
//
// The first is built through the build path. Building the others the same
// way costs seconds each on a slow storage driver (every build commits a
// container), which is not what the listing is measured for. So they are
// made in one image load: a `docker save` stream of copies of the first
// image's config, each with a label of its own, naming the base's layers,
// which the engine already has (a load reads a layer's file only when the
// engine lacks the layer). Their own size is then measured as a build
// measures it (sandbox.MeasureImages) and recorded in the index.
func (b *bench) makeTaskImages(ctx context.Context, dir, cache string, n int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	df := "FROM flightdeck/base:bookworm\nLABEL bench.ls=0\n"
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df), 0o644); err != nil {
		return err
	}
	first, err := b.docker.EnsureImage(ctx, sandbox.BuildSpec{Name: "bench-ls-000", ContextDir: dir,
		Labels: map[string]string{sandbox.LabelRun: b.runID}})
	if err != nil {
		return fmt.Errorf("build the first task image: %w", err)
	}
	b.images = append(b.images, first.Ref)
	config, layers, err := b.savedConfig(ctx, first.Ref)
	if err != nil {
		return err
	}
	stream, refs, err := copiesStream(config, layers, n-1)
	if err != nil {
		return err
	}
	b.images = append(b.images, refs...)
	if err := b.docker.LoadImages(ctx, bytes.NewReader(stream)); err != nil {
		return fmt.Errorf("load %d copies of %s: %w", n-1, first.Ref, err)
	}
	ids := map[string]string{} // ref → ID
	for _, ref := range append([]string{first.Ref}, refs...) {
		id, err := b.docker.ImageID(ctx, ref)
		if err != nil || id == "" {
			return fmt.Errorf("image %s after the load: %v", ref, err)
		}
		ids[ref] = id
	}
	idList := make([]string, 0, len(ids))
	for _, id := range ids {
		idList = append(idList, id)
	}
	sizes, err := b.docker.MeasureImages(ctx, idList)
	if err != nil {
		return err
	}
	touched := make([]imagecache.Touched, 0, len(ids))
	for ref, id := range ids {
		size, ok := sizes[id]
		if !ok {
			return fmt.Errorf("image %s (%s) was not measured", ref, id)
		}
		touched = append(touched, imagecache.Touched{Ref: ref, ID: id, Size: size})
	}
	b.logf("images ls: %d task images made", n)
	return imagecache.Open(cache).Touch(touched, b.runID, time.Now())
}

// savedConfig reads ref's config and its layers' paths out of a `docker
// save` stream of it; the layers themselves are skipped.
func (b *bench) savedConfig(ctx context.Context, ref string) (map[string]any, []string, error) {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(b.docker.SaveImages(ctx, []string{ref}, pw)) }()
	defer pr.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(pr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("read the saved %s: %w", ref, err)
		}
		if filepath.Ext(h.Name) != ".json" || filepath.Dir(h.Name) != "." {
			continue
		}
		if files[h.Name], err = io.ReadAll(tr); err != nil {
			return nil, nil, fmt.Errorf("read the saved %s: %w", ref, err)
		}
	}
	var manifest []struct {
		Config string
		Layers []string
	}
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil || len(manifest) != 1 {
		return nil, nil, fmt.Errorf("the saved %s has no manifest of one image (%v)", ref, err)
	}
	var config map[string]any
	if err := json.Unmarshal(files[manifest[0].Config], &config); err != nil {
		return nil, nil, fmt.Errorf("the saved %s's config %s: %w", ref, manifest[0].Config, err)
	}
	return config, manifest[0].Layers, nil
}

// copiesStream is a `docker save` stream of n copies of config, copy i
// labelled bench.ls=i and tagged as the task image bench-ls-<i>. Its
// manifest names layers but the stream holds none of them.
func copiesStream(config map[string]any, layers []string, n int) ([]byte, []string, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	type entry struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	var manifest []entry
	var refs []string
	cfg, ok := config["config"].(map[string]any)
	if !ok {
		return nil, nil, errors.New("the saved image's config has no config section")
	}
	labels, _ := cfg["Labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
		cfg["Labels"] = labels
	}
	for i := 1; i <= n; i++ {
		labels["bench.ls"] = strconv.Itoa(i)
		data, err := json.Marshal(config)
		if err != nil {
			return nil, nil, err
		}
		sum := sha256.Sum256(data)
		name := hex.EncodeToString(sum[:]) + ".json"
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			return nil, nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, nil, err
		}
		ref := sandbox.TaskImageRepo(fmt.Sprintf("bench-ls-%03d", i)) + ":bench"
		refs = append(refs, ref)
		manifest = append(manifest, entry{Config: name, RepoTags: []string{ref}, Layers: layers})
	}
	data, err := json.Marshal(manifest)
	if err != nil {
		return nil, nil, err
	}
	if err := tw.WriteHeader(&tar.Header{Name: "manifest.json", Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
		return nil, nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, nil, err
	}
	return buf.Bytes(), refs, nil
}
