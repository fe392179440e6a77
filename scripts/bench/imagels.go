package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/flightdeck/flightdeck/runner/imagecache"
)

// Targets of `images ls` with many cached task images (issue 35).
const (
	imagesLsTarget      = 1.0 // seconds, median
	imagesLsRatioTarget = 0.3 // × the listing that measured every size (the old way)
)

// imagesLsFigures time `flightdeck images ls` over a cache of many task
// images: as it answers now (the image list and the index), against the
// same listing measuring every image's size from the engine's disk usage,
// as every listing did before (`--sizes`), and `docker images` alone, the
// engine's own list: interleaved, in one run.
type imagesLsFigures struct {
	images                  int // task images on the engine while measured
	made                    int // of which the bench made
	ls, sizes, dockerImages samples
}

// imagesList makes n small task images (FROM the base image, a label of
// their own: no layer of their own) and records their sizes in an image
// index as a build does, then times the three listings.
func (b *bench) imagesList(ctx context.Context, n, reps int) (*imagesLsFigures, error) {
	cache := filepath.Join(b.ws.root, "ls-cache")
	if err := b.makeTaskImages(ctx, filepath.Join(b.ws.root, "ls-images"), cache, n); err != nil {
		return nil, fmt.Errorf("images ls benchmark: %w", err)
	}
	f := &imagesLsFigures{made: n}
	env := append(os.Environ(), imagecache.DirEnv+"="+cache)
	timed := func(name string, args ...string) (float64, string, error) {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env = env
		start := time.Now()
		out, err := cmd.CombinedOutput()
		if err != nil {
			return 0, "", fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
		}
		return time.Since(start).Seconds(), string(out), nil
	}
	// The first listing measures what the index does not know (images
	// other runs left on this engine): the steady state is after it.
	if _, _, err := timed(b.bin, "images", "ls"); err != nil {
		return nil, err
	}
	for i := range reps {
		b.logf("images ls %d/%d", i+1, reps)
		s, out, err := timed(b.bin, "images", "ls")
		if err != nil {
			return nil, err
		}
		f.images = strings.Count(out, "\n") - 2
		f.ls = append(f.ls, s)
		if s, _, err = timed(b.bin, "images", "ls", "--sizes"); err != nil {
			return nil, err
		}
		f.sizes = append(f.sizes, s)
		if s, _, err = timed("docker", "images"); err != nil {
			return nil, err
		}
		f.dockerImages = append(f.dockerImages, s)
	}
	return f, nil
}

func (f *imagesLsFigures) targets() []target {
	ls, sizes := f.ls.median(), f.sizes.median()
	return []target{
		{
			name:     fmt.Sprintf("`flightdeck images ls` with %d cached task images (%d made by the bench)", f.images, f.made),
			measured: ms(ls),
			goal:     fmt.Sprintf("< %s", ms(imagesLsTarget)),
			ratio:    fmt.Sprintf("%.2f × target", ls/imagesLsTarget),
			met:      ls < imagesLsTarget,
			section:  "#images-ls",
		},
		{
			name:     "`flightdeck images ls` vs the same listing measuring every size from the engine's disk usage, as each listing did before (`images ls --sizes`)",
			measured: fmt.Sprintf("ls %s, --sizes %s", ms(ls), ms(sizes)),
			goal:     fmt.Sprintf("< %.1f ×", imagesLsRatioTarget),
			ratio:    fmt.Sprintf("%.2f ×", ls/sizes),
			met:      ls < imagesLsRatioTarget*sizes,
			section:  "#images-ls",
		},
	}
}

func (f *imagesLsFigures) markdown(w writer) {
	w("## images ls\n\n")
	w("%s\n\n", wrap(fmt.Sprintf("%d task images on the engine, %d of them made by the bench (FROM the base image with a "+
		"label of their own) through the build path, which records each image's own size in the image index. "+
		"Interleaved, %d times each: `flightdeck images ls` as it answers now (the engine's image list, its "+
		"container list and the index), `flightdeck images ls --sizes` (every size measured from the engine's disk "+
		"usage, as every listing did before), and `docker images` alone (the engine's own list, the floor of any "+
		"listing).", f.images, f.made, len(f.ls)), 104))
	w("| listing | seconds |\n|---|---|\n")
	w("| `flightdeck images ls` | %s |\n", f.ls.spread())
	w("| `flightdeck images ls --sizes` | %s |\n", f.sizes.spread())
	w("| `docker images` | %s |\n\n", f.dockerImages.spread())
}
