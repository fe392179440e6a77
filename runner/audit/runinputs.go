package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/vtrace"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
	"github.com/flightdeck/flightdeck/sandbox"
	"github.com/flightdeck/flightdeck/tasks"
)

// What a verify run's trials left that its checks read: the oracle's
// grading, the rewrite attack's plan, the Dockerfile.

// OracleGrading is what the oracle's runs tell of the hidden files: the
// traced oracle's record of what its verifier used, and the blobs the
// first oracle run wrote in its work dir; nil without an oracle run.
func OracleGrading(runDir string, oracle, all []*results.Result) *Grading {
	if len(oracle) == 0 {
		return nil
	}
	first := oracle[0]
	g := &Grading{WorkDir: first.WorkDir, TestsDir: grader.HarborTestsDir}
	if first.Native {
		g.TestsDir = path.Join(grader.NativeTaskDir, tasks.TestsDir)
	}
	if patch, err := os.ReadFile(filepath.Join(runDir, first.Trial, results.DiffPatch)); err == nil {
		g.Written, g.Added = WrittenBlobs(string(patch)), NewFiles(string(patch))
	}
	for _, res := range all {
		if res.Variant != results.VerifyTraced {
			continue
		}
		if f, err := os.Open(filepath.Join(runDir, res.Trial, grader.TraceFile)); err == nil {
			g.Events, _ = vtrace.Read(f)
			f.Close()
		}
	}
	return g
}

// TaskDockerfile reads environment/Dockerfile's instructions; none (and no
// error) for a task that runs a prebuilt image.
func TaskDockerfile(t *tasks.Task) ([]sandbox.Instruction, error) {
	data, err := os.ReadFile(t.Path(tasks.EnvironmentDir, "Dockerfile"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return sandbox.DockerfileInstructions(data)
}

// RewritePlan reads a traced oracle's trial dir: the files its verifier
// executed or loaded as code, less those the oracle changed in its work
// dir, and what the verifier printed.
func RewritePlan(dir string) *suite.Rewrite {
	res, err := results.ReadResult(filepath.Join(dir, results.ResultFile))
	if err != nil {
		why := "the traced oracle has no result (" + results.VerifyTraced + " did not finish)"
		return &suite.Rewrite{Note: why, OutputsNote: why}
	}
	rw := &suite.Rewrite{}
	rw.Outputs, rw.OutputsNote = oracleOutputs(dir, res)
	f, err := os.Open(filepath.Join(dir, grader.TraceFile))
	if err != nil {
		why := "the traced oracle left no trace"
		if errors.Is(err, os.ErrNotExist) && res.Error != "" {
			why += ": " + res.Error
		}
		rw.Note = why
		return rw
	}
	defer f.Close()
	events, err := vtrace.Read(f)
	if err != nil {
		rw.Note = fmt.Sprintf("the trace does not read: %v", err)
		return rw
	}
	changed := diffFiles(dir, res.WorkDir)
	for _, tg := range vtrace.Targets(events, func(p string) bool { return changed[p] }) {
		rw.Files = append(rw.Files, tg.Path)
		if out, ok := vtrace.Printed(events, tg.Path); ok {
			if rw.Printed == nil {
				rw.Printed = map[string]string{}
			}
			rw.Printed[tg.Path] = out
		}
	}
	if res.Reward != nil && *res.Reward > 0 {
		// What a verdict that falls is compared with needs a verdict to
		// fall: the probe runs only beside an oracle that scores.
		rw.Data = vtrace.DataFiles(events, func(p string) bool { return changed[p] })
	}
	if len(rw.Files) == 0 {
		rw.Note = "the verifier ran or loaded no file outside the system's, /tests and the oracle's own work"
	}
	if out, err := os.ReadFile(filepath.Join(dir, results.GraderLog)); err == nil {
		rw.Output = string(out)
	}
	return rw
}

// VerifierCode are the files of code outside the system's and the tests
// that the traced oracle's verifier ran, the oracle's own work included
// (nil without a trace): code that may read a file as its own input.
func (g *Grading) VerifierCode() []string {
	if g == nil {
		return nil
	}
	var out []string
	for _, tg := range vtrace.Targets(g.Events, nil) {
		out = append(out, tg.Path)
	}
	return out
}

// maxOutputs caps the oracle's outputs the answer attack looks for.
const maxOutputs = 20

// oracleOutputs are the files the oracle added to its work dir (its
// diff.patch's new text files) of minLeakSize bytes or more, in path
// order; a smaller file's bytes are too likely found anywhere.
func oracleOutputs(dir string, res *results.Result) ([]suite.OracleOutput, string) {
	patch, err := os.ReadFile(filepath.Join(dir, results.DiffPatch))
	if err != nil || res.WorkDir == "" {
		return nil, "the oracle's work dir was not recorded (no " + results.DiffPatch + ")"
	}
	added := NewFiles(string(patch))
	var out []suite.OracleOutput
	for _, file := range slices.Sorted(maps.Keys(added)) {
		data := added[file]
		if len(data) < minLeakSize {
			continue
		}
		sum := sha256.Sum256(data)
		out = append(out, suite.OracleOutput{Path: path.Join(res.WorkDir, file), Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])})
		if len(out) == maxOutputs {
			break
		}
	}
	if len(out) == 0 {
		return nil, fmt.Sprintf("the oracle added no text file of %d bytes or more to its work dir", minLeakSize)
	}
	return out, ""
}

// diffFiles are the absolute paths of the files a trial changed in its
// work dir (diff.files).
func diffFiles(dir, workdir string) map[string]bool {
	out := map[string]bool{}
	data, err := os.ReadFile(filepath.Join(dir, results.DiffFiles))
	if err != nil || workdir == "" {
		return out
	}
	for line := range strings.Lines(string(data)) {
		name := strings.TrimRight(line, "\n")
		if uq, err := strconv.Unquote(name); err == nil && strings.HasPrefix(name, `"`) {
			name = uq
		}
		if name != "" {
			out[path.Join(workdir, name)] = true
		}
	}
	return out
}
