package tasks

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2"
)

// The files and directories a task directory is made of.
const (
	TaskFile        = "task.toml"
	InstructionFile = "instruction.md"
	// TrajectoryFile, beside instruction.md, is a seed trajectory the task
	// ships: a command agent gets it (runner/agent), and it is part of the
	// task's digest.
	TrajectoryFile = "trajectory.json"
	TestsDir       = "tests"
	EnvironmentDir = "environment"
	SolutionDir    = "solution"
)

// part is one named input of a digest: bytes in memory, or a file read
// only when it is hashed, so a digest holds one file at a time.
type part struct {
	name string
	data []byte
	file string // when set, the part is this regular file's (normalized) bytes
}

// TaskDigest is task_digest: one SHA-256 over the canonical JSON of
// task.toml (without [flightdeck.grader].files_digest), instruction.md, the
// task's trajectory.json when it ships one, and every regular file under
// tests/ and environment/ (and, for a multi-step task, steps/), as
// "sha256:<64 hex>".
// It does not validate the task; Load does.
func TaskDigest(dir string) (string, error) {
	doc, err := readDoc(dir)
	if err != nil {
		return "", err
	}
	return taskDigest(dir, doc)
}

// FilesDigest is the digest [flightdeck.grader].files_digest records: the
// same hash over the parts under tests/ alone. A task without tests/ has the
// digest of no parts.
func FilesDigest(dir string) (string, error) {
	parts, err := optionalTreeParts(filepath.Join(dir, TestsDir), TestsDir)
	if err != nil {
		return "", err
	}
	return hashParts(parts)
}

// DigestTree hashes every regular file under root the way task digests do,
// each part named prefix + "/" + its path relative to root ("/"-separated),
// or that relative path alone when prefix is "". __pycache__ directories and
// *.pyc files are skipped; a symlink or any other non-regular file is an
// error. FilesDigest(dir) == DigestTree(dir+"/tests", "tests").
func DigestTree(root, prefix string) (string, error) {
	parts, err := treeParts(root, prefix)
	if err != nil {
		return "", err
	}
	return hashParts(parts)
}

// taskDigest computes task_digest from an already parsed task.toml.
func taskDigest(dir string, doc map[string]any) (string, error) {
	canon, err := canonicalJSON(withoutFilesDigest(doc))
	if err != nil {
		return "", fmt.Errorf("%s: canonical JSON: %w", filepath.Join(dir, TaskFile), err)
	}
	parts := []part{{name: TaskFile, data: canon}}
	instr, err := readRegular(filepath.Join(dir, InstructionFile))
	switch {
	case err == nil:
		parts = append(parts, part{name: InstructionFile, data: normalizeText(instr)})
	case errors.Is(err, fs.ErrNotExist) && doc["steps"] != nil:
		// A multi-step task's instructions are its steps', under steps/.
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("%s: missing: a task's instruction to the agent (a multi-step task's are under steps/ and its task.toml has [[steps]])",
			filepath.Join(dir, InstructionFile))
	default:
		return "", err
	}
	if _, err := os.Lstat(filepath.Join(dir, TrajectoryFile)); err == nil {
		parts = append(parts, part{name: TrajectoryFile, file: filepath.Join(dir, TrajectoryFile)})
	}
	for _, sub := range []string{TestsDir, EnvironmentDir, StepsDir} {
		p, err := optionalTreeParts(filepath.Join(dir, sub), sub)
		if err != nil {
			return "", err
		}
		parts = append(parts, p...)
	}
	return hashParts(parts)
}

