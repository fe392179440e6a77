package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/client"
)

// labelContext carries a task image's build-context digest.
const labelContext = "flightdeck.context"

// defaultPullTimeout bounds a pull attempt when the spec has no timeout.
const defaultPullTimeout = 10 * time.Minute

// EnsureImage returns the image for spec. With DockerImage set, that image
// (after the image map) is used as it is and must be present or pullable.
// Otherwise spec.ContextDir is sent as a deterministic build context and
// the image is tagged flightdeck/<Name>:<first 16 hex of its digest>; when
// that tag exists nothing is built. The digest covers the context's bytes
// (with the image map applied to the Dockerfile), the Dockerfile's name
// and the IDs of the base images, so a changed byte, a different map or a
// rebuilt base image each give a new tag. Concurrent calls for one tag
// build once.
func (d *Docker) EnsureImage(ctx context.Context, spec BuildSpec) (Image, error) {
	if spec.DockerImage != "" {
		return d.useImage(ctx, spec)
	}
	return d.buildImage(ctx, spec)
}

// InspectImage describes a local image.
func (d *Docker) InspectImage(ctx context.Context, ref string) (ImageInfo, error) {
	res, err := d.api.ImageInspect(ctx, ref)
	if cerrdefs.IsNotFound(err) {
		return ImageInfo{}, fmt.Errorf("inspect image %s: %w", ref, ErrNoSuchImage)
	}
	if err != nil {
		return ImageInfo{}, engineErr("inspect image "+ref, err)
	}
	info := ImageInfo{ID: res.ID}
	if c := res.Config; c != nil {
		info.Workdir, info.User, info.Env, info.Entrypoint = c.WorkingDir, c.User, c.Env, c.Entrypoint
	}
	return info, nil
}

func (d *Docker) useImage(ctx context.Context, spec BuildSpec) (Image, error) {
	ref, mapped := MapImage(spec.DockerImage, spec.ImageMap)
	img := Image{Ref: ref}
	if mapped && ref != spec.DockerImage {
		img.Mapped = []string{spec.DockerImage + "=" + ref}
	}
	id, err := d.ensurePresent(ctx, "image", ref, spec.Timeout)
	if err != nil {
		return Image{}, err
	}
	img.ID = id
	if spec.LogPath != "" {
		note := fmt.Sprintf("flightdeck: using image %s (%s) as it is; nothing to build\n", ref, id)
		if err := os.WriteFile(spec.LogPath, []byte(note), 0o644); err != nil {
			return Image{}, fmt.Errorf("write build log: %w", err)
		}
	}
	return img, nil
}

