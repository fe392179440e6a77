// Package docs holds flightdeck's documentation; its test checks the links.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mdLink is a Markdown link's target: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// heading is a Markdown heading line.
var heading = regexp.MustCompile(`(?m)^#{1,6} +(.+)$`)

// anchor is GitHub's anchor of a heading: lower case, spaces to hyphens,
// punctuation dropped.
func anchor(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	var b strings.Builder
	for _, r := range h {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func anchors(t *testing.T, file string) map[string]bool {
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	out := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(string(data), -1) {
		out[anchor(strings.ReplaceAll(m[1], "`", ""))] = true
	}
	return out
}

// Every relative link of README.md and docs/ names a file that exists,
// and an anchor a heading of it.
func TestNoDeadRelativeLinks(t *testing.T) {
	files, err := filepath.Glob("*.md")
	require.NoError(t, err)
	files = append(files, "../README.md")
	require.Greater(t, len(files), 3)
	checked := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range mdLink.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			dest := f
			if path != "" {
				dest = filepath.Join(filepath.Dir(f), path)
				_, err := os.Stat(dest)
				if !assert.NoError(t, err, "%s links %s, which does not exist", f, target) {
					continue
				}
			}
			checked++
			if frag != "" && strings.HasSuffix(dest, ".md") {
				assert.True(t, anchors(t, dest)[frag], "%s links %s: %s has no heading #%s", f, target, dest, frag)
			}
		}
	}
	assert.Positive(t, checked, "the links were found")
}

// repoPath is a path into the project as the docs write it in prose:
// docs/running.md, fixtures/harbor/README.md, sandbox/base-image.sh.
var repoPath = regexp.MustCompile("(?:^|[\\s(`\"'])((?:docs|fixtures|tasks|scripts|cmd|runner|sandbox|grader|internal|e2e)/[A-Za-z0-9_./-]+)")

// Every path into the project that README.md and docs/ name in prose is
// there: a file moved or never written is a dead reference too.
func TestNoDeadProjectPaths(t *testing.T) {
	files, err := filepath.Glob("*.md")
	require.NoError(t, err)
	files = append(files, "../README.md")
	checked := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		// A fenced block is an example: another project's paths, a
		// user's task dir.
		for _, m := range repoPath.FindAllStringSubmatch(prose(string(data)), -1) {
			p := strings.TrimRight(m[1], ".,:;")
			if strings.ContainsAny(p, "<>*{}") || strings.Contains(p, "...") {
				continue
			}
			checked++
			_, err := os.Stat(filepath.Join("..", p))
			assert.NoError(t, err, "%s names %s, which is not in the project", f, p)
		}
	}
	assert.Greater(t, checked, 20, "the paths were found")
}

// prose is a Markdown text without its fenced code blocks.
func prose(md string) string {
	var b strings.Builder
	fenced := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

func TestAnchor(t *testing.T) {
	assert.Equal(t, "the-image-cache", anchor("The image cache"))
	assert.Equal(t, "run---jobs-2", anchor("run --jobs 2"))
	assert.Equal(t, "a-shell-on-a-finished-trial", anchor("A shell on a finished trial"))
}
