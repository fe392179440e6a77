package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/tasks"
)

// baseImages lists the images a task's environment starts from: its
// [environment].docker_image, or the images a build of
// environment/Dockerfile reads, as sandbox.DockerfileBases reads them (the
// build's own reading, so the image map and the fallback see what the
// build sees). A Dockerfile that cannot be read or that the build refuses
// is an error naming the file.
func baseImages(t *tasks.Task) ([]string, error) {
	if img := t.Config.Environment.DockerImage; img != "" {
		return []string{img}, nil
	}
	path := t.Path("environment", "Dockerfile")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	bases, err := sandbox.DockerfileBases(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return bases, nil
}

// imageNamedAt is where a task names a base image, for messages: the
// Dockerfile's line that names it (a FROM, or the ARG whose default a FROM
// reads), else task.toml's docker_image, else the Dockerfile itself. The
// path starts at the task's directory's name.
func imageNamedAt(t *tasks.Task, ref string) string {
	name := filepath.Base(t.Dir)
	if img := t.Config.Environment.DockerImage; img != "" {
		return fmt.Sprintf("%s: [environment].docker_image = %q", filepath.Join(name, tasks.TaskFile), img)
	}
	data, err := os.ReadFile(t.Path("environment", "Dockerfile"))
	path := filepath.Join(name, "environment", "Dockerfile")
	if err != nil {
		return path
	}
	return dockerfileLineOf(path, data, ref)
}

// dockerfileLineOf is "path:line: text" of the Dockerfile's first line
// naming ref, else path.
func dockerfileLineOf(path string, data []byte, ref string) string {
	for i, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, ref) {
			return fmt.Sprintf("%s:%d: %s", path, i+1, strings.TrimSpace(line))
		}
	}
	return path
}
