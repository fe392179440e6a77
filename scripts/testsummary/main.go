// Command testsummary reads `go test -json` on stdin and prints what
// `go test` prints without -v: each package's ok or FAIL line, and the
// output of each failed test (the whole of it, once the test has failed).
// At the end it prints each package's time and the slowest tests, so that
// a CI log says where its minutes went. It exits 0 whatever the tests did:
// the caller keeps go test's own exit code.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// timing is a package's or a test's time.
type timing struct {
	name    string
	elapsed float64
	failed  bool
}

type summary struct {
	out      io.Writer
	pending  map[string][]string // a top-level test's output so far, by package and test
	packages []timing
	tests    []timing
}

func main() {
	s := &summary{out: os.Stdout, pending: map[string][]string{}}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			fmt.Fprintln(s.out, sc.Text()) // not JSON: go's own message (a build failure, a vet error)
			continue
		}
		s.add(e)
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(os.Stderr, "testsummary: reading go test's output: %v\n", err)
	}
	s.report(15)
}

func (s *summary) add(e event) {
	top, _, _ := strings.Cut(e.Test, "/")
	key := e.Package + " " + top
	switch {
	case e.Action == "build-output":
		fmt.Fprint(s.out, e.Output)
	case e.Test == "" && e.Action == "output":
		if o := strings.TrimSpace(e.Output); o != "PASS" && o != "" {
			fmt.Fprint(s.out, e.Output)
		}
	case e.Test == "" && (e.Action == "pass" || e.Action == "fail"):
		s.packages = append(s.packages, timing{e.Package, e.Elapsed, e.Action == "fail"})
	case e.Action == "output":
		if !strings.HasPrefix(e.Output, "=== ") {
			s.pending[key] = append(s.pending[key], e.Output)
		}
	case e.Test != top:
		// A subtest's end: its output stays with its top-level test's.
	case e.Action == "pass" || e.Action == "skip":
		delete(s.pending, key)
		s.tests = append(s.tests, timing{e.Package + " " + e.Test, e.Elapsed, false})
	case e.Action == "fail":
		fmt.Fprint(s.out, strings.Join(s.pending[key], ""))
		delete(s.pending, key)
		s.tests = append(s.tests, timing{e.Package + " " + e.Test, e.Elapsed, true})
	}
}

// report prints each package's time, longest first, and the n slowest
// tests.
func (s *summary) report(n int) {
	if len(s.packages) == 0 {
		return
	}
	longest := func(t []timing) {
		sort.SliceStable(t, func(i, j int) bool { return t[i].elapsed > t[j].elapsed })
	}
	longest(s.packages)
	longest(s.tests)
	fmt.Fprintln(s.out, "\npackages by time:")
	for _, p := range s.packages {
		if p.elapsed >= 1 {
			fmt.Fprintf(s.out, "  %8s  %s%s\n", dur(p.elapsed), p.name, failed(p))
		}
	}
	fmt.Fprintf(s.out, "the %d slowest tests:\n", min(n, len(s.tests)))
	for _, t := range s.tests[:min(n, len(s.tests))] {
		fmt.Fprintf(s.out, "  %8s  %s%s\n", dur(t.elapsed), t.name, failed(t))
	}
}

func dur(sec float64) string {
	return (time.Duration(sec*10) * time.Second / 10).String()
}

func failed(t timing) string {
	if t.failed {
		return "  FAIL"
	}
	return ""
}
