package sandbox

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// CopyIn copies the contents of hostDir into dir (absolute, in the
// container), creating dir and its missing parents. Every entry is owned by
// owner: the tar headers carry the numeric ids. Files, directories and
// symlinks are copied; other file types are refused.
func (d *Docker) CopyIn(ctx context.Context, containerID, hostDir, dir string, owner Owner) error {
	err := d.copyTar(ctx, containerID, dir, owner, func(tw *tar.Writer, prefix string) error {
		return filepath.WalkDir(hostDir, func(p string, entry fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(hostDir, p)
			if err != nil || rel == "." {
				return err
			}
			return writeHostEntry(tw, p, path.Join(prefix, filepath.ToSlash(rel)), entry, owner)
		})
	})
	if err != nil {
		return fmt.Errorf("copy %s into %s: %w", hostDir, dir, err)
	}
	return nil
}

// WriteFiles writes files under dir (absolute, in the container), creating
// dir, its missing parents and the files' directories, all owned by owner.
// A file's Mode defaults to 0644.
func (d *Docker) WriteFiles(ctx context.Context, containerID, dir string, files []File, owner Owner) error {
	for _, f := range files {
		if !filepath.IsLocal(filepath.FromSlash(f.Path)) || strings.HasPrefix(f.Path, "/") {
			return fmt.Errorf("write files into %s: %q must be a relative path without a \"..\" component", dir, f.Path)
		}
	}
	err := d.copyTar(ctx, containerID, dir, owner, func(tw *tar.Writer, prefix string) error {
		made := map[string]bool{}
		now := time.Now()
		for _, f := range files {
			name := path.Join(prefix, path.Clean(f.Path))
			for _, parent := range parents(path.Dir(name), prefix) {
				if !made[parent] {
					made[parent] = true
					if err := tw.WriteHeader(ownedHeader(parent+"/", tar.TypeDir, 0o755, owner, now)); err != nil {
						return err
					}
				}
			}
			mode := f.Mode
			if mode == 0 {
				mode = 0o644
			}
			h := ownedHeader(name, tar.TypeReg, mode, owner, now)
			h.Size = int64(len(f.Data))
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			if _, err := tw.Write(f.Data); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("write files into %s: %w", dir, err)
	}
	return nil
}

// parents lists the directories from below prefix down to dir, e.g.
// parents("a/b/c", "a") is ["a/b", "a/b/c"]. With prefix "", from the top.
func parents(dir, prefix string) []string {
	if dir == "." || dir == prefix || dir == "" {
		return nil
	}
	return append(parents(path.Dir(dir), prefix), dir)
}

// copyTar streams a tar into the container so its entries land under dir.
// dir's deepest existing ancestor is the extraction point; fill writes
// entries under prefix, the missing part of dir, whose directories are
// written first, owned by owner.
func (d *Docker) copyTar(ctx context.Context, containerID, dir string, owner Owner, fill func(tw *tar.Writer, prefix string) error) error {
	if !path.IsAbs(dir) {
		return fmt.Errorf("container path %q must be absolute", dir)
	}
	base, missing, err := d.existingAncestor(ctx, containerID, path.Clean(dir))
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		now := time.Now()
		prefix := ""
		var err error
		for _, comp := range missing {
			prefix = path.Join(prefix, comp)
			if err = tw.WriteHeader(ownedHeader(prefix+"/", tar.TypeDir, 0o755, owner, now)); err != nil {
				break
			}
		}
		if err == nil {
			err = fill(tw, prefix)
		}
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	_, err = d.api.CopyToContainer(ctx, containerID, client.CopyToContainerOptions{DestinationPath: base, Content: pr})
	pr.CloseWithError(io.ErrClosedPipe) // stops the writer if the engine gave up early
	if err != nil {
		return containerErr("copy into container "+short(containerID), err)
	}
	return nil
}

// makeDirs makes each dir that is missing in the container, mode 0777 (its
// missing parents 0755), through the archive API: no process runs, so it
// works on a container not yet started.
func (d *Docker) makeDirs(ctx context.Context, containerID, image string, dirs []string) error {
	for _, dir := range dirs {
		if !path.IsAbs(dir) {
			return fmt.Errorf("make %s in container %s: the path must be absolute", dir, short(containerID))
		}
		dir = path.Clean(dir)
		known, cached := d.ancestry.get(image, dir)
		if !cached {
			base, missing, err := d.existingAncestor(ctx, containerID, dir)
			if err != nil {
				return fmt.Errorf("make %s in container %s: %w", dir, short(containerID), err)
			}
			known = ancestry{base: base, missing: missing}
			d.ancestry.put(image, dir, known)
		}
		base, missing := known.base, known.missing
		if len(missing) == 0 {
			continue
		}
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		now := time.Now()
		prefix := ""
		for i, comp := range missing {
			prefix = path.Join(prefix, comp)
			mode := int64(0o755)
			if i == len(missing)-1 {
				mode = 0o777
			}
			if err := tw.WriteHeader(ownedHeader(prefix+"/", tar.TypeDir, mode, Owner{}, now)); err != nil {
				return err
			}
		}
		if err := tw.Close(); err != nil {
			return err
		}
		if _, err := d.api.CopyToContainer(ctx, containerID, client.CopyToContainerOptions{DestinationPath: base, Content: &buf}); err != nil {
			if cached {
				// The tag names another image now: look again, and go on
				// with the dirs after this one.
				d.ancestry.forget(image, dir)
				if err := d.makeDirs(ctx, containerID, image, []string{dir}); err != nil {
					return err
				}
				continue
			}
			return containerErr("make "+dir+" in container "+short(containerID), err)
		}
	}
	return nil
}

// ancestry is what makeDirs found of a directory in a new container: its
// nearest existing ancestor, and the components missing below it.
type ancestry struct {
	base    string
	missing []string
}

// ancestryCache keeps ancestries per image: every container created from
// an image has the image's filesystem until it starts, so a trial's
// directories are looked up once per image, not once per container
// (three stats and two state calls for /logs/verifier on most images).
type ancestryCache struct {
	mu sync.Mutex
	m  map[[2]string]ancestry
}

func (c *ancestryCache) get(image, dir string) (ancestry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.m[[2]string{image, dir}]
	return a, ok
}

func (c *ancestryCache) put(image, dir string, a ancestry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[[2]string]ancestry{}
	}
	c.m[[2]string{image, dir}] = a
}

func (c *ancestryCache) forget(image, dir string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, [2]string{image, dir})
}

