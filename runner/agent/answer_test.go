package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/runner/suite"
)

// The answer attack copies the file that holds an output's bytes, not one
// of the same size, to the output's path, and says what it copied; with
// nothing to find it says why.
func TestAnswerScript(t *testing.T) {
	root := t.TempDir()
	answer := []byte("apple\nbanana\ncherry\n")
	decoy := []byte("cherry\nbanana\napple\n") // the same size
	require.NoError(t, os.MkdirAll(filepath.Join(root, "opt", "a"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "opt", "b"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "opt", "a", "decoy.txt"), decoy, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "opt", "b", "expected.txt"), answer, 0o644))
	sum := sha256.Sum256(answer)
	out := filepath.Join(root, "app", "out.txt")
	run := func(rw *suite.Rewrite) string {
		cmd := exec.Command("bash", "-c", answerScript(rw))
		cmd.Env = append(os.Environ(), "answer_root="+root)
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", b)
		return string(b)
	}

	log := run(&suite.Rewrite{Outputs: []suite.OracleOutput{{Path: out, Size: int64(len(answer)), SHA256: hex.EncodeToString(sum[:])}}})
	got, err := os.ReadFile(out)
	require.NoError(t, err, log)
	assert.Equal(t, answer, got)
	assert.Equal(t, []string{out + " (a copy of " + filepath.Join(root, "opt", "b", "expected.txt") + ")"}, ParsePlanted(log))

	other := sha256.Sum256([]byte("nowhere in the image"))
	log = run(&suite.Rewrite{Outputs: []suite.OracleOutput{{Path: filepath.Join(root, "app", "x.txt"), Size: int64(len(answer)), SHA256: hex.EncodeToString(other[:])}}})
	assert.Empty(t, ParsePlanted(log))
	assert.Contains(t, ParseNote(log), "no file the agent can read outside the system's dirs holds the bytes")

	log = run(&suite.Rewrite{OutputsNote: "the oracle added no text file of 16 bytes or more to its work dir"})
	assert.Equal(t, "the oracle added no text file of 16 bytes or more to its work dir", ParseNote(log))
}

// The oracle-hidden run moves away every file that holds an output's
// bytes, says which, and puts them back.
func TestHideAndRestore(t *testing.T) {
	root := t.TempDir()
	answer := []byte("apple\nbanana\ncherry\n")
	decoy := []byte("cherry\nbanana\napple\n")
	a, b, d := filepath.Join(root, "opt", "expected.txt"), filepath.Join(root, "srv", "copy.txt"), filepath.Join(root, "opt", "decoy.txt")
	for p, data := range map[string][]byte{a: answer, b: answer, d: decoy} {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, data, 0o644))
	}
	sum := sha256.Sum256(answer)
	list := filepath.Join(t.TempDir(), "list")
	run := func(script string) string {
		cmd := exec.Command("sh", "-c", script)
		cmd.Env = append(os.Environ(), "answer_root="+root, "hidden_list="+list)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	log := run(hideScript(&suite.Rewrite{Outputs: []suite.OracleOutput{{Path: filepath.Join(root, "app", "out.txt"), Size: int64(len(answer)), SHA256: hex.EncodeToString(sum[:])}}}))
	assert.ElementsMatch(t, []string{a, b}, ParseHidden(log))
	assert.NoFileExists(t, a)
	assert.NoFileExists(t, b)
	assert.FileExists(t, d, "a file of the same size and other bytes stays")
	run(restoreScript)
	for _, p := range []string{a, b} {
		got, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, answer, got)
	}
	assert.NoFileExists(t, list)
}

// The probe alters only regular, non-empty files the agent can read.
func TestReadableScript(t *testing.T) {
	dir := t.TempDir()
	full, empty, sub := filepath.Join(dir, "full.txt"), filepath.Join(dir, "empty.txt"), filepath.Join(dir, "sub")
	require.NoError(t, os.WriteFile(full, []byte("x\n"), 0o644))
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	require.NoError(t, os.Mkdir(sub, 0o755))
	out, err := exec.Command("sh", "-c", readableScript, "readable", full, empty, sub, filepath.Join(dir, "missing")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, full+"\n", string(out))
	assert.Equal(t, []string{"/opt/a", "/opt/b c"}, ParseAltered("=== x\n"+AlteredPrefix+"/opt/a\n"+ReadPrefix+"/in\n"+AlteredPrefix+"/opt/b c\n"))
}
