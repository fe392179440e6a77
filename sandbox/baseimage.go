package sandbox

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/exec"
)

// baseImageScript builds the offline base image with debootstrap and
// `docker import`; `make base-image` runs the same file.
//
//go:embed base-image.sh
var baseImageScript []byte

// BuildBaseImage builds the offline base image (flightdeck/base:bookworm)
// as `make base-image` does, for a user who has the binary and no
// checkout; it does nothing when the image is there. Its lines go to out.
func BuildBaseImage(ctx context.Context, out io.Writer) error {
	f, err := os.CreateTemp("", "flightdeck-base-image-*.sh")
	if err != nil {
		return fmt.Errorf("write the base image's script: %w", err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(baseImageScript); err != nil {
		f.Close()
		return fmt.Errorf("write the base image's script: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write the base image's script: %w", err)
	}
	cmd := exec.CommandContext(ctx, "bash", f.Name())
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build the base image: %w", err)
	}
	return nil
}