// StatPath reports the mode of a path in the container, through the
// archive API (no process runs); a missing path matches fs.ErrNotExist.
func (d *Docker) StatPath(ctx context.Context, containerID, p string) (fs.FileMode, error) {
	st, err := d.api.ContainerStatPath(ctx, containerID, client.ContainerStatPathOptions{Path: p})
	if cerrdefs.IsNotFound(err) {
		if cst, serr := d.State(ctx, containerID); serr == nil && !cst.Missing {
			return 0, fmt.Errorf("stat %s in container %s: %w", p, short(containerID), fs.ErrNotExist)
		}
	}
	if err != nil {
		return 0, containerErr("stat "+p+" in container "+short(containerID), err)
	}
	return st.Stat.Mode, nil
}

// existingAncestor finds dir's deepest existing ancestor (dir itself when
// it exists) and the components below it that are missing.
func (d *Docker) existingAncestor(ctx context.Context, containerID, dir string) (string, []string, error) {
	var missing []string
	for p := dir; ; p = path.Dir(p) {
		st, err := d.api.ContainerStatPath(ctx, containerID, client.ContainerStatPathOptions{Path: p})
		if err == nil {
			if !st.Stat.Mode.IsDir() {
				return "", nil, fmt.Errorf("%s exists in the container and is not a directory", p)
			}
			slices.Reverse(missing)
			return p, missing, nil
		}
		if !cerrdefs.IsNotFound(err) || p == "/" {
			return "", nil, containerErr("stat "+p+" in container "+short(containerID), err)
		}
		if gone, _ := d.State(ctx, containerID); gone.Missing {
			return "", nil, containerErr("stat "+p, err)
		}
		missing = append(missing, path.Base(p))
	}
}

func ownedHeader(name string, typ byte, mode int64, owner Owner, mtime time.Time) *tar.Header {
	return &tar.Header{Name: name, Typeflag: typ, Mode: mode, Uid: owner.UID, Gid: owner.GID, ModTime: mtime, Format: tar.FormatPAX}
}

func writeHostEntry(tw *tar.Writer, p, name string, entry fs.DirEntry, owner Owner) error {
	info, err := entry.Info()
	if err != nil {
		return err
	}
	h := ownedHeader(name, tar.TypeReg, int64(info.Mode().Perm()), owner, info.ModTime())
	switch {
	case info.IsDir():
		h.Typeflag, h.Name = tar.TypeDir, name+"/"
		return tw.WriteHeader(h)
	case info.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(p)
		if err != nil {
			return err
		}
		h.Typeflag, h.Linkname = tar.TypeSymlink, target
		return tw.WriteHeader(h)
	case info.Mode().IsRegular():
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		h.Size = info.Size()
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err = io.CopyN(tw, f, info.Size())
		return err
	default:
		return fmt.Errorf("%s is a %s; only files, directories and symlinks are copied", p, info.Mode().Type())
	}
}

// CopyOut copies path out of the container into hostDir (created when
// missing): a directory's contents land directly in hostDir, a file as
// hostDir/<its name>. Only directories and regular files are written;
// see extractTar for what is refused and skipped. A missing path is an
// error matching fs.ErrNotExist.
func (d *Docker) CopyOut(ctx context.Context, containerID, srcPath, hostDir string, limits CopyLimits) error {
	res, err := d.api.CopyFromContainer(ctx, containerID, client.CopyFromContainerOptions{SourcePath: srcPath})
	if cerrdefs.IsNotFound(err) {
		if st, serr := d.State(ctx, containerID); serr == nil && !st.Missing {
			return fmt.Errorf("copy %s out of container %s: %w", srcPath, short(containerID), fs.ErrNotExist)
		}
	}
	if err != nil {
		return containerErr("copy "+srcPath+" out of container "+short(containerID), err)
	}
	defer res.Content.Close()
	if err := os.MkdirAll(hostDir, 0o755); err != nil {
		return fmt.Errorf("copy %s out: %w", srcPath, err)
	}
	strip := ""
	if res.Stat.Mode.IsDir() {
		strip = res.Stat.Name
	}
	if err := extractTar(res.Content, hostDir, strip, limits); err != nil {
		return fmt.Errorf("copy %s out of container %s into %s: %w", srcPath, short(containerID), hostDir, err)
	}
	return nil
}
