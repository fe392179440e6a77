// Package text shapes text for people: messages, reports, progress lines.
package text

import (
	"fmt"
	"strings"
)

// OneLine shortens s to one line of about n bytes, its runs of white
// space made single spaces. It cuts the message, never a path: a path the
// cut would split is kept whole, and the last paths after the cut (where a
// message names its log) follow the "…", so that whoever reads the line
// can still open the file it names.
func OneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	words := strings.Split(s, " ")
	var kept, after []string
	size, cut := 0, false
	for i, w := range words {
		if size+len(w) <= n-1 || size < n-1 && isPath(w) {
			kept = append(kept, w)
			size += len(w) + 1
			continue
		}
		cut = true
		if len(kept) == 0 {
			// One long word: its start.
			kept = append(kept, w[:n-1])
		}
		// A path the kept part names already, or named twice, is said once.
		seen := map[string]bool{}
		for _, k := range kept {
			seen[strings.Trim(k, "\"'`()[],;:.")] = true
		}
		for _, rest := range words[i:] {
			p := strings.TrimLeft(strings.TrimRight(rest, ".,;:)]\"'`"), "([\"'`")
			if isPath(rest) && !seen[strings.Trim(p, "\"'`()[],;:.")] {
				seen[strings.Trim(p, "\"'`()[],;:.")] = true
				after = append(after, p)
			}
		}
		break
	}
	if len(after) > 2 {
		after = after[len(after)-2:]
	}
	if !cut {
		// Every word kept: a path over the length is whole, and nothing
		// was left out.
		return strings.Join(kept, " ")
	}
	out := strings.Join(kept, " ") + "…"
	if len(after) > 0 {
		out += " " + strings.Join(after, " ")
	}
	return out
}

// isPath reports whether a word of a message names a file: a path with a
// directory in it (not a URL).
func isPath(w string) bool {
	w = strings.Trim(w, "\"'`()[],;:")
	return strings.Contains(w, "/") && !strings.Contains(w, "://") && len(w) > 2 && !strings.HasPrefix(w, "//")
}

// Bytes writes a size in binary units, one decimal: 512B, 1.5KiB, 2.0GiB.
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f%ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// FileName makes s a file name: every rune but ASCII letters, digits, '.',
// '-' and '_' becomes '-'.
func FileName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, s)
}

// LastLines is s's last n lines, without a trailing newline.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Count writes n and the noun, in the plural unless n is 1: "1 trial",
// "3 trials".
func Count(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	if strings.HasSuffix(noun, "s") || strings.HasSuffix(noun, "sh") || strings.HasSuffix(noun, "ch") || strings.HasSuffix(noun, "x") {
		return fmt.Sprintf("%d %ses", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
