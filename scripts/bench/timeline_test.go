package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A diagnostic log's engine calls are read in the order they began,
// timed from the process's start, and each container is named by what
// the run did with it.
func TestOracleTimeline(t *testing.T) {
	trial := strings.Repeat("a", 64)
	insp := strings.Repeat("b", 64)
	seed := strings.Repeat("c", 64)
	ex := strings.Repeat("e", 64)
	log := strings.Join([]string{
		`time=2026-12-04T20:00:00.100Z level=DEBUG msg="engine call" call="POST /containers/create" took=50ms status=201`,
		`time=2026-12-04T20:00:00.400Z level=DEBUG msg="engine call" call="POST /containers/` + trial + `/start" took=250ms status=204`,
		`time=2026-12-04T20:00:00.300Z level=DEBUG msg="engine call" call="POST /containers/` + insp + `/start" took=200ms status=204`,
		`time=2026-12-04T20:00:00.200Z level=DEBUG msg="engine call" call="GET /containers/` + seed + `/archive" took=100ms status=200`,
		`time=2026-12-04T20:00:00.420Z level=DEBUG msg="engine call" call="GET /containers/` + trial + `/top" took=20ms status=200`,
		`time=2026-12-04T20:00:00.430Z level=DEBUG msg="engine call" call="POST /containers/` + insp + `/exec" took=1ms status=201`,
		`time=2026-12-04T20:00:00.530Z level=DEBUG msg="engine call" call="POST /exec/` + ex + `/start" took=100ms`,
		`time=2026-12-04T20:00:00.531Z level=DEBUG msg="exec stream" container=x`,
	}, "\n")
	path := filepath.Join(t.TempDir(), "fd.log")
	require.NoError(t, os.WriteFile(path, []byte(log+"\n"), 0o644))
	started, err := time.Parse(time.RFC3339, "2026-12-04T20:00:00Z")
	require.NoError(t, err)
	calls, err := readEngineCalls(path, started)
	require.NoError(t, err)
	require.Len(t, calls, 7, "only the engine calls")
	assert.Equal(t, 50*time.Millisecond, calls[0].start)
	assert.Equal(t, "/containers/create", calls[0].path)
	assert.Equal(t, 100*time.Millisecond, calls[1].start, "the seed's copy began before the starts")
	assert.Equal(t, "201", calls[0].status)

	tl := &oracleTimeline{wall: 600 * time.Millisecond, calls: calls, runs: 3}
	roles := tl.roles()
	assert.Equal(t, "the trial's container", roles[trial])
	assert.Equal(t, "the tamper inspector", roles[insp])
	assert.Contains(t, roles[seed], "never started")
	var b strings.Builder
	tl.markdown(func(format string, args ...any) { fmt.Fprintf(&b, format, args...) })
	out := b.String()
	assert.Contains(t, out, "| 150 ms | 400 ms | 250 ms | POST /containers/{id}/start — the trial's container |")
	assert.Contains(t, out, "| 430 ms | 530 ms | 100 ms | POST /exec/{id}/start — the tamper inspector |")
	assert.Contains(t, out, "| | 600 ms | | the process exits |")
}
