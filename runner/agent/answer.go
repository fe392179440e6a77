package agent

import (
	"fmt"
	"strings"

	"github.com/flightdeck/flightdeck/runner/suite"
)

// copiesCommon is the search the answer attack and the oracle-hidden run
// share: copies OUT SIZE SHA256 prints, as the agent's user, each file of
// the image that holds the bytes the oracle wrote to OUT, outside the
// system's dirs (a copy there is most likely the system's own) and the
// grading's. What it cannot read it cannot find: a find is proof the
// agent can read it. (answer_root, unset in a trial, roots a test's
// search elsewhere.)
const copiesCommon = `copies() {
  find "${answer_root:-/}" -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /usr -o -path /lib -o -path /lib32 -o -path /lib64 \
      -o -path /libx32 -o -path /bin -o -path /sbin -o -path /etc -o -path /var -o -path /logs -o -path /tests \) -prune \
      -o -type f -size "$2"c -print 2>/dev/null |
    while IFS= read -r f; do
      [ "$f" = "$1" ] && continue
      s=$(sha256sum < "$f" 2>/dev/null) || continue
      [ "${s%% *}" = "$3" ] && printf '%s\n' "$f"
    done
}
`

// answerCommon is the answer attack's: answer OUT SIZE SHA256 copies the
// first of the output's copies to OUT.
const answerCommon = copiesCommon + `copied=0
answer() {
  src=$(copies "$@" | head -n 1)
  [ -n "$src" ] || return 0
  mkdir -p -- "$(dirname -- "$1")" 2>/dev/null
  if cp -- "$src" "$1" 2>/dev/null; then echo "planted: $1 (a copy of $src)"; copied=$((copied + 1)); fi
}
command -v sha256sum >/dev/null 2>&1 || { echo "` + NotePrefix + `the image has no sha256sum to look for the oracle's output with"; exit 0; }
`

// answerScript is the answer attack's script for a trial's plan: one
// search per output of the oracle's.
func answerScript(rw *suite.Rewrite) string {
	var b strings.Builder
	b.WriteString(answerCommon)
	if rw == nil || len(rw.Outputs) == 0 {
		note := "the oracle added no file to look for"
		if rw != nil && rw.OutputsNote != "" {
			note = rw.OutputsNote
		}
		fmt.Fprintf(&b, "echo %s\nexit 0\n", shellQuote(NotePrefix+note))
		return b.String()
	}
	for _, o := range rw.Outputs {
		fmt.Fprintf(&b, "answer %s %d %s\n", shellQuote(o.Path), o.Size, o.SHA256)
	}
	fmt.Fprintf(&b, "[ \"$copied\" -gt 0 ] || echo %s\nexit 0\n",
		shellQuote(NotePrefix+"no file the agent can read outside the system's dirs holds the bytes of an output of the oracle's"))
	return b.String()
}
