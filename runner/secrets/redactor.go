package secrets

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/flightdeck/flightdeck/internal/atomicfile"
)

// Redactor replaces secrets' values with Mask. The zero value (no secret)
// changes nothing.
//
// Every byte of every occurrence of a secret is masked, occurrences that
// overlap included: overlapping and nested occurrences make one masked
// span, which becomes one Mask, so that no part of a secret is left beside
// it. What stays is the text no occurrence touches.
type Redactor struct {
	values [][]byte // longest first
	maxLen int
}

// NewRedactor redacts the values given (duplicates and values too short to
// redact are dropped).
func NewRedactor(values ...string) *Redactor {
	seen := map[string]bool{}
	r := &Redactor{}
	for _, v := range values {
		if len(v) >= minLen && !seen[v] {
			seen[v] = true
			r.values = append(r.values, []byte(v))
			r.maxLen = max(r.maxLen, len(v))
		}
	}
	slices.SortFunc(r.values, func(a, b []byte) int { return len(b) - len(a) })
	return r
}

// Empty reports whether there is nothing to redact.
func (r *Redactor) Empty() bool { return r == nil || len(r.values) == 0 }

// Bytes returns data with every secret replaced (data itself when none is
// in it).
func (r *Redactor) Bytes(data []byte) []byte {
	if r.Empty() || !r.contains(data) {
		return data
	}
	var m masker
	out, _ := m.mask(r, make([]byte, 0, len(data)+len(Mask)), data, true)
	return out
}

// contains reports whether a secret occurs in data.
func (r *Redactor) contains(data []byte) bool {
	for _, v := range r.values {
		if bytes.Contains(data, v) {
			return true
		}
	}
	return false
}

// masker is the state of masking a stream between two of its pieces.
type masker struct {
	// masked is how many bytes at the start of the next piece are inside
	// the span being masked (its Mask is written already).
	masked int
}

// mask appends src to dst with its secrets masked, and returns it with how
// many of src's bytes it decided. A byte is decided once the longest secret
// starting at it could be seen whole: unless final (src ends the stream),
// the last r.maxLen-1 bytes of src are left, to start the next piece.
//
// It goes from one occurrence to the next (bytes.Index, not byte by byte):
// a span starts at an occurrence, takes in every occurrence that starts
// inside it, and becomes one Mask.
func (m *masker) mask(r *Redactor, dst, src []byte, final bool) ([]byte, int) {
	limit := len(src) - (r.maxLen - 1)
	if final {
		limit = len(src)
	}
	limit = max(limit, 0)
	// find is where values[k] next occurs at or after from, starting
	// before limit (-1: nowhere).
	find := func(k, from int) int {
		if from >= limit {
			return -1
		}
		j := bytes.Index(src[from:], r.values[k])
		if j < 0 || from+j >= limit {
			return -1
		}
		return from + j
	}
	next := make([]int, len(r.values))
	for k := range next {
		next[k] = find(k, 0)
	}
	end := m.masked // src[:end] is inside a span
	text := 0       // src[text:] is not yet appended
	for {
		// The occurrences that start inside the span extend it.
		for grew := true; grew; {
			grew = false
			for k, p := range next {
				for ; p >= 0 && p < end; p = find(k, p+1) {
					if reach := p + len(r.values[k]); reach > end {
						end, grew = reach, true
					}
				}
				next[k] = p
			}
		}
		text = max(text, end)
		at := -1 // the next occurrence, past the span
		for _, p := range next {
			if p >= 0 && (at < 0 || p < at) {
				at = p
			}
		}
		if at < 0 {
			break
		}
		dst = append(dst, src[text:at]...)
		dst = append(dst, Mask...)
		end = at + 1 // the occurrences at at make the span
	}
	if text < limit {
		dst = append(dst, src[text:limit]...)
	}
	m.masked = max(end-limit, 0)
	return dst, limit
}

// Writer returns a writer that passes what it is given on to w with the
// secrets masked, as it streams: no secret reaches w, not even one split
// across writes. Up to the longest secret's length less one byte are held
// back between writes; Close writes them (it does not close w). With
// nothing to redact, what is written goes straight to w.
func (r *Redactor) Writer(w io.Writer) io.WriteCloser {
	if r.Empty() {
		return nopCloser{w}
	}
	return &maskWriter{r: r, w: w}
}

// maskWriter is Redactor.Writer's writer.
type maskWriter struct {
	r    *Redactor
	w    io.Writer
	m    masker
	held []byte // given, not yet decided
	out  []byte
	err  error
}

func (mw *maskWriter) Write(p []byte) (int, error) {
	if err := mw.flush(p, false); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close writes the bytes held back.
func (mw *maskWriter) Close() error { return mw.flush(nil, true) }

func (mw *maskWriter) flush(p []byte, final bool) error {
	if mw.err != nil {
		return mw.err
	}
	src := append(mw.held, p...)
	var n int
	mw.out, n = mw.m.mask(mw.r, mw.out[:0], src, final)
	mw.held = append(mw.held[:0], src[n:]...)
	if len(mw.out) > 0 {
		if _, err := mw.w.Write(mw.out); err != nil {
			mw.err = err
			return err
		}
	}
	return nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// String is Bytes for a string.
func (r *Redactor) String(s string) string {
	if r.Empty() {
		return s
	}
	return string(r.Bytes([]byte(s)))
}

// File redacts one file in place (atomically), when it holds a secret.
func (r *Redactor) File(path string) error {
	if r.Empty() {
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out := r.Bytes(data)
	if len(out) == len(data) && bytes.Equal(out, data) {
		return nil
	}
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if err := atomicfile.Replace(path, out); err != nil {
		return err
	}
	return os.Chmod(path, info.Mode().Perm())
}

// Tree redacts every regular file under dir (symlinks are not followed).
func (r *Redactor) Tree(dir string) error {
	if r.Empty() {
		return nil
	}
	var errs []error
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			return nil
		}
		if d.Type().IsRegular() {
			if err := r.File(p); err != nil {
				errs = append(errs, fmt.Errorf("redact %s: %w", p, err))
			}
		}
		return nil
	})
	return errors.Join(errs...)
}

// Publish masks every regular file under stage, then renames stage to dst
// (which must not exist, or be an empty directory). Files copied out of a
// container are extracted into a stage in the run's private work dir and
// published into the trial's dir: an interruption between the copy and
// the masking leaves them nowhere but the work dir, which the run removes.
func (r *Redactor) Publish(stage, dst string) error {
	if err := r.Tree(stage); err != nil {
		return err
	}
	// An empty dir in dst's place goes (a non-empty one stays, and the
	// rename fails).
	if err := os.Remove(dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("publish %s: %w", dst, err)
	}
	if err := os.Rename(stage, dst); err != nil {
		return fmt.Errorf("publish %s: %w", dst, err)
	}
	return nil
}
