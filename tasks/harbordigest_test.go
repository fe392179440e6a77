package tasks

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/internal/testenv"
)

// harborHashPy computes Harbor's content hash as its packager does, with
// pathspec, the library Harbor matches .gitignore patterns with.
const harborHashPy = `
import hashlib, sys
from pathlib import Path
import pathspec
d = Path(sys.argv[1]).resolve()
files = [d / n for n in ("task.toml", "instruction.md", "README.md") if (d / n).exists()]
for sub in ("environment", "tests", "solution", "steps"):
    if (d / sub).exists():
        files += [p for p in (d / sub).rglob("*") if p.is_file()]
gi = d / ".gitignore"
lines = gi.read_text().splitlines() if gi.exists() else ["__pycache__/", "*.pyc", ".DS_Store", "*.swp", "*.swo", "*~"]
spec = pathspec.PathSpec.from_lines("gitignore", lines)
files = sorted((f for f in files if not spec.match_file(f.relative_to(d).as_posix())), key=lambda p: p.relative_to(d).as_posix())
h = hashlib.sha256()
for f in files:
    h.update(f"{f.relative_to(d).as_posix()}\0{hashlib.sha256(f.read_bytes()).hexdigest()}\n".encode())
print("sha256:" + h.hexdigest())
`

// pythonWithPathspec is a python3 that imports pathspec.
func pythonWithPathspec(t *testing.T) string {
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(py, "-c", "import pathspec").Run() == nil {
			return py
		}
	}
	if testenv.Required() {
		t.Fatal("no python3 with pathspec (Debian's python3-pathspec) to check Harbor's content hash against")
	}
	t.Skip("no python3 with pathspec")
	return ""
}

// HarborDigest agrees with Harbor's packager: the files it hashes, the
// default ignores, a task's own .gitignore (which replaces them), steps/.
func TestHarborDigestMatchesHarbors(t *testing.T) {
	py := pythonWithPathspec(t)
	files := map[string]string{
		"task.toml": "schema_version = \"1.4\"\n", "instruction.md": "Do it.\n", "README.md": "about\n",
		"environment/Dockerfile": "FROM x\n", "environment/app/__pycache__/m.cpython-312.pyc": "bytecode",
		"environment/app/m.py": "x = 1\n", "environment/notes.swp": "swap", "environment/build/out.bin": "built",
		"environment/x.log": "log", "environment/keep.log": "kept", "tests/test.sh": "echo 1\n", "tests/.hidden": "h",
		"tests/__pycache__/t.pyc": "bc", "solution/solve.sh": "true\n", "steps/one/instruction.md": "step\n",
		"steps/one/tests/test.sh": "echo 1\n", "steps/one/workdir/setup.sh": "true\n", "other/ignored.txt": "not hashed",
	}
	for _, gitignore := range []string{"", "*.log\n!keep.log\n/environment/build/\n# a comment\n"} {
		dir := t.TempDir()
		writeTree(t, dir, files)
		if gitignore != "" {
			require.NoError(t, os.WriteFile(filepath.Join(dir, ".gitignore"), []byte(gitignore), 0o644))
		}
		out, err := exec.Command(py, "-c", harborHashPy, dir).CombinedOutput()
		require.NoError(t, err, "%s", out)
		got, err := HarborDigest(dir)
		require.NoError(t, err)
		assert.Equal(t, strings.TrimSpace(string(out)), got, "with .gitignore %q", gitignore)
	}
}

func TestHarborFiles(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"task.toml": "x", "instruction.md": "y", "tests/__pycache__/a.pyc": "z",
		"tests/test.sh": "t", "solution/solve.sh~": "backup", "environment/Dockerfile": "FROM x\n"})
	got, err := harborFiles(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{"environment/Dockerfile", "instruction.md", "task.toml", "tests/test.sh"}, got)
}
