package tasks

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// fuzzSeeds adds every task.toml-like file of the tests as a seed.
func fuzzSeeds(f *testing.F) {
	f.Add([]byte(baseTOML))
	f.Add([]byte(""))
	f.Add([]byte("[[steps]]\n"))
	f.Add([]byte("[flightdeck]\ngrader = { command = \"x\" }\n"))
	for _, pattern := range []string{
		filepath.Join("testdata", "canonical", "*.toml"),
		filepath.Join("testdata", "writedigest", "*.toml"),
		filepath.Join("..", "fixtures", "digest", "*", "task.toml"),
	} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			if b, err := os.ReadFile(file); err == nil {
				f.Add(b)
			}
		}
	}
}

// FuzzLoad loads and checks a task whose task.toml is the input: never a
// panic, and every refusal is a *LoadError.
func FuzzLoad(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, toml []byte) {
		dir := filepath.Join(t.TempDir(), "fuzzed")
		for name, content := range map[string][]byte{
			"task.toml":      toml,
			"instruction.md": []byte("x\n"),
			"tests/test.sh":  []byte("echo\n"),
		} {
			p := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, content, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		task, err := Load(dir, LoadOptions{Local: true})
		if err != nil {
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("not a *LoadError: %v", err)
			}
		} else {
			if task.Digest == "" || task.FilesDigest == "" {
				t.Fatalf("loaded without digests")
			}
			_, _ = task.MemoryBytes()
			_ = task.NanoCPUs()
		}
		findings := Check(dir)
		if err == nil {
			for _, fd := range findings {
				// hangar's limits are for an export; what a run needs but
				// Load does not read (the environment) fails the build.
				if fd.Severity == SeverityError && fd.Rule != "hangar.id" && fd.Rule != "verifier.timeout" &&
					fd.Rule != "source.base-sha" && fd.Rule != "layout.environment" && fd.Rule != "cpus" {
					t.Fatalf("Load accepted what Check calls an error: %+v", fd)
				}
			}
		}
	})
}

// FuzzSetFilesDigest edits any TOML go-toml reads: never a panic, and an
// edit that passes verification records the digest.
func FuzzSetFilesDigest(f *testing.F) {
	fuzzSeeds(f)
	const digest = "sha256:0ab13826a1484823c318c3c5d0bd9f199519ca8eccba9ff23683a6ab65f4a396"
	f.Fuzz(func(t *testing.T, src []byte) {
		before, err := parseDoc(src)
		if err != nil {
			return
		}
		out, err := setFilesDigest(src, digest)
		if err != nil {
			return
		}
		if err := verifyEdit(before, out, digest); err != nil {
			return // WriteFilesDigest refuses such an edit
		}
		after, err := parseDoc(out)
		if err != nil || recordedFilesDigest(after) != digest {
			t.Fatalf("verified edit does not record the digest:\n%s", out)
		}
	})
}
