package text

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var ansiCases = []struct {
	name, in, want string
}{
	{"plain", "hello\nworld\n", "hello\nworld\n"},
	{"empty", "", ""},
	{"classic builder stderr", "\x1b[91mE: Unable to locate package nope\n\x1b[0m", "E: Unable to locate package nope\n"},
	{"colour and reset", "\x1b[1;31mFAIL\x1b[m test_x", "FAIL test_x"},
	{"private parameters", "\x1b[?25lhidden cursor\x1b[?25h", "hidden cursor"},
	{"erase line", "50%\r\x1b[K100%\n", "50%\r100%\n"},
	{"carriage returns stay", "a\rb\r\nc", "a\rb\r\nc"},
	{"osc title with BEL", "\x1b]0;make\x07built\n", "built\n"},
	{"osc hyperlink with ST", "\x1b]8;;https://example.com/a\x1b\\link\x1b]8;;\x1b\\ done", "link done"},
	{"osc ends at a newline", "\x1b]0;broken\nnext line\n", "\nnext line\n"},
	{"dcs string", "a\x1bPq#0;2;0;0;0\x1b\\b", "ab"},
	{"two-byte escapes", "\x1b7saved\x1b8\x1bc", "saved"},
	{"charset select", "\x1b(Bplain\x1b)0", "plain"},
	{"lone escape at the end", "text\x1b", "text"},
	{"escape before a newline", "a\x1b\nb", "a\nb"},
	{"double escape", "a\x1b\x1b[31mb", "ab"},
	{"csi ended by a control character", "a\x1b[31\nb", "a\nb"},
	{"csi ended by utf-8", "\x1b[1é", "é"},
	{"utf-8 survives", "grüße, 日本語, emoji 🚀, ě\n", "grüße, 日本語, emoji 🚀, ě\n"},
	{"utf-8 beside colour", "\x1b[32m✓\x1b[0m passé", "✓ passé"},
	{"8-bit csi bytes stay (they continue UTF-8)", "\xc4\x9b[31m", "\xc4\x9b[31m"},
	{"bell outside a sequence stays", "ding\x07", "ding\x07"},
}

func TestStripANSI(t *testing.T) {
	for _, tc := range ansiCases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, StripANSI(tc.in))
		})
	}
}

// TestANSIStripperSplitWrites writes each case in two pieces at every
// split point, and byte by byte: a sequence cut in two goes as a whole.
func TestANSIStripperSplitWrites(t *testing.T) {
	for _, tc := range ansiCases {
		t.Run(tc.name, func(t *testing.T) {
			for i := 0; i <= len(tc.in); i++ {
				assert.Equal(t, tc.want, stripWrites(t, tc.in[:i], tc.in[i:]), "split at %d", i)
			}
			assert.Equal(t, tc.want, stripWrites(t, strings.Split(tc.in, "")...), "byte by byte")
		})
	}
}

func TestStripANSISequenceLimit(t *testing.T) {
	long := strings.Repeat("x", maxSequence+10)
	// A string sequence that never ends gives up after maxSequence bytes.
	got := StripANSI("\x1b]" + long)
	assert.Equal(t, strings.Repeat("x", 10), got)
	// A parameter run that long is no CSI either.
	got = StripANSI("\x1b[" + strings.Repeat("1", maxSequence+10) + "m")
	assert.Equal(t, strings.Repeat("1", 10)+"m", got)
	// The limit never splits a UTF-8 character.
	got = StripANSI("\x1b]" + strings.Repeat("é", maxSequence) + "\n")
	assert.True(t, utf8.ValidString(got), "%q", got)
}

func TestANSIStripperPassesWriteErrors(t *testing.T) {
	boom := errors.New("disk full")
	w := NewANSIStripper(failingWriter{boom})
	_, err := w.Write([]byte("\x1b[31m"))
	assert.NoError(t, err, "nothing to write")
	n, err := w.Write([]byte("text"))
	assert.ErrorIs(t, err, boom)
	assert.Zero(t, n)
}

type failingWriter struct{ err error }

func (f failingWriter) Write([]byte) (int, error) { return 0, f.err }

func stripWrites(t *testing.T, pieces ...string) string {
	t.Helper()
	var b strings.Builder
	w := NewANSIStripper(&b)
	for _, p := range pieces {
		n, err := w.Write([]byte(p))
		require.NoError(t, err)
		require.Equal(t, len(p), n)
	}
	return b.String()
}

func FuzzStripANSI(f *testing.F) {
	for _, tc := range ansiCases {
		f.Add(tc.in, uint(len(tc.in)/2))
	}
	f.Fuzz(func(t *testing.T, s string, cut uint) {
		got := StripANSI(s)
		if strings.IndexByte(got, 0x1b) >= 0 {
			t.Fatalf("StripANSI(%q) = %q keeps an ESC", s, got)
		}
		if strings.IndexByte(s, 0x1b) < 0 && got != s {
			t.Fatalf("StripANSI(%q) = %q changed text without escapes", s, got)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("StripANSI(%q) = %q broke UTF-8", s, got)
		}
		if again := StripANSI(got); again != got {
			t.Fatalf("StripANSI is not idempotent on %q: %q then %q", s, got, again)
		}
		i := int(cut % uint(len(s)+1))
		if split := stripWrites(t, s[:i], s[i:]); split != got {
			t.Fatalf("split at %d of %q: %q, whole: %q", i, s, split, got)
		}
	})
}
