package tasks

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/flightdeck/flightdeck/internal/files"
	"github.com/flightdeck/flightdeck/internal/gitignore"
)

// harborIgnores are the patterns Harbor leaves out of a task's content
// hash when the task has no .gitignore of its own.
var harborIgnores = []string{"__pycache__/", "*.pyc", ".DS_Store", "*.swp", "*.swo", "*~"}

// HarborDigest is Harbor's content hash of a task, the digest a
// dataset.toml pins it by ("sha256:<hex>"): SHA-256 over the records
// "relpath NUL sha256(file) LF", sorted by path, of task.toml,
// instruction.md, README.md and every file under environment/, tests/,
// solution/ and steps/, less what the task's .gitignore (else Harbor's
// default patterns) ignores.
func HarborDigest(dir string) (string, error) {
	names, err := harborFiles(dir)
	if err != nil {
		return "", err
	}
	outer := sha256.New()
	for _, rel := range names {
		sum, err := files.SHA256(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return "", fmt.Errorf("harbor digest of %s: %w", dir, err)
		}
		fmt.Fprintf(outer, "%s\x00%s\n", rel, sum)
	}
	return "sha256:" + hex.EncodeToString(outer.Sum(nil)), nil
}

// harborFiles are the files HarborDigest hashes, slash-separated and
// relative to dir, sorted.
func harborFiles(dir string) ([]string, error) {
	var files []string
	for _, name := range []string{TaskFile, InstructionFile, "README.md"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.Mode().IsRegular() {
			files = append(files, name)
		}
	}
	for _, sub := range []string{EnvironmentDir, TestsDir, SolutionDir, StepsDir} {
		root := filepath.Join(dir, sub)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if p == root && os.IsNotExist(err) {
					return nil
				}
				return err
			}
			if d.IsDir() {
				return nil
			}
			// A link counts when it leads to a file, as Python's is_file.
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
				rel, _ := filepath.Rel(dir, p)
				files = append(files, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("harbor digest of %s: %w", dir, err)
		}
	}
	patterns := harborIgnores
	if data, err := os.ReadFile(filepath.Join(dir, ".gitignore")); err == nil {
		patterns = strings.Split(string(data), "\n")
	}
	ignore := gitignore.Compile(patterns)
	kept := files[:0]
	for _, f := range files {
		if !ignore.Match(f) {
			kept = append(kept, f)
		}
	}
	sort.Strings(kept)
	return kept, nil
}
