// Package gitignore matches paths against .gitignore patterns, with the
// semantics of Python's pathspec "gitignore" style (GitWildMatchPattern),
// which Harbor uses to leave files out of a task's content hash: a pattern
// without a slash matches at any depth, a leading slash anchors it, a
// trailing slash matches what is under a directory, ** spans directories,
// ! re-includes, and the last pattern that matches wins.
package gitignore

import (
	"regexp"
	"strings"
)

// Matcher is a compiled list of patterns.
type Matcher struct {
	patterns []pattern
}

type pattern struct {
	re      *regexp.Regexp
	include bool // false: a negated pattern (!)
}

// Compile compiles the lines of a .gitignore. A pattern that does not
// compile is left out, as pathspec refuses it.
func Compile(lines []string) *Matcher {
	m := &Matcher{}
	for _, l := range lines {
		if p, ok := compile(l); ok {
			m.patterns = append(m.patterns, p)
		}
	}
	return m
}

// Match reports whether the slash-separated path, relative to the
// .gitignore's directory, is ignored.
func (m *Matcher) Match(rel string) bool {
	ignored := false
	for _, p := range m.patterns {
		if p.re.MatchString(rel) {
			ignored = p.include
		}
	}
	return ignored
}

func compile(line string) (pattern, bool) {
	if strings.HasSuffix(line, `\ `) {
		line = strings.TrimLeft(line, " \t\r\n")
	} else {
		line = strings.TrimSpace(line)
	}
	if line == "" || strings.HasPrefix(line, "#") || line == "/" {
		return pattern{}, false
	}
	include := true
	if strings.HasPrefix(line, "!") {
		include, line = false, line[1:]
	}
	line = strings.TrimPrefix(line, `\`) // an escaped leading ! or #
	segs := segments(line)
	if len(segs) == 0 {
		return pattern{}, false
	}
	var b strings.Builder
	b.WriteString("^")
	needSlash := false
	end := len(segs) - 1
	for i, seg := range segs {
		switch {
		case seg == "**" && i == 0 && i == end:
			b.WriteString(`[^/]+(?:/.*)?`)
		case seg == "**" && i == 0:
			b.WriteString(`(?:.+/)?`)
			needSlash = false
		case seg == "**" && i == end:
			b.WriteString(`/.*`)
		case seg == "**":
			b.WriteString(`(?:/.+)?`)
			needSlash = true
		default:
			if needSlash {
				b.WriteString("/")
			}
			if seg == "*" {
				b.WriteString(`[^/]+`)
			} else {
				g, ok := segmentGlob(seg)
				if !ok {
					return pattern{}, false
				}
				b.WriteString(g)
			}
			if i == end {
				b.WriteString(`(?:/.*)?`)
			}
			needSlash = true
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return pattern{}, false
	}
	return pattern{re: re, include: include}, true
}

// segments splits a pattern at its slashes, normalized as pathspec does:
// repeated ** collapsed, a pattern without a slash (or with a trailing one
// only) matching at any depth, a leading slash anchoring, a trailing slash
// matching what is under a directory.
func segments(line string) []string {
	segs := strings.Split(line, "/")
	for i := len(segs) - 1; i > 0; i-- {
		if segs[i-1] == "**" && segs[i] == "**" {
			segs = append(segs[:i], segs[i+1:]...)
		}
	}
	if len(segs) == 2 && segs[0] == "**" && segs[1] == "" {
		segs[1] = "*"
	}
	switch {
	case segs[0] == "":
		segs = segs[1:]
	case len(segs) == 1 || (len(segs) == 2 && segs[1] == ""):
		if segs[0] != "**" {
			segs = append([]string{"**"}, segs...)
		}
	}
	if len(segs) > 1 && segs[len(segs)-1] == "" {
		segs[len(segs)-1] = "**"
	}
	return segs
}

// segmentGlob translates one path segment's glob: * and ? within the
// segment, [...] classes (! or ^ negates), \ escapes.
func segmentGlob(seg string) (string, bool) {
	var b strings.Builder
	escape := false
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		switch {
		case escape:
			b.WriteString(regexp.QuoteMeta(string(c)))
			escape = false
		case c == '\\':
			escape = true
		case c == '*':
			b.WriteString(`[^/]*`)
		case c == '?':
			b.WriteString(`[^/]`)
		case c == '[':
			j := i + 1
			if j < len(seg) && (seg[j] == '!' || seg[j] == '^') {
				j++
			}
			if j < len(seg) && seg[j] == ']' {
				j++
			}
			for j < len(seg) && seg[j] != ']' {
				j++
			}
			if j >= len(seg) {
				b.WriteString(`\[`)
				continue
			}
			class := seg[i+1 : j]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:] // git negates with ! or ^ alike
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i = j
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	if escape {
		return "", false // a trailing backslash
	}
	return b.String(), true
}
