package grader

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Category is one category's tally in a RESULT line.
type Category struct {
	Passed int `json:"passed"`
	Total  int `json:"total"`
}

// Summary is the grader's RESULT line:
//
//	RESULT {"passed": 115, "total": 116, "by_category": {"caret": {"passed": 9, "total": 10}}, "failed": ["caret_7"]}
//
// by_category values may also be written as [passed, total] pairs, and an
// "error" string says why grading could not run (the template's test.sh
// writes one).
type Summary struct {
	Passed     int                 `json:"passed"`
	Total      int                 `json:"total"`
	ByCategory map[string]Category `json:"by_category,omitempty"`
	Failed     []string            `json:"failed,omitempty"`
	Error      string              `json:"error,omitempty"`
}

// resultPrefix starts a RESULT line.
const resultPrefix = "RESULT {"

// parseResult finds the last line of output that starts with "RESULT {" and
// parses its JSON. It reports false when there is no such line or when the
// last one is not a valid summary (counts must be non-negative integers with
// passed ≤ total); an earlier RESULT line is never used in its place.
func parseResult(output []byte) (*Summary, bool) {
	line, ok := lastResultLine(output)
	if !ok {
		return nil, false
	}
	var raw struct {
		Passed     *int                       `json:"passed"`
		Total      *int                       `json:"total"`
		ByCategory map[string]json.RawMessage `json:"by_category"`
		Failed     []string                   `json:"failed"`
		Error      json.RawMessage            `json:"error"`
	}
	if err := json.Unmarshal(line[len("RESULT "):], &raw); err != nil {
		return nil, false
	}
	if raw.Passed == nil || raw.Total == nil || !validTally(*raw.Passed, *raw.Total) {
		return nil, false
	}
	s := &Summary{Passed: *raw.Passed, Total: *raw.Total, Failed: raw.Failed}
	// An error that is not a string is kept out, not a reason to drop the
	// line's counts.
	_ = json.Unmarshal(raw.Error, &s.Error)
	if len(raw.ByCategory) > 0 {
		s.ByCategory = make(map[string]Category, len(raw.ByCategory))
		for name, msg := range raw.ByCategory {
			c, err := parseCategory(msg)
			if err != nil {
				return nil, false
			}
			s.ByCategory[name] = c
		}
	}
	return s, true
}

func lastResultLine(output []byte) ([]byte, bool) {
	for len(output) > 0 {
		i := bytes.LastIndexByte(output[:len(output)-1], '\n')
		line := output[i+1:]
		output = output[:i+1]
		line = bytes.TrimRight(line, "\r\n")
		if bytes.HasPrefix(line, []byte(resultPrefix)) {
			return line, true
		}
		if i < 0 {
			break
		}
	}
	return nil, false
}

func parseCategory(msg json.RawMessage) (Category, error) {
	var obj struct {
		Passed *int `json:"passed"`
		Total  *int `json:"total"`
	}
	if err := json.Unmarshal(msg, &obj); err == nil {
		if obj.Passed == nil || obj.Total == nil || !validTally(*obj.Passed, *obj.Total) {
			return Category{}, fmt.Errorf("category needs passed ≤ total")
		}
		return Category{Passed: *obj.Passed, Total: *obj.Total}, nil
	}
	var pair []int
	if err := json.Unmarshal(msg, &pair); err != nil || len(pair) != 2 || !validTally(pair[0], pair[1]) {
		return Category{}, fmt.Errorf("category is neither {passed, total} nor [passed, total]")
	}
	return Category{Passed: pair[0], Total: pair[1]}, nil
}

func validTally(passed, total int) bool {
	return passed >= 0 && total >= 0 && passed <= total
}
