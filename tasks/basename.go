package tasks

import (
	"bufio"
	"bytes"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/flightdeck/flightdeck/internal/text"
)

// ruleBaseTypo is the finding of a Dockerfile base that looks like a
// misspelt official image.
const ruleBaseTypo = "dockerfile.base-typo"

// officialImages are Docker Hub's official images a task's Dockerfile is
// likely to start from: a FROM near one of them and not one of them is
// likely misspelt (pyhton:3.12-slim). Where no registry answers, a
// misspelt base fails the build; where one does, it pulls whatever has
// that name.
var officialImages = []string{
	"alpine", "amazoncorretto", "bash", "busybox", "buildpack-deps", "centos", "clojure", "debian", "eclipse-temurin",
	"elixir", "erlang", "fedora", "gcc", "golang", "gradle", "haskell", "httpd", "julia", "maven", "mariadb", "mongo",
	"mysql", "nginx", "node", "openjdk", "perl", "php", "postgres", "pypy", "python", "r-base", "rabbitmq", "redis",
	"ruby", "rust", "swift", "ubuntu",
}

// fromLine matches a Dockerfile's FROM: its image and, after AS, a stage.
var fromLine = regexp.MustCompile(`(?i)^\s*FROM\s+(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?`)

// checkBaseNames warns of a FROM in environment/Dockerfile whose official
// image's name is near a common one and is not one.
func checkBaseNames(dir string) []Finding {
	data, err := readRegular(filepath.Join(dir, filepath.FromSlash(environmentDockerfile)))
	if err != nil {
		return nil
	}
	var out []Finding
	stages := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		m := fromLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		ref := m[1]
		if m[2] != "" {
			stages[strings.ToLower(m[2])] = true
		}
		if stages[strings.ToLower(ref)] || strings.ContainsAny(ref, "$/") {
			continue // a stage, a build argument, or an organisation's image
		}
		name, _, _ := strings.Cut(ref, "@")
		name, _, _ = strings.Cut(name, ":")
		if name == "scratch" || slices.Contains(officialImages, name) {
			continue
		}
		if near := text.Nearest(name, officialImages); near != "" {
			out = append(out, finding(dir, environmentDockerfile, line, SeverityWarning, ruleBaseTypo,
				"FROM %s: %s is not a common official image; did you mean %s? (a misspelt base fails the build where no registry answers, and pulls whatever has that name where one does)",
				ref, name, strings.Replace(ref, name, near, 1)))
		}
	}
	return out
}
