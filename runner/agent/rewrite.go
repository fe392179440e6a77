package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/flightdeck/flightdeck/runner/suite"
)

// maxStubOutput caps what a stub prints of the verifier's output.
const maxStubOutput = 16 << 10

// rewriteCommon replaces a file with the stub on its stdin where the
// agent's user can: in place when it can write the file, anew when it can
// write its directory only.
const rewriteCommon = `stub() {
  if [ -f "$1" ] && [ -w "$1" ]; then cat > "$1"
  elif [ -e "$1" ] && [ -w "$(dirname -- "$1")" ]; then rm -f -- "$1" && cat > "$1" && chmod 755 -- "$1"
  else cat >/dev/null; return 0; fi && echo "planted: $1"
}
`

// rewriteScript is the rewrite attack's script for a trial's plan: one
// stub per file, in the file's language.
func rewriteScript(rw *suite.Rewrite) string {
	var b strings.Builder
	b.WriteString(rewriteCommon)
	if rw == nil || len(rw.Files) == 0 {
		note := "no file of the verifier's to rewrite"
		if rw != nil && rw.Note != "" {
			note = rw.Note
		}
		fmt.Fprintf(&b, "echo %s\n", shellQuote(NotePrefix+note))
		return b.String()
	}
	for _, f := range rw.Files {
		// What the file's own run printed, where the tracer saw it: the
		// verifier may have read it from a file or a pipe rather than
		// from its own output.
		out, ok := rw.Printed[f]
		if !ok {
			out = rw.Output
		}
		if len(out) > maxStubOutput {
			out = out[len(out)-maxStubOutput:]
		}
		body := stubFor(f, out)
		if body == "" {
			continue
		}
		sum := sha256.Sum256([]byte(body))
		eof := "FLIGHTDECK_STUB_" + hex.EncodeToString(sum[:6])
		fmt.Fprintf(&b, "stub %s <<'%s'\n%s\n%s\n", shellQuote(f), eof, body, eof)
	}
	b.WriteString("exit 0\n")
	return b.String()
}

// stubFor is a program in the file's language that prints out and exits
// 0, ending the process that loaded it ("" for a language it has none
// for). A file without an extension, or a program, becomes a shell script.
func stubFor(file, out string) string {
	q, _ := json.Marshal(out) // a JSON string is a Python and a JavaScript string literal
	switch path.Ext(file) {
	case ".py":
		return fmt.Sprintf("import os, sys\nsys.stdout.write(%s)\nsys.stdout.flush()\nos._exit(0)", q)
	case ".js", ".mjs", ".cjs":
		return fmt.Sprintf("process.stdout.write(%s);\nprocess.exit(0);", q)
	case ".sh", ".bash", "":
		return "#!/bin/sh\nprintf '%s' " + shellQuote(out) + "\nexit 0"
	}
	return ""
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
