package results

import (
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/internal/atomicfile"
	"github.com/flightdeck/flightdeck/internal/text"
)

// JUnit XML, one test suite per variant and one test case per trial, for CI
// systems. A trial that did not pass is a failure, an infrastructure error
// or a refused task is an error, a trial that needed input is skipped
// (the question in its message); a failed expectation is a failure too
// (expect: failed trials that failed are passing test cases). The system-out
// holds the outcome and every key of the reward file.

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     float64     `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      float64       `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// junitXML renders a run's results.
func junitXML(rec *RunRecord, results []*Result) ([]byte, error) {
	doc := junitSuites{Name: "flightdeck " + rec.Suite + " " + rec.RunID}
	index := map[string]int{}
	for _, v := range rec.Config.Variants {
		index[v.Name] = len(doc.Suites)
		doc.Suites = append(doc.Suites, junitSuite{Name: v.Name})
	}
	for _, r := range results {
		i, ok := index[r.Variant]
		if !ok {
			index[r.Variant] = len(doc.Suites)
			i = len(doc.Suites)
			doc.Suites = append(doc.Suites, junitSuite{Name: r.Variant})
		}
		c := junitCase{
			Name:      fmt.Sprintf("%s#%d", r.TaskID, r.Attempt),
			Classname: r.Variant,
			Time:      RoundSeconds(r.Finished.Sub(r.Started)),
			SystemOut: fmt.Sprintf("outcome=%s %s cached=%t trial=%s", r.Outcome, RewardText(r), r.Cached, r.Trial),
		}
		if len(r.Tamper) > 0 {
			c.SystemOut += "\ntamper: " + TamperText(r)
		}
		if len(r.MappedImages) > 0 {
			c.SystemOut += "\nsubstitute base (the verdict holds for the image after =): " + strings.Join(r.MappedImages, ", ")
		}
		s := &doc.Suites[i]
		switch {
		case r.Outcome == grader.OutcomeNeedsInput:
			// A cancelled trial: the agent asked what the task does not answer.
			c.Skipped = &junitMessage{Message: text.OneLine(RewardText(r), 300), Type: string(r.Outcome), Text: r.Error}
			s.Skipped++
		case r.Outcome.Ungraded():
			c.Error = &junitMessage{Message: text.OneLine(r.Error, 300), Type: string(r.Outcome), Text: r.Error}
			s.Errors++
		case r.Expectation != nil && !*r.Expectation:
			c.Failure = &junitMessage{Message: fmt.Sprintf("expected %s, got %s", r.Expect, r.Outcome), Type: "expectation", Text: whyText(r)}
			s.Failures++
		case r.Expectation == nil && r.Outcome != grader.OutcomePassed:
			c.Failure = &junitMessage{Message: fmt.Sprintf("%s (%s)", r.Outcome, RewardText(r)), Type: string(r.Outcome), Text: whyText(r)}
			s.Failures++
		}
		s.Tests++
		s.Time += c.Time
		s.Cases = append(s.Cases, c)
	}
	addNotRun(&doc, index, rec)
	for _, s := range doc.Suites {
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
		doc.Skipped += s.Skipped
	}
	out, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode junit: %w", err)
	}
	return append([]byte(xml.Header), append(out, '\n')...), nil
}

// addNotRun adds every planned trial without a result as a skipped case
// that says why, so that the report lists every trial.
func addNotRun(doc *junitSuites, index map[string]int, rec *RunRecord) {
	why := "not run"
	switch {
	case len(rec.MissingShards) > 0:
		why = "not run: " + MissingShardsText(rec)
	case rec.Status == StatusInterrupted:
		why = "interrupted: no result; finish with flightdeck run --resume " + rec.RunID
	}
	for _, id := range rec.NotRun {
		task, variant, attempt := splitTrialID(id)
		i, ok := index[variant]
		if !ok {
			index[variant] = len(doc.Suites)
			i = len(doc.Suites)
			doc.Suites = append(doc.Suites, junitSuite{Name: variant})
		}
		s := &doc.Suites[i]
		s.Tests++
		s.Skipped++
		s.Cases = append(s.Cases, junitCase{Name: fmt.Sprintf("%s#%d", task, attempt), Classname: variant,
			Skipped: &junitMessage{Message: why, Type: "not_run"}, SystemOut: "trial=" + id})
	}
}

// whyText is why a trial ended as it did: its error, else the grader's
// cause.
func whyText(r *Result) string {
	if r.Error != "" {
		return r.Error
	}
	return r.Cause
}

// splitTrialID splits a trial id (task__variant__attempt).
func splitTrialID(id string) (task, variant string, attempt int) {
	parts := strings.Split(id, "__")
	if len(parts) < 3 {
		return id, "", 0
	}
	n := len(parts)
	attempt, _ = strconv.Atoi(parts[n-1])
	return strings.Join(parts[:n-2], "__"), parts[n-2], attempt
}

// WriteJUnit writes a run's junit.xml atomically.
func WriteJUnit(path string, rec *RunRecord, results []*Result) error {
	data, err := junitXML(rec, results)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, data)
}
