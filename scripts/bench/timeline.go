package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"

	"time"
)

// timelineRuns is how many oracle runs keep a diagnostic log; the one of
// median wall-clock time is shown.
const timelineRuns = 3

// engineCall is one engine call of a run, from its diagnostic log: when it
// began and ended, counted from the process's start.
type engineCall struct {
	start, end time.Duration
	method     string // POST, GET, …
	path       string // the API path, with container and exec IDs
	status     string
}

// oracleTimeline is one whole-process oracle run's engine calls, in the
// order they began: where its time goes, call by call.
type oracleTimeline struct {
	wall  time.Duration
	calls []engineCall
	runs  int // runs with a log, of which this one is the median's
}

// oracleTimelineRuns runs the oracle trial as oracleRunOnce does, with the
// diagnostic log at debug level (every engine call with its duration),
// n times, and returns the timeline of the run of median wall-clock time.
// These runs are not the measured ones: the log costs a little.
func (b *bench) oracleTimelineRuns(ctx context.Context, n int) (*oracleTimeline, error) {
	var runs []*oracleTimeline
	for i := range n {
		resultsDir, err := b.ws.freshResults("timeline")
		if err != nil {
			return nil, err
		}
		log := filepath.Join(b.ws.root, fmt.Sprintf("timeline-%d.log", i))
		r, err := b.runBinaryEnv(ctx, []string{"FLIGHTDECK_LOG=debug", "FLIGHTDECK_LOG_FILE=" + log},
			"run", "-p", b.ws.harbor, "--variant", "oracle", "--results", resultsDir)
		if err != nil {
			return nil, err
		}
		calls, err := readEngineCalls(log, r.started)
		if err != nil {
			return nil, err
		}
		if len(calls) == 0 {
			return nil, fmt.Errorf("the diagnostic log %s holds no engine call", log)
		}
		runs = append(runs, &oracleTimeline{wall: r.wall, calls: calls, runs: n})
	}
	slices.SortFunc(runs, func(a, b *oracleTimeline) int { return int(a.wall - b.wall) })
	return runs[len(runs)/2], nil
}

var callLine = regexp.MustCompile(`^time=(\S+) level=DEBUG msg="engine call" call="(\S+) (\S+)" took=(\S+)(?: status=(\d+))?`)

// readEngineCalls reads the engine calls of a diagnostic log, timed from
// started (the process's start), in the order they began.
func readEngineCalls(path string, started time.Time) ([]engineCall, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var calls []engineCall
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m := callLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		end, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", path, m[1], err)
		}
		took, err := time.ParseDuration(m[4])
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", path, m[4], err)
		}
		e := end.Sub(started)
		calls = append(calls, engineCall{start: e - took, end: e, method: m[2], path: m[3], status: m[5]})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	slices.SortStableFunc(calls, func(a, b engineCall) int { return int(a.start - b.start) })
	return calls, nil
}

var containerPath = regexp.MustCompile(`^/(containers|exec)/([0-9a-f]{64})(/.*)?$`)

// roles names the run's containers by what the run did with them: the one
// whose processes were listed is the trial's, another started one is the
// tamper inspector, and one never started is the seed's copy of the
// image's work dir or the bind mount's probe.
func (t *oracleTimeline) roles() map[string]string {
	did := map[string]map[string]bool{}
	for _, c := range t.calls {
		m := containerPath.FindStringSubmatch(c.path)
		if m == nil || m[1] != "containers" {
			continue
		}
		if did[m[2]] == nil {
			did[m[2]] = map[string]bool{}
		}
		did[m[2]][m[3]] = true
	}
	out := map[string]string{}
	for id, d := range did {
		switch {
		case d["/top"]:
			out[id] = "the trial's container"
		case d["/start"]:
			out[id] = "the tamper inspector"
		default:
			out[id] = "a container never started (the seed's or the probe's)"
		}
	}
	return out
}

// describe is a call as the timeline shows it: the container's role for
// its ID, the exec's container's for an exec's.
func (t *oracleTimeline) describe(c engineCall, roles map[string]string, execOf map[string]string) string {
	m := containerPath.FindStringSubmatch(c.path)
	if m == nil {
		return c.method + " " + c.path
	}
	who := roles[m[2]]
	if m[1] == "exec" {
		who = execOf[m[2]]
	}
	if who == "" {
		who = "?"
	}
	return fmt.Sprintf("%s /%s/{id}%s — %s", c.method, m[1], m[3], who)
}

// markdown writes the timeline as a table.
func (t *oracleTimeline) markdown(w writer) {
	roles := t.roles()
	// An exec's ID is the one its start follows: the exec created last on
	// a container before it.
	execOf := map[string]string{}
	var lastCreate string
	for _, c := range t.calls {
		m := containerPath.FindStringSubmatch(c.path)
		if m == nil {
			continue
		}
		switch {
		case m[1] == "containers" && m[3] == "/exec":
			lastCreate = roles[m[2]]
		case m[1] == "exec" && execOf[m[2]] == "":
			execOf[m[2]] = lastCreate
		}
	}
	w("%s\n\n", wrap(fmt.Sprintf("One run's engine calls, from its diagnostic log (`FLIGHTDECK_LOG=debug`: every call with "+
		"its duration), counted from the process's start: the run of median wall-clock time of %d such runs, "+
		"which are not among the measured ones above (the log costs a little). It took %s; the calls overlap "+
		"where flightdeck makes them beside one another. Reading down the \"end\" column gives the path to the "+
		"result: each call that begins after the one above it ended waited for it.", t.runs, ms(t.wall.Seconds())), 103))
	w("<details><summary>%d engine calls</summary>\n\n", len(t.calls))
	w("| begins | ends | took | call |\n|---|---|---|---|\n")
	for _, c := range t.calls {
		w("| %s | %s | %s | %s |\n", msInt(c.start), msInt(c.end), msInt(c.end-c.start), t.describe(c, roles, execOf))
	}
	w("| | %s | | the process exits |\n\n", msInt(t.wall))
	w("</details>\n\n")
}

// msInt is a duration in whole milliseconds.
func msInt(d time.Duration) string {
	return strconv.FormatInt(d.Round(time.Millisecond).Milliseconds(), 10) + " ms"
}
