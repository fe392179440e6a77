package audit

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/vtrace"
	"github.com/flightdeck/flightdeck/runner/results"
)

// Grading is what the oracle's graded runs say of the hidden files, for
// telling an input the agent is given from an answer or the tests: what
// the traced verifier used (nil: no trace), where it saw tests/, and the
// blobs the oracle wrote in its work dir.
type Grading struct {
	Events   []vtrace.Event
	TestsDir string            // tests/ in the grading container: /tests (Harbor's), or the native grader's
	Written  map[string]string // git blob id (as diff.patch abbreviates it) → the work-dir file the oracle wrote it to
	WorkDir  string
	// Added are the text files the oracle added to its work dir, whole
	// (NewFiles): an image that holds one holds the answer.
	Added map[string][]byte
}

type output struct {
	path string // in the container
	size int64
}

// outputSet are the oracle's added files by SHA-256.
type outputSet map[string]output

func (o outputSet) sizes() []int64 {
	var out []int64
	for _, f := range o {
		if !slices.Contains(out, f.size) {
			out = append(out, f.size)
		}
	}
	return out
}

// outputs are the oracle's added files worth a search of the image: those
// of minLeakSize bytes or more.
func (g *Grading) outputs() outputSet {
	out := outputSet{}
	if g == nil {
		return out
	}
	for file, data := range g.Added {
		if len(data) < minLeakSize {
			continue
		}
		sum := sha256.Sum256(data)
		out[hex.EncodeToString(sum[:])] = output{path: path.Join(g.WorkDir, file), size: int64(len(data))}
	}
	return out
}

// systemPath reports whether p is where the base's files are: a copy of an
// output there is most likely the system's own (a licence, a word list).
func systemPath(p string) bool {
	for _, dir := range []string{"/usr", "/lib", "/lib64", "/etc", "/var", "/bin", "/sbin", "/proc", "/sys"} {
		if strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return false
}

// leakKind is what a hidden file where the agent can read it is: "answer"
// (the oracle writes the same bytes), "input" (a file of tests/ the
// verifier reads as data only, and the oracle does not write: the
// verifier's own copy of an input the agent is given too), or "leak".
func (g *Grading) leakKind(taskDir, src string) (kind, detail string) {
	if g == nil {
		return "leak", ""
	}
	if blob, err := gitBlob(filepath.Join(taskDir, filepath.FromSlash(src))); err == nil {
		for abbrev, file := range g.Written {
			if len(abbrev) >= 7 && strings.HasPrefix(blob, abbrev) {
				return "answer", path.Join(g.WorkDir, file)
			}
		}
	}
	rel, ok := strings.CutPrefix(src, "tests/")
	if !ok || g.Events == nil {
		return "leak", ""
	}
	if vtrace.Use(g.Events, path.Join(g.TestsDir, rel)) == "data" {
		return "input", ""
	}
	return "leak", ""
}

// classifyLeaks sorts the leaks (each "SRC is in …") into those that
// stand, with an answer said so, and the inputs, which are not leaks.
func classifyLeaks(taskDir string, leaks []string, g *Grading) (stand, inputs []string) {
	var inputSrcs []string
	where := map[string][]string{}
	defer func() {
		for _, src := range inputSrcs {
			inputs = append(inputs, fmt.Sprintf("%s (%s; the verifier reads it as data, the oracle does not write it)", src, strings.Join(where[src], ", ")))
		}
	}()
	for _, l := range leaks {
		src, at, ok := strings.Cut(l, " is in ")
		if !ok {
			stand = append(stand, l)
			continue
		}
		switch kind, file := g.leakKind(taskDir, src); kind {
		case "input":
			if where[src] == nil {
				inputSrcs = append(inputSrcs, src)
			}
			where[src] = append(where[src], "in "+at)
		case "answer":
			stand = append(stand, fmt.Sprintf("%s: the answer is where the agent can read it (the oracle writes the same bytes to %s)", l, file))
		default:
			stand = append(stand, l)
		}
	}
	return stand, inputs
}

// gitBlob is a file's git blob id.
func gitBlob(p string) (string, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// WrittenBlobs reads a diff.patch's new blobs by file: what the trial
// wrote in its work dir ("index OLD..NEW" of each "diff --git a/X b/X").
func WrittenBlobs(patch string) map[string]string {
	out := map[string]string{}
	file := ""
	sc := bufio.NewScanner(strings.NewReader(patch))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "diff --git a/"); ok {
			if i := strings.LastIndex(rest, " b/"); i >= 0 {
				file = rest[i+3:]
			}
			continue
		}
		if rest, ok := strings.CutPrefix(line, "index "); ok && file != "" {
			ids, _, _ := strings.Cut(rest, " ")
			if _, to, ok := strings.Cut(ids, ".."); ok && strings.Trim(to, "0") != "" {
				out[to] = file
			}
			file = ""
		}
	}
	return out
}

