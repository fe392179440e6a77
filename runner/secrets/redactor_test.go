package secrets

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRedactor(t *testing.T) {
	r := NewRedactor("sk-secret-value", "sk-secret", "ab", "sk-secret")
	assert.Equal(t, "key=[REDACTED] and [REDACTED]x; ab stays", r.String("key=sk-secret-value and sk-secretx; ab stays"))
	assert.True(t, NewRedactor().Empty())
	assert.Equal(t, "same", NewRedactor().String("same"))

	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755))
	secretFile := filepath.Join(dir, "a", "b", "agent.log")
	clean := filepath.Join(dir, "a", "clean.txt")
	require.NoError(t, os.WriteFile(secretFile, []byte("using sk-secret-value\n"), 0o640))
	require.NoError(t, os.WriteFile(clean, []byte("nothing\n"), 0o644))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(dir, "link")))
	require.NoError(t, r.Tree(dir))
	data, err := os.ReadFile(secretFile)
	require.NoError(t, err)
	assert.Equal(t, "using [REDACTED]\n", string(data))
	info, err := os.Stat(secretFile)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), info.Mode().Perm(), "the mode is kept")
}

// streamed writes input to a Redactor's writer in pieces cut at cuts and
// returns what reached the other side.
func streamed(t testing.TB, r *Redactor, input []byte, cuts []int) string {
	t.Helper()
	var out bytes.Buffer
	w := r.Writer(&out)
	last := 0
	for _, c := range cuts {
		c = min(max(c, last), len(input))
		n, err := w.Write(input[last:c])
		require.NoError(t, err)
		require.Equal(t, c-last, n)
		last = c
	}
	_, err := w.Write(input[last:])
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return out.String()
}

func TestMaskWriter(t *testing.T) {
	for _, tc := range []struct {
		name    string
		secrets []string
		input   string
		want    string
	}{
		{"no secret", []string{"sk-secret-1"}, "plain text, nothing to hide\n", "plain text, nothing to hide\n"},
		{"one", []string{"sk-secret-1"}, "key=sk-secret-1\n", "key=[REDACTED]\n"},
		{"at the very end", []string{"sk-secret-1"}, "key=sk-secret-1", "key=[REDACTED]"},
		{"at the very start", []string{"sk-secret-1"}, "sk-secret-1 first", "[REDACTED] first"},
		{"alone", []string{"sk-secret-1"}, "sk-secret-1", "[REDACTED]"},
		{"twice in a row", []string{"sk-secret-1"}, "sk-secret-1sk-secret-1", "[REDACTED][REDACTED]"},
		{"a prefix only", []string{"sk-secret-1"}, "sk-secret-", "sk-secret-"},
		{"nested", []string{"sk-secret-value", "secret"}, "a sk-secret-value b secret c", "a [REDACTED] b [REDACTED] c"},
		// Occurrences that overlap make one span: no part of either is left.
		{"overlapping", []string{"abcd1234", "1234wxyz"}, "<abcd1234wxyz>", "<[REDACTED]>"},
		{"overlapping, shorter first", []string{"abcd", "bcdefgh"}, "<abcdefgh>", "<[REDACTED]>"},
		{"a chain", []string{"aaaa"}, "x" + strings.Repeat("a", 50) + "y", "x[REDACTED]y"},
		{"the mask itself", []string{"sk-secret-1"}, "[REDACTED] stays", "[REDACTED] stays"},
		{"nothing to redact", nil, "sk-secret-1", "sk-secret-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRedactor(tc.secrets...)
			assert.Equal(t, tc.want, string(r.Bytes([]byte(tc.input))), "at once")
			if !r.Empty() {
				assert.Equal(t, tc.want, referenceMask(r, []byte(tc.input)), "byte by byte")
			}
			// Every way of cutting the input in two and three pieces,
			// byte by byte too.
			for i := 0; i <= len(tc.input); i++ {
				assert.Equal(t, tc.want, streamed(t, r, []byte(tc.input), []int{i}), "cut at %d", i)
				for j := i; j <= len(tc.input); j++ {
					assert.Equal(t, tc.want, streamed(t, r, []byte(tc.input), []int{i, j}), "cut at %d and %d", i, j)
				}
			}
			var each []int
			for i := range tc.input {
				each = append(each, i)
			}
			assert.Equal(t, tc.want, streamed(t, r, []byte(tc.input), each), "a byte at a time")
		})
	}
}

