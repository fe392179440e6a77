package sandbox

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// probeImage is a one-directory image made with `docker import`, used to
// look through a created (never started) container at a bind mount.
const probeImage = "flightdeck/probe:1"

// Preflight asks the engine what it is (version, negotiated API, storage
// driver, cgroup version, rootless) and checks that a directory under
// Options.ProbeDir, bind-mounted into a container, is really visible there:
// Docker Desktop and colima mount an empty directory for paths they do not
// share. Limits the engine cannot apply become Warnings.
func (d *Docker) Preflight(ctx context.Context) (Info, error) {
	ver, err := d.api.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return Info{}, unavailable(d.endpoint, err)
	}
	asked := time.Now()
	sys, err := d.api.Info(ctx, client.InfoOptions{})
	if err != nil {
		return Info{}, engineErr("read engine info", err)
	}
	answered := time.Now()
	si := sys.Info
	d.layerStore.set(si.DockerRootDir, si.Driver)
	info := Info{
		ServerVersion: ver.Version,
		APIVersion:    d.api.ClientVersion(),
		StorageDriver: si.Driver,
		CgroupVersion: si.CgroupVersion,
		Rootless:      slices.ContainsFunc(si.SecurityOptions, func(o string) bool { return strings.Contains(o, "name=rootless") }),
		CPUs:          si.NCPU,
		Memory:        si.MemTotal,
		DataRoot:      si.DockerRootDir,
		FreeDisk:      -1,
	}
	if strings.HasPrefix(d.endpoint.Host, "unix://") {
		// A local engine: its data root is this host's path.
		info.FreeDisk = freeDisk(si.DockerRootDir)
	}
	if t, err := time.Parse(time.RFC3339Nano, si.SystemTime); err == nil {
		info.ClockOffset = t.Sub(asked.Add(answered.Sub(asked) / 2))
	}
	if !si.PidsLimit {
		info.Warnings = append(info.Warnings, "the engine cannot limit a container's processes (no pids cgroup)")
	}
	if !si.MemoryLimit {
		info.Warnings = append(info.Warnings, "the engine cannot limit a container's memory")
	}
	if !si.CPUCfsQuota {
		info.Warnings = append(info.Warnings, "the engine cannot limit a container's cpus (no CFS quota)")
	}
	return info, nil
}

// ProbeBindMount checks that a host directory bind-mounted into a
// container is visible there (Docker Desktop and colima share only some
// paths); the warning says what to do when it is not. It is apart from
// Preflight because it only ever warns: a run makes it beside its start.
func (d *Docker) ProbeBindMount(ctx context.Context) (ok bool, warning string) {
	ok, why := d.probeBindMount(ctx)
	if ok {
		return true, ""
	}
	return false, fmt.Sprintf("a directory under %s bind-mounted into a container is not visible there (%s): share that path with the engine (Docker Desktop: Settings > Resources > File sharing; colima: --mount), or keep results and work dirs under a shared path",
		d.opts.ProbeDir, why)
}

// probeBindMount mounts a fresh host directory holding one file into a
// created container and reads the file back through the engine's archive
// API, which mounts a container's volumes even when it never ran. why says
// what went wrong when it is not visible.
func (d *Docker) probeBindMount(ctx context.Context) (ok bool, why string) {
	dir, err := os.MkdirTemp(existingAncestor(d.opts.ProbeDir), "flightdeck-probe-")
	if err != nil {
		return false, err.Error()
	}
	defer os.RemoveAll(dir)
	token := randomHex(16)
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte(token), 0o644); err != nil {
		return false, err.Error()
	}
	if err := d.ensureProbeImage(ctx); err != nil {
		return false, err.Error()
	}
	res, err := d.api.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{
			Image:      probeImage,
			Entrypoint: []string{"/probe/never-started"},
			Labels:     d.ownedLabels(KindProbe, "", "", nil),
		},
		HostConfig: &container.HostConfig{
			NetworkMode: network.NetworkNone,
			Mounts:      []mount.Mount{{Type: mount.TypeBind, Source: dir, Target: "/probe/mnt", ReadOnly: true}},
		},
		Name: containerName("flightdeck-probe"),
	})
	if err != nil {
		return false, firstLine(err)
	}
	defer d.removeQuietly(ctx, res.ID)
	out, err := d.api.CopyFromContainer(ctx, res.ID, client.CopyFromContainerOptions{SourcePath: "/probe/mnt/token"})
	if err != nil {
		return false, "the file written on the host is missing in the container: " + firstLine(err)
	}
	defer out.Content.Close()
	tr := tar.NewReader(out.Content)
	if _, err := tr.Next(); err != nil {
		return false, "reading the file back: " + firstLine(err)
	}
	got, err := io.ReadAll(io.LimitReader(tr, 1024))
	if err != nil || string(got) != token {
		return false, "the file written on the host has other content in the container"
	}
	return true, ""
}

// ensureProbeImage imports the probe image when it is missing.
func (d *Docker) ensureProbeImage(ctx context.Context) error {
	if _, err := d.api.ImageInspect(ctx, probeImage); err == nil {
		return nil
	} else if !cerrdefs.IsNotFound(err) {
		return engineErr("inspect "+probeImage, err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "probe/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: contextModTime()}); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	out, err := d.api.ImageImport(ctx, client.ImageImportSource{Source: &buf, SourceName: "-"}, probeImage, client.ImageImportOptions{
		Changes: []string{"LABEL " + LabelManaged + "=true " + LabelKind + "=" + KindProbe},
	})
	if err != nil {
		return engineErr("import "+probeImage, err)
	}
	defer out.Close()
	if _, err := io.Copy(io.Discard, out); err != nil {
		return engineErr("import "+probeImage, err)
	}
	return nil
}

// existingAncestor is dir, or its nearest ancestor that exists: a results
// dir that a run has yet to create is shared with the engine when its parent
// is, and probing there writes nothing into a dir the run has not made.
func existingAncestor(dir string) string {
	for {
		if _, err := os.Stat(dir); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return dir
		}
		dir = parent
	}
}
