package grader

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseResult(t *testing.T) {
	tests := []struct {
		name   string
		output string
		want   *Summary
	}{
		{"plain", "ok\nRESULT {\"passed\": 3, \"total\": 4, \"failed\": [\"t4\"]}\n",
			&Summary{Passed: 3, Total: 4, Failed: []string{"t4"}}},
		{"why grading could not run", `RESULT {"reward": 0, "passed": 0, "total": 0, "error": "app/README is missing"}`,
			&Summary{Error: "app/README is missing"}},
		{"an error that is not a string is left out", `RESULT {"passed": 1, "total": 1, "error": {"code": 3}}`,
			&Summary{Passed: 1, Total: 1}},
		{"categories as objects", `RESULT {"passed": 2, "total": 3, "by_category": {"a": {"passed": 1, "total": 2}, "b": {"passed": 1, "total": 1}}}`,
			&Summary{Passed: 2, Total: 3, ByCategory: map[string]Category{"a": {1, 2}, "b": {1, 1}}}},
		{"categories as pairs", `RESULT {"passed": 1, "total": 1, "by_category": {"a": [1, 1]}}`,
			&Summary{Passed: 1, Total: 1, ByCategory: map[string]Category{"a": {1, 1}}}},
		{"last line wins", "RESULT {\"passed\": 0, \"total\": 1}\nRESULT {\"passed\": 1, \"total\": 1}\nbye\n",
			&Summary{Passed: 1, Total: 1}},
		{"CRLF", "x\r\nRESULT {\"passed\": 1, \"total\": 2}\r\n", &Summary{Passed: 1, Total: 2}},
		{"no trailing newline", "RESULT {\"passed\": 0, \"total\": 0}", &Summary{}},
		{"extra keys ignored", `RESULT {"passed": 1, "total": 1, "reward": 1}`, &Summary{Passed: 1, Total: 1}},
		{"none", "all good\n", nil},
		{"empty", "", nil},
		{"indented line is not one", "  RESULT {\"passed\": 1, \"total\": 1}\n", nil},
		{"prefix only", "RESULT: 3/4\n", nil},
		{"last one broken, earlier not used", "RESULT {\"passed\": 1, \"total\": 1}\nRESULT {\"passed\": 1,\n", nil},
		{"missing total", `RESULT {"passed": 1}`, nil},
		{"negative", `RESULT {"passed": -1, "total": 1}`, nil},
		{"passed over total", `RESULT {"passed": 2, "total": 1}`, nil},
		{"fractional", `RESULT {"passed": 1.5, "total": 2}`, nil},
		{"bad category", `RESULT {"passed": 1, "total": 1, "by_category": {"a": [1]}}`, nil},
		{"category over total", `RESULT {"passed": 1, "total": 1, "by_category": {"a": {"passed": 3, "total": 2}}}`, nil},
		{"failed not strings", `RESULT {"passed": 1, "total": 2, "failed": [1]}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseResult([]byte(tt.output))
			if tt.want == nil {
				assert.False(t, ok)
				assert.Nil(t, got)
				return
			}
			require.True(t, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestParseResultLongOutput(t *testing.T) {
	out := strings.Repeat("noise line\n", 100000) + `RESULT {"passed": 116, "total": 116}` + "\n" + strings.Repeat("\n", 10)
	got, ok := parseResult([]byte(out))
	require.True(t, ok)
	assert.Equal(t, 116, got.Passed)
}

func FuzzParseResult(f *testing.F) {
	f.Add([]byte("RESULT {\"passed\": 1, \"total\": 2, \"by_category\": {\"a\": [1, 2]}, \"failed\": [\"x\"]}\n"))
	f.Add([]byte("x\r\nRESULT {\"passed\": 0, \"total\": 0}"))
	f.Add([]byte("RESULT {\n\n\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		s, ok := parseResult(out)
		if ok != (s != nil) {
			t.Fatalf("ok %t with summary %v", ok, s)
		}
		if !ok {
			return
		}
		if s.Passed < 0 || s.Passed > s.Total {
			t.Fatalf("invalid tally %+v", s)
		}
		for name, c := range s.ByCategory {
			if c.Passed < 0 || c.Passed > c.Total {
				t.Fatalf("invalid category %q: %+v", name, c)
			}
		}
	})
}
