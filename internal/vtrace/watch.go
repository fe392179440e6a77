package vtrace

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// WatchCommand is the hidden first argument that makes flightdeck's
// executable a watcher of opens: flightdeck __watch OUT FILE... -- CMD
// ARGS... runs CMD and writes to OUT each FILE that some process of the
// container opened while CMD ran, one per line. Unlike a file's access
// time, which a mount may not keep and a cached read does not move, the
// kernel reports every open.
const WatchCommand = "__watch"

// WatchMain is the watcher's entry; it returns CMD's exit code (127 when
// it could not start, 126 when the files cannot be watched).
func WatchMain(args []string, stderr io.Writer) int {
	sep := slices.Index(args, "--")
	if sep < 1 || sep == len(args)-1 {
		fmt.Fprintf(stderr, "usage: flightdeck %s OUT FILE... -- CMD [ARGS...]\n", WatchCommand)
		return 2
	}
	out, files, argv := args[0], args[1:sep], args[sep+1:]
	opened, code, err := watch(files, argv)
	if err != nil {
		// Nothing is written: no record is not "opened nothing", which
		// would have every file altered after a command that never ran.
		fmt.Fprintf(stderr, "watch: %v\n", err)
		return code
	}
	var b strings.Builder
	for _, f := range opened {
		b.WriteString(f + "\n")
	}
	f, ferr := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if ferr == nil {
		_, ferr = f.WriteString(b.String())
		if cerr := f.Close(); ferr == nil {
			ferr = cerr
		}
	}
	if ferr != nil {
		fmt.Fprintf(stderr, "watch: %v\n", ferr)
		return 126
	}
	return code
}
