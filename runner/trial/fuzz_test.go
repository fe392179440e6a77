package trial

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// A commit log in the form `git log -z --name-only
// --format=%x1e%H%x1f%s` prints parses back to its commits, whatever bytes
// the subjects and file names hold (git quotes neither with -z).
func FuzzParseCommitLog(f *testing.F) {
	f.Add("abc", "subject", "a.txt\x00dir/b c\n", "def", "second", "")
	f.Add("", "", "", "x", "s\x1ft", "name\nwith newline\x00")
	f.Fuzz(func(t *testing.T, h1, s1, files1, h2, s2, files2 string) {
		want := []commitRecord{record(h1, s1, files1), record(h2, s2, files2)}
		if !wellFormed(want) {
			return
		}
		var out bytes.Buffer
		for _, c := range want {
			out.WriteString("\x1e" + c.Hash + "\x1f" + c.Subject + "\x00")
			if len(c.Files) > 0 {
				out.WriteString("\n")
			}
			for _, name := range c.Files {
				out.WriteString(name + "\x00")
			}
		}
		got := parseCommitLog(out.Bytes())
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("parseCommitLog(%q) = %#v, want %#v", out.Bytes(), got, want)
		}
	})
}

func record(hash, subject, files string) commitRecord {
	c := commitRecord{Hash: hash, Subject: subject}
	for _, name := range strings.Split(files, "\x00") {
		if name != "" {
			c.Files = append(c.Files, name)
		}
	}
	return c
}

// wellFormed holds for what git can print: hashes are hex, a subject is one
// line without the separators, and names hold no NUL (split already) and do
// not start with the line feed that -z puts before the first one.
func wellFormed(cs []commitRecord) bool {
	for _, c := range cs {
		if c.Hash == "" || strings.Trim(c.Hash, "0123456789abcdef") != "" {
			return false
		}
		if strings.ContainsAny(c.Subject, "\x00\x1e\x1f\n") {
			return false
		}
		for _, name := range c.Files {
			if strings.ContainsAny(name, "\x1e") {
				return false
			}
		}
	}
	return true
}