// ensurePresent returns a local image's ID, trying one pull when it is
// absent. what names the image in the error: "image" or "base image".
func (d *Docker) ensurePresent(ctx context.Context, what, ref string, timeout time.Duration) (string, error) {
	res, err := d.api.ImageInspect(ctx, ref)
	if err == nil {
		return res.ID, nil
	}
	if !cerrdefs.IsNotFound(err) {
		return "", engineErr("inspect image "+ref, err)
	}
	if timeout <= 0 {
		timeout = defaultPullTimeout
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pullErr := d.pull(pctx, ref)
	if pullErr == nil {
		if res, err := d.api.ImageInspect(ctx, ref); err == nil {
			return res.ID, nil
		}
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	return "", fmt.Errorf("%s %s %w (%v); map it to a local image with FLIGHTDECK_IMAGE_MAP=%s=<local image> or in the suite's images: map",
		what, ref, ErrImageMissing, firstLine(pullErr), ref)
}

func (d *Docker) pull(ctx context.Context, ref string) error {
	resp, err := d.api.ImagePull(ctx, ref, client.ImagePullOptions{})
	if err != nil {
		return err
	}
	defer resp.Close()
	return resp.Wait(ctx)
}

// buildInput is a build context ready to send.
type buildInput struct {
	tag        string
	digest     string
	tarPath    string
	dockerfile string // name inside the context, slash separated
	plan       dockerfilePlan
	buildKit   bool
	labels     map[string]string // in the Dockerfile for the classic builder, as options for BuildKit
}

// appendLabels adds one LABEL instruction to the end of a Dockerfile: the
// final stage, which is the image built.
func appendLabels(dockerfile []byte, labels map[string]string, escape rune) []byte {
	quote := func(s string) string {
		var b strings.Builder
		b.WriteByte('"')
		for _, r := range s {
			switch r {
			case '"', '$', escape:
				b.WriteRune(escape)
			case '\n', '\r':
				r = ' '
			}
			b.WriteRune(r)
		}
		b.WriteByte('"')
		return b.String()
	}
	out := append([]byte(nil), dockerfile...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	out = append(out, "LABEL"...)
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		out = append(out, " "+quote(k)+"="+quote(labels[k])...)
	}
	return append(out, '\n')
}

func (d *Docker) buildImage(ctx context.Context, spec BuildSpec) (Image, error) {
	in, err := d.prepareBuild(ctx, spec)
	if err != nil {
		return Image{}, err
	}
	img, shared, err := d.builds.do(ctx, in.tag, func(bctx context.Context) (Image, error) {
		defer os.Remove(in.tarPath)
		return d.buildOnce(bctx, spec, in)
	})
	if shared {
		os.Remove(in.tarPath)
	}
	if err != nil {
		return Image{}, err
	}
	if shared {
		img.Built = false
		if spec.LogPath != "" {
			note := fmt.Sprintf("flightdeck: image %s was built or found by a concurrent request\n", img.Ref)
			if werr := os.WriteFile(spec.LogPath, []byte(note), 0o644); werr != nil {
				return Image{}, fmt.Errorf("write build log: %w", werr)
			}
		}
	}
	img.Mapped, img.Bases = in.plan.Mapped, in.plan.Bases
	return img, nil
}

// prepareBuild parses the Dockerfile, checks its base images and writes the
// context to a temporary file, hashing it.
func (d *Docker) prepareBuild(ctx context.Context, spec BuildSpec) (buildInput, error) {
	name := spec.Dockerfile
	if name == "" {
		name = "Dockerfile"
	}
	if filepath.IsAbs(name) || !filepath.IsLocal(name) {
		return buildInput{}, fmt.Errorf("%w: Dockerfile %q must be a relative path inside %s", ErrDockerfile, name, spec.ContextDir)
	}
	path := filepath.Join(spec.ContextDir, name)
	content, err := os.ReadFile(path)
	if err != nil {
		return buildInput{}, fmt.Errorf("read Dockerfile: %w", err)
	}
	plan, err := planDockerfile(content, spec.ImageMap, spec.Args)
	if err != nil {
		return buildInput{}, fmt.Errorf("%s: %w", path, err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "flightdeck build context v1\x00dockerfile\x00%s\x00", filepath.ToSlash(name))
	// Build args and a target are part of what is built (written only
	// when given, so that other tags stay as they were).
	for _, k := range slices.Sorted(maps.Keys(spec.Args)) {
		fmt.Fprintf(h, "arg\x00%s\x00%s\x00", k, spec.Args[k])
	}
	if spec.Target != "" {
		fmt.Fprintf(h, "target\x00%s\x00", spec.Target)
	}
	for _, base := range plan.Bases {
		id, err := d.ensurePresent(ctx, "base image", base, spec.Timeout)
		if err != nil {
			return buildInput{}, fmt.Errorf("%s: %w", path, err)
		}
		fmt.Fprintf(h, "base\x00%s\x00%s\x00", base, id)
	}
	io.WriteString(h, "context\x00")

	f, err := os.CreateTemp("", "flightdeck-context-*.tar")
	if err != nil {
		return buildInput{}, fmt.Errorf("build context: %w", err)
	}
	// The digest covers the context as written; the engine gets it with
	// the image's labels too. The classic builder turns each build-option
	// label into a step of its own (a container and a commit each), so it
	// gets them as one LABEL line appended to the Dockerfile instead.
	labels := d.ownedLabels(KindTaskImage, "", "", spec.Labels)
	send := contextSink{w: f, dockerfile: plan.Content}
	useBuildKit := len(plan.BuildKit) > 0
	if !useBuildKit {
		send.late = func() []byte {
			labels[labelContext] = "sha256:" + hex.EncodeToString(h.Sum(nil))
			return appendLabels(plan.Content, labels, plan.Escape)
		}
	}
	err = writeBuildContext(spec.ContextDir, name, contextSink{w: h, dockerfile: plan.Content}, send)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return buildInput{}, err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	labels[labelContext] = "sha256:" + sum
	tag := "flightdeck/" + repoName(spec.Name) + ":" + sum[:16]
	if _, err := reference.ParseNormalizedNamed(tag); err != nil {
		os.Remove(f.Name())
		return buildInput{}, fmt.Errorf("image name %q for %q: %w", tag, spec.Name, err)
	}
	return buildInput{tag: tag, digest: "sha256:" + sum, tarPath: f.Name(), dockerfile: filepath.ToSlash(name), plan: plan, buildKit: useBuildKit, labels: labels}, nil
}

// repoName makes a task name a valid repository path: lower case, runs of
// other characters as one "-", "/" kept between components.
func repoName(name string) string {
	var parts []string
	for _, comp := range strings.Split(strings.ToLower(name), "/") {
		var b strings.Builder
		dash := false
		for _, r := range comp {
			ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
			if !ok {
				if !dash {
					b.WriteByte('-')
				}
				dash = true
				continue
			}
			b.WriteRune(r)
			dash = false
		}
		if c := strings.Trim(b.String(), "-_."); c != "" {
			parts = append(parts, c)
		}
	}
	if len(parts) == 0 {
		return "task"
	}
	return strings.Join(parts, "/")
}

// buildOnce finds or builds one tag. It runs once per tag at a time.
func (d *Docker) buildOnce(ctx context.Context, spec BuildSpec, in buildInput) (Image, error) {
	img := Image{Ref: in.tag, ContextDigest: in.digest}
	if res, err := d.api.ImageInspect(ctx, in.tag); err == nil {
		img.ID = res.ID
		if spec.LogPath != "" {
			note := fmt.Sprintf("flightdeck: image %s is present; not built\n", in.tag)
			if err := os.WriteFile(spec.LogPath, []byte(note), 0o644); err != nil {
				return Image{}, fmt.Errorf("write build log: %w", err)
			}
		}
		return img, nil
	} else if !cerrdefs.IsNotFound(err) {
		return Image{}, engineErr("inspect image "+in.tag, err)
	}

	log := io.Discard
	if spec.LogPath != "" {
		f, err := os.Create(spec.LogPath)
		if err != nil {
			return Image{}, fmt.Errorf("build log: %w", err)
		}
		defer f.Close()
		log = f
	}
	id, err := d.runBuild(ctx, spec, in, log)
	if err != nil {
		return Image{}, err
	}
	img.ID, img.Built = id, true
	if n := d.builtSize(ctx, id); n >= 0 {
		img.OwnSize, img.Sized = n, true
	}
	return img, nil
}

func (d *Docker) runBuild(ctx context.Context, spec BuildSpec, in buildInput, log io.Writer) (string, error) {
	useBuildKit := in.buildKit
	builder := "classic builder"
	if useBuildKit {
		builder = "BuildKit (" + strings.Join(in.plan.BuildKit, "; ") + ")"
	}
	fmt.Fprintf(log, "flightdeck: building %s from %s with the %s\n", in.tag, spec.ContextDir, builder)
	for _, m := range in.plan.Mapped {
		fmt.Fprintf(log, "flightdeck: image map: %s\n", m)
	}
	if in.plan.Syntax != "" {
		fmt.Fprintf(log, "flightdeck: ignoring \"# syntax=%s\": the engine's own Dockerfile frontend is used\n", in.plan.Syntax)
	}

	bctx, cancel := ctx, context.CancelFunc(func() {})
	if spec.Timeout > 0 {
		bctx, cancel = context.WithTimeout(ctx, spec.Timeout)
	}
	defer cancel()

	opts := client.ImageBuildOptions{
		Tags:        []string{in.tag},
		Dockerfile:  in.dockerfile,
		Remove:      true,
		ForceRemove: true,
		Version:     build.BuilderV1,
		Target:      spec.Target,
	}
	if len(spec.Args) > 0 {
		opts.BuildArgs = map[string]*string{}
		for k, v := range spec.Args {
			opts.BuildArgs[k] = &v
		}
	}
	if useBuildKit {
		opts.Labels = in.labels
		opts.Version = build.BuilderBuildKit
		opts.BuildID = "flightdeck-" + randomHex(8)
	}
	tarFile, err := os.Open(in.tarPath)
	if err != nil {
		return "", fmt.Errorf("build context: %w", err)
	}
	defer tarFile.Close()

	progress := newBuildProgress(log)
	res, err := d.api.ImageBuild(bctx, tarFile, opts)
	if err == nil {
		err = progress.read(res.Body)
		res.Body.Close()
	}
	if err != nil || progress.errMsg != "" || bctx.Err() != nil {
		d.removeLayer(ctx, progress.lastLayer)
	}
	if bctx.Err() != nil && ctx.Err() == nil {
		d.cancelBuild(ctx, opts.BuildID)
		fmt.Fprintf(log, "flightdeck: build timed out after %s\n", spec.Timeout)
		return "", fmt.Errorf("build %s: %w after %s (build_timeout_sec)", in.tag, ErrBuildTimeout, spec.Timeout)
	}
	if ctx.Err() != nil {
		d.cancelBuild(ctx, opts.BuildID)
		return "", ctx.Err()
	}
	if err != nil {
		return "", engineErr("build "+in.tag, err)
	}
	if progress.errMsg != "" {
		be := progress.failure(in.tag, spec.LogPath)
		if useBuildKit && strings.Contains(be.Message, "unknown instruction") && hasHeredoc(in.plan.BuildKit) {
			be.Message += " (this engine's built-in Dockerfile frontend predates heredocs; they need a newer engine)"
		}
		return "", be
	}
	inspect, err := d.api.ImageInspect(ctx, in.tag)
	if err != nil {
		return "", engineErr("inspect built image "+in.tag, err)
	}
	fmt.Fprintf(log, "flightdeck: built %s (%s)\n", in.tag, inspect.ID)
	return inspect.ID, nil
}

// removeLayer removes an untagged image a failed classic build left, and
// the untagged parents only it used; tagged images (a base) are kept.
func (d *Docker) removeLayer(ctx context.Context, id string) {
	if id == "" {
		return
	}
	cctx, cancel := d.cleanupContext(ctx)
	defer cancel()
	res, err := d.api.ImageInspect(cctx, id)
	if err != nil || len(res.RepoTags) > 0 {
		return
	}
	_, _ = d.api.ImageRemove(cctx, res.ID, client.ImageRemoveOptions{PruneChildren: true})
}

// cancelBuild asks BuildKit to stop a build whose request has gone; the
// classic builder stops with the request.
func (d *Docker) cancelBuild(ctx context.Context, buildID string) {
	if buildID == "" {
		return
	}
	cctx, cancel := d.cleanupContext(ctx)
	defer cancel()
	_, _ = d.api.BuildCancel(cctx, buildID, client.BuildCancelOptions{})
}

func hasHeredoc(features []string) bool {
	for _, f := range features {
		if strings.HasSuffix(f, "heredoc") {
			return true
		}
	}
	return false
}

// firstLine keeps the first line of an error's text.
func firstLine(err error) string {
	if err == nil {
		return "no error"
	}
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
