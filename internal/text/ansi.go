package text

import (
	"io"
	"strings"
)

// Colour and cursor sequences come into logs from build steps and test
// runners that think they write to a terminal (the classic builder wraps a
// step's stderr in "ESC[91m" ... "ESC[0m"). A log is read in a file, a CI
// page, JSON, XML and HTML, where they are noise, so they are removed:
//
//   - CSI: ESC [ parameters (0x30–0x3F), intermediates (0x20–0x2F), one
//     final byte (0x40–0x7E): colours, cursor moves, erases;
//   - strings: ESC ] (OSC: titles, hyperlinks), ESC P, ESC X, ESC ^, ESC _,
//     up to BEL or ESC \, or the end of the line;
//   - any other ESC with its intermediates and final byte (ESC 7, ESC ( B).
//
// A sequence's bytes are dropped as they come, so nothing is held back
// between writes: a sequence split across two writes goes as a whole, and
// a stream needs no flush. What cannot be part of a sequence (a control
// character, a byte of UTF-8) ends it and stays as text; so does every
// byte after maxSequence bytes of one, so that a stray ESC eats no more.
// Carriage returns stay: a terminal shows the last progress line, a file
// all of them. The 8-bit forms (0x9b for CSI) are left alone: in UTF-8
// text that byte continues a character.

// maxSequence is the most bytes one sequence may take; the rest is text.
const maxSequence = 1024

const esc = 0x1b

type ansiState uint8

const (
	inText   ansiState = iota
	inEscape           // after ESC
	inCSI              // after ESC [
	inNF               // after ESC and an intermediate byte
	inString           // after ESC ] and the other string openers
)

// ansiStripper is the state of a stream between writes.
type ansiStripper struct {
	state ansiState
	n     int // bytes of the current sequence after its introducer
}

// strip appends p without its escape sequences to dst.
func (s *ansiStripper) strip(dst, p []byte) []byte {
	for i := 0; i < len(p); i++ {
		if s.step(p[i]) {
			dst = append(dst, p[i])
		}
	}
	return dst
}

// step consumes one byte and reports whether it is text.
func (s *ansiStripper) step(b byte) bool {
	switch s.state {
	case inEscape:
		s.n = 0
		switch {
		case b == '[':
			s.state = inCSI
		case b == ']' || b == 'P' || b == 'X' || b == '^' || b == '_':
			s.state = inString
		case b >= 0x20 && b <= 0x2f:
			s.state = inNF
		case b >= 0x30 && b <= 0x7e:
			s.state = inText
		case b == esc:
			// the first ESC was alone
		default:
			s.state = inText
			return true
		}
		return false
	case inCSI, inNF:
		s.n++
		switch {
		case s.n > maxSequence:
		case b >= 0x20 && b <= 0x2f, s.state == inCSI && b >= 0x30 && b <= 0x3f:
			return false
		case b >= 0x30 && b <= 0x7e:
			s.state = inText
			return false
		}
		s.state = inText
		return s.step(b)
	case inString:
		s.n++
		switch {
		case b == 0x07:
			s.state = inText
			return false
		case b == esc:
			// ESC \ ends the string, as a sequence of its own; another ESC
			// ends it and starts the next.
			s.state = inEscape
			return false
		case b == '\n' || b == '\r':
		case s.n > maxSequence && b&0xc0 != 0x80:
			// not in the middle of a UTF-8 character
		default:
			return false
		}
		s.state = inText
		return true
	}
	if b == esc {
		s.state = inEscape
		return false
	}
	return true
}

// StripANSI returns s without its terminal escape sequences: colours,
// cursor moves, titles. Text, UTF-8 and line endings are kept as they are.
func StripANSI(s string) string {
	if strings.IndexByte(s, esc) < 0 {
		return s
	}
	var st ansiStripper
	return string(st.strip(make([]byte, 0, len(s)), []byte(s)))
}

// NewANSIStripper returns a writer that writes to w what it is given
// without terminal escape sequences, as StripANSI does, also when a
// sequence is split across writes. It holds nothing back: there is
// nothing to flush.
func NewANSIStripper(w io.Writer) io.Writer {
	return &ansiWriter{w: w}
}

type ansiWriter struct {
	w   io.Writer
	st  ansiStripper
	buf []byte
}

func (a *ansiWriter) Write(p []byte) (int, error) {
	a.buf = a.st.strip(a.buf[:0], p)
	if len(a.buf) == 0 {
		return len(p), nil
	}
	if _, err := a.w.Write(a.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}