// NewFiles are the files a diff.patch adds as text, whole: the work-dir
// file → its bytes.
func NewFiles(patch string) map[string][]byte {
	out := map[string][]byte{}
	var file string
	var body []byte
	adding, inHunk := false, false
	flush := func() {
		if adding && file != "" {
			out[file] = body
		}
		file, body, adding, inHunk = "", nil, false, false
	}
	for line := range strings.Lines(patch) {
		switch {
		case strings.HasPrefix(line, "diff --git a/"):
			flush()
			rest := strings.TrimSuffix(strings.TrimPrefix(line, "diff --git a/"), "\n")
			if i := strings.LastIndex(rest, " b/"); i >= 0 {
				file = rest[i+3:]
			}
		case !inHunk && strings.HasPrefix(line, "new file mode"):
			adding = true
		case !inHunk && strings.HasPrefix(line, "GIT binary patch"):
			adding = false
		case strings.HasPrefix(line, "@@ -0,0 "):
			inHunk = true
		case inHunk && strings.HasPrefix(line, "+"):
			body = append(body, line[1:]...)
		case inHunk && strings.HasPrefix(line, `\ No newline at end of file`):
			body = bytes.TrimSuffix(body, []byte("\n"))
		}
	}
	flush()
	return out
}

// referenceCopies says whether the reference copies the answer at src,
// from the oracle run with src moved away: a finding of its own (returned
// second) when it then scores less, a note on the leak (returned first)
// when it still scores. Without that run (or with src not moved), a
// solve.sh that names src is said as a possibility.
func referenceCopies(src string, in Input) (string, string) {
	h := in.Hidden
	if h == nil || !slices.Contains(in.HiddenFiles, src) || h.Outcome.Ungraded() {
		if solutionNames(in.Dir, src) {
			return fmt.Sprintf("; solution/solve.sh names %s: the reference may copy the answer rather than compute it, and proves nothing of the task's solvability", src), ""
		}
		return "", ""
	}
	best, got := hiddenScores(in)
	if got >= best {
		return fmt.Sprintf("; the reference computes it: with %s moved away the oracle still scores %g (logs: %s)", src, got, h.Trial), ""
	}
	return "", fmt.Sprintf("the reference copies the answer: with %s moved away the oracle scores %s where it scores %g, so it proves nothing of the task's solvability (logs: %s)",
		src, rewardText(h), best, h.Trial)
}