// What the writer holds back between writes is never more than a secret
// less one byte, and a write with no secret in reach passes on at once.
func TestMaskWriterHoldsBackLittle(t *testing.T) {
	r := NewRedactor("sk-secret-1", "tok-0001")
	var out bytes.Buffer
	w := r.Writer(&out)
	_, err := w.Write([]byte("0123456789abcdefghij sk-secr"))
	require.NoError(t, err)
	assert.Equal(t, "0123456789abcdefgh", out.String(), "the last 10 bytes wait for the rest")
	_, err = w.Write([]byte("et-1 done"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	assert.Equal(t, "0123456789abcdefghij [REDACTED] done", out.String())
	require.NoError(t, w.Close(), "a second close writes nothing")
	assert.Equal(t, "0123456789abcdefghij [REDACTED] done", out.String())

	var direct bytes.Buffer
	plain := NewRedactor().Writer(&direct)
	_, err = plain.Write([]byte("sk-secret-1"))
	require.NoError(t, err)
	assert.Equal(t, "sk-secret-1", direct.String(), "nothing to redact: nothing held")
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestMaskWriterError(t *testing.T) {
	w := NewRedactor("sk-secret-1").Writer(failingWriter{})
	_, err := w.Write([]byte(strings.Repeat("x", 100)))
	require.EqualError(t, err, "disk full")
	_, err = w.Write([]byte("more"))
	require.EqualError(t, err, "disk full", "the first error sticks")
	require.EqualError(t, w.Close(), "disk full")
}

func TestPublish(t *testing.T) {
	dir := t.TempDir()
	stage := filepath.Join(dir, ".work", "copy")
	require.NoError(t, os.MkdirAll(filepath.Join(stage, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(stage, "sub", "out.txt"), []byte("token sk-secret-1\n"), 0o644))
	dst := filepath.Join(dir, "trial", "logs")
	require.NoError(t, os.MkdirAll(dst, 0o755), "an empty dir may be there")
	require.NoError(t, NewRedactor("sk-secret-1").Publish(stage, dst))
	data, err := os.ReadFile(filepath.Join(dst, "sub", "out.txt"))
	require.NoError(t, err)
	assert.Equal(t, "token [REDACTED]\n", string(data))
	assert.NoDirExists(t, stage)
}

// FuzzMaskWriter: however the output is cut into writes, what reaches the
// file is what masking it whole gives; no secret is left in it outside the
// masks; and text without a secret passes unchanged.
func FuzzMaskWriter(f *testing.F) {
	f.Add([]byte("key=sk-secret-1 and sk-secret-1"), "sk-secret-1", "secret", []byte{3, 14, 20})
	f.Add([]byte("<abcd1234wxyz>"), "abcd1234", "1234wxyz", []byte{5, 9})
	f.Add([]byte("aaaaaaaaaaaaaaaaaaaa"), "aaaa", "aaaaaa", []byte{1, 2, 3, 7})
	f.Add([]byte("[REDACTED]D]ab"), "D]ab", "ED]a", []byte{10})
	f.Add([]byte("no secret here"), "zzzz", "yyyyy", []byte{})
	f.Fuzz(func(t *testing.T, input []byte, s1, s2 string, cutBytes []byte) {
		r := NewRedactor(s1, s2)
		var cuts []int
		at := 0
		for _, c := range cutBytes {
			at += int(c)
			cuts = append(cuts, at)
		}
		whole := string(r.Bytes(input))
		got := streamed(t, r, input, cuts)
		if got != whole {
			t.Fatalf("streamed %q, at once %q", got, whole)
		}
		if want := referenceMask(r, input); !r.Empty() && whole != want {
			t.Fatalf("masked %q, byte by byte %q", whole, want)
		}
		outside := strings.ReplaceAll(got, Mask, "\x00")
		for _, s := range []string{s1, s2} {
			if len(s) >= minLen && !strings.Contains(s, "\x00") && strings.Contains(outside, s) {
				t.Fatalf("secret %q left in %q", s, got)
			}
		}
		if !bytes.Contains(input, []byte(s1)) && !bytes.Contains(input, []byte(s2)) || r.Empty() {
			if got != string(input) {
				t.Fatalf("no secret in %q, yet it became %q", input, got)
			}
		}
	})
}

// referenceMask is masking as the Redactor's doc says it, byte by byte: a
// span starts at a byte where a secret occurs, takes in every occurrence
// that starts inside it, and becomes one Mask.
func referenceMask(r *Redactor, data []byte) string {
	var out []byte
	end := 0
	for i := range data {
		reach := i
		for _, v := range r.values {
			if bytes.HasPrefix(data[i:], v) {
				reach = max(reach, i+len(v))
			}
		}
		switch {
		case i < end:
			end = max(end, reach)
		case reach > i:
			out = append(out, Mask...)
			end = reach
		default:
			out = append(out, data[i])
		}
	}
	return string(out)
}
