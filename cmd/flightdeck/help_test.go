package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/internal/testenv"
)

// helpOf runs `flightdeck args... --help` in process.
func helpOf(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	env := &cliEnv{stdout: &out, stderr: &errOut, cwd: t.TempDir()}
	code := dispatch(context.Background(), env, append(args, "--help"))
	require.Equal(t, exitOK, code, "flightdeck %s --help: %s", strings.Join(args, " "), errOut.String())
	require.Empty(t, errOut.String(), "flightdeck %s --help writes its usage to stdout only", strings.Join(args, " "))
	return out.String()
}

// member lines of a usage: "  name   summary" under Commands: or Subcommands:.
var memberLine = regexp.MustCompile(`(?m)^  ([a-z][a-z-]*) {2,}\S`)

// commandPaths walks flightdeck's commands and subcommands from their own
// --help, so that a command added anywhere is in the walk.
func commandPaths(t *testing.T, prefix []string) [][]string {
	usage := helpOf(t, prefix...)
	i := strings.Index(usage, "ommands:\n")
	if i < 0 {
		return [][]string{prefix}
	}
	section := usage[i:]
	if j := strings.Index(section, "\n\n"); j >= 0 {
		section = section[:j]
	}
	var paths [][]string
	if len(prefix) > 0 {
		paths = append(paths, prefix)
	}
	for _, m := range memberLine.FindAllStringSubmatch(section, -1) {
		paths = append(paths, commandPaths(t, append(append([]string{}, prefix...), m[1]))...)
	}
	return paths
}

// Every command's and subcommand's --help (its usage line, flags and
// example) is kept in one golden file, so that a changed or missing flag
// shows in review; and every command is in README's table of commands.
func TestHelpOfEveryCommand(t *testing.T) {
	paths := commandPaths(t, nil)
	require.Greater(t, len(paths), 20, "the walk found the subcommands")
	var all strings.Builder
	all.WriteString("$ flightdeck --help\n" + helpOf(t) + "\n")
	for _, p := range paths {
		all.WriteString("$ flightdeck " + strings.Join(p, " ") + " --help\n" + helpOf(t, p...) + "\n")
	}
	testenv.Golden(t, "testdata/help.golden", []byte(all.String()), *update)

	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	for _, p := range paths {
		name := p[len(p)-1]
		if len(p) == 1 {
			assert.Contains(t, string(readme), "`flightdeck "+name, "README's table has flightdeck %s", name)
			continue
		}
		// A group's members are written `flightdeck images ls|prune|...`
		// or one row each.
		row := regexp.MustCompile("`flightdeck " + regexp.QuoteMeta(p[0]) + ` [^` + "`" + `]*\b` + regexp.QuoteMeta(name) + `\b`)
		assert.Regexp(t, row, string(readme), "README's table has flightdeck %s", strings.Join(p, " "))
	}

	// Every flag a row of README's table names is a flag of that command.
	helps := map[string]string{}
	for _, p := range paths {
		helps[p[0]] += helpOf(t, p...)
	}
	tableRow := regexp.MustCompile("(?m)^\\| `flightdeck ([a-z]+)([^|]|\\\\\\|)*")
	flagWord := regexp.MustCompile(`--[a-z][a-z-]*`)
	rows := tableRow.FindAllStringSubmatch(string(readme), -1)
	require.NotEmpty(t, rows)
	for _, row := range rows {
		for _, f := range flagWord.FindAllString(row[0], -1) {
			assert.Regexp(t, `(?m)^ +(-[a-z], )?`+f+`[ \[]`, helps[row[1]], "README's row of flightdeck %s names %s", row[1], f)
		}
	}
}
