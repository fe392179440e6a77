package docs

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/runner/results"
)

// One exit-code table: the README's sentence, docs/running.md's table and
// the codes the commands use name the same codes in the same order, each
// for the same kind of cause. (cmd/flightdeck's exit_codes script walks
// the table through every command.)
func TestExitCodesAgree(t *testing.T) {
	codes := []int{0, results.ExitExpectation, results.ExitUsage, results.ExitInfra, results.ExitTask, results.ExitInterrupted}
	// Each code's cause, as a word both documents use for it.
	words := map[int]string{
		0:                       "held",
		results.ExitExpectation: "failed",
		results.ExitUsage:       "usage",
		results.ExitInfra:       "infrastructure",
		results.ExitTask:        "task",
		results.ExitInterrupted: "interrupted",
	}

	doc, err := os.ReadFile("running.md")
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(doc), "**Exit codes.**")
	require.True(t, ok, "docs/running.md has an \"Exit codes\" paragraph")
	row := regexp.MustCompile(`(?m)^\| (\d+) \| (.+) \|$`)
	var tableCodes []int
	for _, m := range row.FindAllStringSubmatch(after, -1) {
		n, _ := strconv.Atoi(m[1])
		tableCodes = append(tableCodes, n)
		assert.Contains(t, strings.ToLower(m[2]), words[n], "docs/running.md's row for %d", n)
		if n == results.ExitInterrupted {
			break
		}
	}
	assert.Equal(t, codes, tableCodes, "docs/running.md's table")

	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	sentence := regexp.MustCompile("(?s)`flightdeck run` exits (.+?)\\(docs/running.md, \"Exit codes\"\\)").FindStringSubmatch(string(readme))
	require.NotNil(t, sentence, "the README's exit-code sentence")
	clause := regexp.MustCompile(`(?:^|, )(\d+) (?:when|on)([^,]+(?:\([^)]*\))?[^,]*)`)
	var readmeCodes []int
	for _, m := range clause.FindAllStringSubmatch(strings.Join(strings.Fields(sentence[1]), " "), -1) {
		n, _ := strconv.Atoi(m[1])
		readmeCodes = append(readmeCodes, n)
		assert.Contains(t, strings.ToLower(m[2]), words[n], "the README's clause for %d", n)
	}
	assert.Equal(t, codes, readmeCodes, "the README's sentence")
}
