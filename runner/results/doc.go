// Package results is what a run leaves on disk and what is read back from
// it: a trial's result.json (Result, ReadResult), the run's run.json
// (RunRecord, ReadRunRecord, FillRecord), junit.xml (WriteJUnit), reports
// (LoadReport, WriteReport, RecordVerdict), per-variant stats, the run's
// summary (WriteSummary); task verify's audit is runner/audit.
//
// # Results
//
//	results/<run-id>/run.json      configuration, versions, times, trials, per-variant stats
//	results/<run-id>/junit.xml     one test case per trial
//	results/<run-id>/<task>__<variant>__<attempt>/
//	    result.json  agent.log  grader.log  build.log  diff.files  diff.patch  events.jsonl
//	results/.cache/<key>.json      which result a cache key produced
//
// Every file is written atomically; a trial has a complete result.json or
// none.
package results
