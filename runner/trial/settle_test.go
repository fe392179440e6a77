package trial

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/tasks"
)

func TestParseSettle(t *testing.T) {
	tests := []struct {
		name, out string
		want      results.StartWait
		err       string
	}{
		{"settled", "settled 412\n", results.StartWait{Settled: true}, ""},
		{"unsettled", "unsettled 5003\nbusy 41 python3 R\nbusy 57 sh ended\nsockets changed\n",
			results.StartWait{StillBusy: []string{"41 python3 R", "57 sh ended", "a socket began or stopped listening"}}, ""},
		{"garbage", "perl: not found\n", results.StartWait{}, "unexpected output"},
		{"empty", "", results.StartWait{}, "unexpected output"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var w results.StartWait
			err := parseSettle(tc.out, &w)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, w)
		})
	}
}

// MayRace reads the task's files: a Harbor task with no healthcheck whose
// Dockerfile sets an ENTRYPOINT, or that runs a prebuilt image.
func TestMayRace(t *testing.T) {
	harbor := "schema_version = \"1.4\"\n[task]\nname = \"t/x\"\n[environment]\n"
	tests := []struct {
		name, toml, dockerfile string
		want                   bool
	}{
		{"entrypoint", harbor, "FROM debian:bookworm\nENTRYPOINT [\"/e.sh\"]\n", true},
		{"no entrypoint", harbor, "FROM debian:bookworm\nCMD [\"sleep\", \"1\"]\n", false},
		{"a healthcheck says when it is ready", harbor + "[environment.healthcheck]\ncommand = \"true\"\n", "FROM debian:bookworm\nENTRYPOINT [\"/e.sh\"]\n", false},
		{"prebuilt image", harbor + "docker_image = \"debian:bookworm\"\n", "", true},
		{"native", harbor + "[flightdeck.grader]\ncommand = \"bash tests/test.sh\"\nfiles_digest = \"sha256:d585f08094bf280142c517a7a9d65935a578c9c28faba62ca295f021d7028dcf\"\n", "FROM debian:bookworm\nENTRYPOINT [\"/e.sh\"]\n", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write := func(rel, content string) {
				p := filepath.Join(dir, rel)
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(t, os.WriteFile(p, []byte(content), 0o755))
			}
			write("task.toml", tc.toml)
			write("instruction.md", "Do it.\n")
			write("tests/test.sh", "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
			if tc.dockerfile != "" {
				write("environment/Dockerfile", tc.dockerfile)
			} else {
				require.NoError(t, os.MkdirAll(filepath.Join(dir, "environment"), 0o755))
			}
			task, err := tasks.Load(dir, tasks.LoadOptions{Local: true})
			require.NoError(t, err)
			assert.Equal(t, tc.want, MayRace(task))
		})
	}
}
