package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSummaryPrintsFailuresAndTimes(t *testing.T) {
	var out bytes.Buffer
	s := &summary{out: &out, pending: map[string][]string{}}
	for _, line := range []string{
		`{"Action":"run","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}`,
		`{"Action":"output","Package":"p","Test":"TestA/sub","Output":"    a_test.go:3: boom\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestA/sub","Elapsed":1}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"--- FAIL: TestA (1.50s)\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestA","Elapsed":1.5}`,
		`{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:9: quiet\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestB","Elapsed":3}`,
		`{"Action":"output","Package":"p","Output":"PASS\n"}`,
		`{"Action":"output","Package":"p","Output":"ok  \tp\t4.6s\n"}`,
		`{"Action":"pass","Package":"p","Elapsed":4.6}`,
	} {
		var e event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		s.add(e)
	}
	s.report(1)
	assert.Equal(t, "    a_test.go:3: boom\n--- FAIL: TestA (1.50s)\nok  \tp\t4.6s\n"+
		"\npackages by time:\n      4.6s  p\nthe 1 slowest tests:\n        3s  p TestB\n", out.String())
}