// copiedAnswers sorts out of leaks the oracle's outputs found in the image
// (taskLeaks' "the oracle's output OUT is in the image at SRC") that the
// answer attack copied without scoring above nop: the bytes are there, but
// an agent that takes them still has the work to do (an example output,
// say), so they are inputs, not the answer. A copy that scored stays, with
// the proof; without the attack's verdict the finding stands as found.
func copiedAnswers(leaks []string, in Input) (stand, inputs []string) {
	var answer *AttackRun
	for i := range in.Attacks {
		if in.Attacks[i].Name == "answer" {
			answer = &in.Attacks[i]
		}
	}
	// The attack's verdict counts when it finished against a verifier the
	// oracle passes.
	var r *results.Result
	if answer != nil && answer.Result != nil && answer.Result.Outcome != grader.OutcomeInfraError && oracleBeatsNop(in.Oracle, in.Nop) {
		r = answer.Result
	}
	floor := 0.0
	if in.Nop != nil && in.Nop.Reward != nil {
		floor = *in.Nop.Reward
	}
	for _, l := range leaks {
		rest, ok := strings.CutPrefix(l, "the oracle's output ")
		if !ok {
			stand = append(stand, l)
			continue
		}
		out, rest, _ := strings.Cut(rest, " is in the image at ")
		src, _, _ := strings.Cut(rest, ":")
		copiedIt := r != nil && slices.Contains(answer.Planted, out+" (a copy of "+src+")")
		won := copiedIt && r.Reward != nil && *r.Reward > floor
		if copiedIt && !won {
			inputs = append(inputs, fmt.Sprintf("%s (holds the bytes the oracle writes to %s, but an empty attempt that copies it scores %s: the reward needs the work; logs: %s)",
				src, out, rewardText(r), r.Trial))
			continue
		}
		if won {
			l += fmt.Sprintf(" (proven: an empty attempt that copies it scores %g where nop scores %g; logs: %s)", *r.Reward, floor, r.Trial)
		}
		note, copies := referenceCopies(src, in)
		stand = append(stand, l+note)
		if copies != "" {
			stand = append(stand, copies)
		}
	}
	return stand, inputs
}

// alteredAnswer judges the oracle-hidden run that probed, instead of
// hiding, the files the verifier reads as data (agent.alterData): when the
// oracle's work scores less with them emptied at the grade, the verdict is
// compared with a file the agent can read and the reference never reads.
// That is the answer where the agent can read it in another form than the
// oracle's output (a FAIL), unless the verifier also runs code of the
// task's, which may read the file as its own input (a WARN that says so).
func alteredAnswer(in Input) (Status, string) {
	h := in.Hidden
	if h == nil || len(in.HiddenAltered) == 0 || h.Outcome.Ungraded() {
		return OK, ""
	}
	best, got := hiddenScores(in)
	if got >= best {
		return OK, ""
	}
	what := in.HiddenAltered[0]
	if len(in.HiddenAltered) > 1 {
		what = "one of " + strings.Join(in.HiddenAltered, ", ")
	}
	found := fmt.Sprintf("the verdict is compared with %s, which the agent can read and the oracle never reads: with it emptied at the grade the oracle's work scores %s where it scores %g (logs: %s)",
		what, rewardText(h), best, h.Trial)
	var overwritable []string
	for _, f := range in.HiddenAltered {
		if slices.Contains(in.HiddenWritable, f) {
			overwritable = append(overwritable, f)
		}
	}
	overwrite := ""
	if in.HiddenShared && len(overwritable) > 0 {
		overwrite = fmt.Sprintf("; the agent can overwrite %s too, in the container the verifier runs in: an agent that writes there what its own output gives passes without the work",
			strings.Join(overwritable, ", "))
	}
	const fix = "; fix: keep the expected answer under tests/ (copied in at the grade) or have the verifier compute it"
	switch {
	case rewardsDiffer(in.Oracle):
		return Warn, found + overwrite + "; but the oracle's own runs differ (see flaky), so the fall may be chance: make the verifier deterministic and run task verify again"
	case len(in.VerifierCode) > 0:
		return Warn, found + overwrite + fmt.Sprintf("; the verifier also runs the task's own code (%s), which may read it as its input: if it holds the answer (a hash, another format)%s", in.VerifierCode[0], fix)
	}
	return Fail, found + ": the answer is where the agent can read it, in another form than the oracle's output" + overwrite + fix
}

// rewardsDiffer reports whether the oracle's graded runs got different
// rewards.
func rewardsDiffer(runs []*results.Result) bool {
	var first *float64
	for _, r := range runs {
		if r == nil || r.Reward == nil {
			continue
		}
		if first == nil {
			first = r.Reward
		} else if *r.Reward != *first {
			return true
		}
	}
	return false
}

// hiddenScores are the oracle's best reward over its runs and the
// oracle-hidden run's (0 for none).
func hiddenScores(in Input) (best, got float64) {
	for _, r := range in.Oracle {
		if r != nil && r.Reward != nil && *r.Reward > best {
			best = *r.Reward
		}
	}
	if in.Hidden != nil && in.Hidden.Reward != nil {
		got = *in.Hidden.Reward
	}
	return best, got
}
