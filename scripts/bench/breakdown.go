package main

import (
	"slices"
	"time"
)

// breakdown splits trials' wall-clock time by the runner's phases (from
// result.json) and, within each phase, by engine call (from the timed
// engine); what is left of a phase is host work (git, files, JSON).
type breakdown struct {
	trials       int
	total        samples
	phases       []phaseRow
	outside      samples   // before the first phase and after the last: dirs, cleanups, result.json, cache index
	outsideCalls []callRow // engine calls made there (the agent container's removal)
	// methods are every engine call of a trial, in its phases or not,
	// summed by method; rest is the trial's time besides them.
	methods []callRow
	rest    samples
}

type phaseRow struct {
	name  string
	took  samples
	calls []callRow
	host  samples // the phase minus its engine calls
}

type callRow struct {
	method string
	took   samples // per trial, all calls of this method in the phase
	count  float64 // calls per trial
}

// phaseSpan is a measured trial's phase.
type phaseSpan struct {
	name       string
	start, end time.Time
}

// sample is one measured trial for a breakdown.
type sample struct {
	total  time.Duration
	phases []phaseSpan
	calls  []call // made during the trial
}

// sampleOf collects one trial's phases and the engine calls made during them.
func sampleOf(r *inProcessRun, trial string) sample {
	res := r.byTrial[trial]
	s := sample{total: r.trialTime(trial)}
	for _, p := range res.Phases {
		s.phases = append(s.phases, phaseSpan{name: p.Name, start: p.Start, end: p.End})
	}
	if len(s.phases) == 0 {
		return s
	}
	first, last := s.phases[0].start, s.phases[len(s.phases)-1].end
	if w, ok := r.windows[trial]; ok {
		first, last = w.start, w.end
	}
	for _, c := range r.calls {
		if !c.At.Before(first) && !c.At.After(last) {
			s.calls = append(s.calls, c)
		}
	}
	return s
}

// newBreakdown aggregates samples: medians per phase and per call.
func newBreakdown(ss []sample) breakdown {
	b := breakdown{trials: len(ss)}
	b.methods, b.rest = byMethod(ss)
	var order []string
	seen := map[string]bool{}
	methods := map[string][]string{}
	for _, s := range ss {
		for _, p := range s.phases {
			if !seen[p.name] {
				seen[p.name] = true
				order = append(order, p.name)
			}
			for _, c := range s.calls {
				if inSpan(c.At, p) && !slices.Contains(methods[p.name], c.Method) {
					methods[p.name] = append(methods[p.name], c.Method)
				}
			}
		}
	}
	for _, name := range order {
		row := phaseRow{name: name}
		perMethod := map[string]samples{}
		counts := map[string]int{}
		for _, s := range ss {
			var took, inCalls time.Duration
			for _, p := range s.phases {
				if p.name != name {
					continue
				}
				took += p.end.Sub(p.start)
				byMethod := map[string]time.Duration{}
				for _, c := range s.calls {
					if inSpan(c.At, p) {
						byMethod[c.Method] += c.Took
						inCalls += c.Took
						counts[c.Method]++
					}
				}
				for _, m := range methods[name] {
					perMethod[m] = append(perMethod[m], byMethod[m].Seconds())
				}
			}
			row.took = append(row.took, took.Seconds())
			row.host = append(row.host, max(0, (took-inCalls).Seconds()))
		}
		for _, m := range methods[name] {
			row.calls = append(row.calls, callRow{method: m, took: perMethod[m], count: float64(counts[m]) / float64(len(ss))})
		}
		b.phases = append(b.phases, row)
	}
	var outMethods []string
	outTook := map[string]samples{}
	outCount := map[string]int{}
	for _, s := range ss {
		b.total = append(b.total, s.total.Seconds())
		var in time.Duration
		for _, p := range s.phases {
			in += p.end.Sub(p.start)
		}
		b.outside = append(b.outside, max(0, (s.total-in).Seconds()))
		byMethod := map[string]time.Duration{}
		for _, c := range s.calls {
			if !slices.ContainsFunc(s.phases, func(p phaseSpan) bool { return inSpan(c.At, p) }) {
				if !slices.Contains(outMethods, c.Method) {
					outMethods = append(outMethods, c.Method)
				}
				byMethod[c.Method] += c.Took
				outCount[c.Method]++
			}
		}
		for m, d := range byMethod {
			outTook[m] = append(outTook[m], d.Seconds())
		}
	}
	for _, m := range outMethods {
		// Trials without such a call count as 0.
		for len(outTook[m]) < len(ss) {
			outTook[m] = append(outTook[m], 0)
		}
		b.outsideCalls = append(b.outsideCalls, callRow{method: m, took: outTook[m], count: float64(outCount[m]) / float64(len(ss))})
	}
	return b
}

func inSpan(t time.Time, p phaseSpan) bool { return !t.Before(p.start) && t.Before(p.end) }

// byMethod sums each trial's engine calls by method, wherever in the trial
// they were made, and returns what is left of each trial besides them:
// a trial's whole cost call by call, to set beside the floor's.
func byMethod(ss []sample) (rows []callRow, rest samples) {
	for k, s := range ss {
		var inCalls time.Duration
		for _, c := range s.calls {
			i := slices.IndexFunc(rows, func(r callRow) bool { return r.method == c.Method })
			if i < 0 {
				rows = append(rows, callRow{method: c.Method, took: make(samples, len(ss))})
				i = len(rows) - 1
			}
			rows[i].took[k] += c.Took.Seconds()
			rows[i].count++
			inCalls += c.Took
		}
		rest = append(rest, max(0, (s.total-inCalls).Seconds()))
	}
	for i := range rows {
		rows[i].count /= float64(len(ss))
	}
	return rows, rest
}