// hashParts sorts the parts by name (byte order) and adds each as
// name NUL length NUL bytes to one SHA-256, reading a file part only when
// its turn comes.
func hashParts(parts []part) (string, error) {
	sort.Slice(parts, func(i, j int) bool { return parts[i].name < parts[j].name })
	h := sha256.New()
	for _, p := range parts {
		data := p.data
		if p.file != "" {
			raw, err := readRegular(p.file)
			if err != nil {
				return "", err
			}
			data = normalizeText(raw)
		}
		h.Write([]byte(p.name))
		h.Write([]byte{0})
		h.Write([]byte(strconv.Itoa(len(data))))
		h.Write([]byte{0})
		h.Write(data)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// isText reports whether b counts as text: no NUL byte and valid UTF-8.
func isText(b []byte) bool {
	return bytes.IndexByte(b, 0) < 0 && utf8.Valid(b)
}

// normalizeText turns CRLF into LF in text files, so that a Windows checkout
// hashes the same. Other files are returned as they are.
func normalizeText(b []byte) []byte {
	if !isText(b) || !bytes.Contains(b, []byte("\r\n")) {
		return b
	}
	return bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
}

// skipped reports whether a digest leaves this directory entry out.
func skipped(d fs.DirEntry) bool {
	if d.IsDir() {
		return d.Name() == "__pycache__"
	}
	return strings.HasSuffix(d.Name(), ".pyc")
}

// optionalTreeParts is treeParts, with no parts when root does not exist.
func optionalTreeParts(root, prefix string) ([]part, error) {
	if _, err := os.Lstat(root); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return treeParts(root, prefix)
}

func treeParts(root, prefix string) ([]part, error) {
	var parts []part
	err := walkTree(root, func(rel string, d fs.DirEntry) error {
		if d.IsDir() {
			return nil
		}
		name := rel
		if prefix != "" {
			name = path.Join(prefix, rel)
		}
		parts = append(parts, part{name: name, file: filepath.Join(root, filepath.FromSlash(rel))})
		return nil
	})
	return parts, err
}

// walkTree calls fn for every directory and regular file under root (root
// itself excluded), with its "/"-separated path relative to root, skipping
// __pycache__ and *.pyc. A symlink or another non-regular file is an error.
// root must be a real directory, not a symlink to one.
func walkTree(root string, fn func(rel string, d fs.DirEntry) error) error {
	info, err := os.Lstat(root)
	if err != nil {
		return err
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s: is a symlink; task directories may not hold symlinks", root)
	}
	if !info.IsDir() {
		return fmt.Errorf("%s: is not a directory", root)
	}
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s: is a symlink; task directories may not hold symlinks", p)
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return fmt.Errorf("%s: is not a regular file", p)
		}
		if skipped(d) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		return fn(filepath.ToSlash(rel), d)
	})
}

// readRegular reads a file that must be a regular file, not a symlink.
func readRegular(p string) ([]byte, error) {
	info, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		if info.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("%s: is a symlink; task directories may not hold symlinks", p)
		}
		return nil, fmt.Errorf("%s: is not a regular file", p)
	}
	return os.ReadFile(p)
}

// readDoc parses dir/task.toml into a generic document.
func readDoc(dir string) (map[string]any, error) {
	p := filepath.Join(dir, TaskFile)
	src, err := readRegular(p)
	if err != nil {
		return nil, err
	}
	doc, err := parseDoc(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return doc, nil
}

// parseDoc parses task.toml into a generic document. Like tomllib, it reads
// every CRLF as LF first, so that a CRLF inside a multi-line string is LF in
// the document, as it is for Python.
func parseDoc(src []byte) (map[string]any, error) {
	doc := map[string]any{}
	if err := toml.Unmarshal(crlfToLF(src), &doc); err != nil {
		return nil, err
	}
	return doc, nil
}

func crlfToLF(src []byte) []byte {
	return bytes.ReplaceAll(src, []byte("\r\n"), []byte("\n"))
}

// withoutFilesDigest returns doc without [flightdeck.grader].files_digest,
// copying only the tables on the way so that doc itself is not changed.
func withoutFilesDigest(doc map[string]any) map[string]any {
	fd, ok := doc["flightdeck"].(map[string]any)
	if !ok {
		return doc
	}
	gr, ok := fd["grader"].(map[string]any)
	if !ok {
		return doc
	}
	if _, ok := gr["files_digest"]; !ok {
		return doc
	}
	gr2 := make(map[string]any, len(gr))
	for k, v := range gr {
		if k != "files_digest" {
			gr2[k] = v
		}
	}
	fd2 := make(map[string]any, len(fd))
	for k, v := range fd {
		fd2[k] = v
	}
	fd2["grader"] = gr2
	doc2 := make(map[string]any, len(doc))
	for k, v := range doc {
		doc2[k] = v
	}
	doc2["flightdeck"] = fd2
	return doc2
}

// RecordedFilesDigest is [flightdeck.grader].files_digest as dir/task.toml
// records it, "" when it records none.
func RecordedFilesDigest(dir string) (string, error) {
	doc, err := readDoc(dir)
	if err != nil {
		return "", err
	}
	return recordedFilesDigest(doc), nil
}

// recordedFilesDigest is [flightdeck.grader].files_digest as written, "" when absent.
func recordedFilesDigest(doc map[string]any) string {
	fd, _ := doc["flightdeck"].(map[string]any)
	gr, _ := fd["grader"].(map[string]any)
	s, _ := gr["files_digest"].(string)
	return s
}
