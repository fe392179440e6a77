package merge

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/flightdeck/flightdeck/internal/files"
	"github.com/flightdeck/flightdeck/runner/htmlreport"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/runner/suite"
)

// Options are flightdeck merge's: the shard runs' dirs, where the
// merged run goes, and whether missing shards are allowed.
type Options struct {
	Dirs         []string
	Results      string // "": the first shard's results dir
	AllowMissing bool
}

// Runs joins the runs of a run's shards (run --shard K/N) into one run,
// as if one process had run every trial: its trials' files, run.json,
// junit.xml and report.html. It refuses shards of different suites,
// variants, flightdeck versions or task sets, a shard given twice, and a
// missing shard unless AllowMissing (the run is then incomplete, and its
// exit code says trials are without a result). The shard dirs are only
// read; merging the same shards again gives the same run, in the same dir.
func Runs(opts Options) (*results.RunRecord, error) {
	recs, dirs, err := readShards(opts.Dirs)
	if err != nil {
		return nil, err
	}
	missing, err := checkShards(recs, dirs, opts.AllowMissing)
	if err != nil {
		return nil, err
	}
	resultsDir := opts.Results
	if resultsDir == "" {
		resultsDir = filepath.Dir(filepath.Clean(dirs[0]))
	}
	runID := mergedID(recs)
	dir := filepath.Join(resultsDir, runID)
	for _, d := range dirs {
		if filepath.Clean(d) == filepath.Clean(dir) {
			return nil, fmt.Errorf("%s is the merged run itself, not a shard", d)
		}
	}
	if err := os.MkdirAll(resultsDir, 0o755); err != nil {
		return nil, fmt.Errorf("results dir: %w", err)
	}
	// Built aside and renamed into place: an earlier merge of the same
	// shards is replaced whole, and a failed one leaves nothing.
	tmp, err := os.MkdirTemp(resultsDir, ".merge-")
	if err != nil {
		return nil, fmt.Errorf("results dir: %w", err)
	}
	defer os.RemoveAll(tmp)

	rec, all, err := mergeRecords(recs, dirs, tmp, resultsDir, runID, missing)
	if err != nil {
		return nil, err
	}
	rec.Dir = dir
	if err := results.WriteJSONFile(filepath.Join(tmp, results.RunFile), rec); err != nil {
		return nil, err
	}
	if err := results.WriteJUnit(filepath.Join(tmp, results.JUnitFile), rec, all); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("replace the earlier merge %s: %w", dir, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return nil, fmt.Errorf("write %s: %w", dir, err)
	}
	if err := htmlreport.WriteFile(filepath.Join(dir, htmlreport.File), dir, ""); err != nil {
		return rec, fmt.Errorf("report.html: %w", err)
	}
	cache := results.CacheIndex{ResultsDir: resultsDir}
	for _, r := range all {
		if !r.Outcome.Ungraded() {
			cache.Store(r.CacheKey, runID, r.Trial)
		}
	}
	return rec, nil
}

// readShards reads each named shard run's record, with its run dir.
func readShards(named []string) ([]*results.RunRecord, []string, error) {
	if len(named) == 0 {
		return nil, nil, errors.New("name the shard runs' dirs")
	}
	recs := make([]*results.RunRecord, len(named))
	dirs := make([]string, len(named))
	for i, d := range named {
		d, err := shardRunDir(d)
		if err != nil {
			return nil, nil, err
		}
		dirs[i] = d
		rec, err := results.ReadRunRecord(d)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", d, err)
		}
		if rec.Config.Shard == nil {
			return nil, nil, fmt.Errorf("%s: run %s is not a shard (it ran without --shard K/N)", d, rec.RunID)
		}
		if rec.Status == results.StatusRunning {
			return nil, nil, fmt.Errorf("%s: run %s has not finished", d, rec.RunID)
		}
		recs[i] = rec
	}
	return recs, dirs, nil
}

// checkShards checks that the shards are parts of one run, each given
// once, and returns the parts missing (an error unless allowMissing).
func checkShards(recs []*results.RunRecord, dirs []string, allowMissing bool) ([]int, error) {
	first := recs[0]
	byK := map[int]string{}
	for i, rec := range recs {
		sh, d := rec.Config.Shard, dirs[i]
		if err := sameRun(first, rec, dirs[0], d); err != nil {
			return nil, err
		}
		if other, ok := byK[sh.K]; ok {
			return nil, fmt.Errorf("shard %d/%d is given twice: %s and %s", sh.K, sh.N, other, d)
		}
		byK[sh.K] = d
	}
	n := first.Config.Shard.N
	var missing []int
	for k := 1; k <= n; k++ {
		if _, ok := byK[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 && !allowMissing {
		var names []string
		for _, k := range missing {
			names = append(names, fmt.Sprintf("%d/%d", k, n))
		}
		return nil, fmt.Errorf("shard %s missing: give its run dir too, or --allow-missing to merge what is here (the run is then incomplete)", strings.Join(names, ", "))
	}
	return missing, nil
}

// mergedID names the merge of these shard runs: the same shards, the
// same id.
func mergedID(recs []*results.RunRecord) string {
	var ids []string
	for _, rec := range recs {
		ids = append(ids, rec.RunID)
	}
	slices.Sort(ids)
	sum := sha256.Sum256([]byte(strings.Join(ids, "\n")))
	return "merged-" + hex.EncodeToString(sum[:6])
}

// mergeRecords copies the shards' trials into tmp and builds the merged
// run's record; a missing shard's trials are listed as not run.
func mergeRecords(recs []*results.RunRecord, dirs []string, tmp, resultsDir, runID string, missing []int) (*results.RunRecord, []*results.Result, error) {
	first := recs[0]
	n := first.Config.Shard.N
	cfg := first.Config
	cfg.Shard = nil
	cfg.Results = resultsDir
	rec := &results.RunRecord{Schema: results.RunSchema, RunID: runID, Suite: first.Suite, SuiteFile: first.SuiteFile,
		Config: cfg, Versions: first.Versions, Status: results.StatusFinished, MissingShards: missing}
	rec.Versions.Go = runtime.Version()
	var all []*results.Result
	for i, src := range recs {
		rec.Shards = append(rec.Shards, fmt.Sprintf("%d/%d %s", src.Config.Shard.K, n, src.RunID))
		for _, f := range src.FallbackImages {
			if !slices.Contains(rec.FallbackImages, f) {
				rec.FallbackImages = append(rec.FallbackImages, f)
			}
		}
		if rec.Started.IsZero() || src.Started.Before(rec.Started) {
			rec.Started = src.Started
		}
		rec.Finished = maxTime(rec.Finished, src.Finished)
		got, err := mergeTrials(dirs[i], tmp, runID)
		if err != nil {
			return nil, nil, err
		}
		all = append(all, got...)
		rec.NotRun = append(rec.NotRun, src.NotRun...)
	}
	slices.Sort(rec.Shards)
	if len(missing) > 0 {
		rec.NotRun = append(rec.NotRun, missingTrials(recs, cfg)...)
		rec.Status = results.StatusInterrupted
	}
	slices.SortFunc(all, func(a, b *results.Result) int { return strings.Compare(a.Trial, b.Trial) })
	results.FillRecord(rec, cfg.Variants, cfg.Attempts, all)
	return rec, all, nil
}

// missingTrials are the trials of the tasks no given shard held.
func missingTrials(recs []*results.RunRecord, cfg suite.Config) []string {
	have := map[string]bool{}
	for _, src := range recs {
		for _, t := range src.Config.Shard.Tasks {
			have[t] = true
		}
	}
	var out []string
	for _, task := range recs[len(recs)-1].Config.Shard.All {
		if have[task] {
			continue
		}
		for _, v := range cfg.Variants {
			for a := 1; a <= max(1, cfg.Attempts); a++ {
				out = append(out, suite.TrialID(task, v.Name, a))
			}
		}
	}
	return out
}

// shardRunDir is the run dir d names: d itself, or the one run of the
// results dir d (a CI job's results dir holds its shard's run alone).
func shardRunDir(d string) (string, error) {
	if _, err := os.Stat(filepath.Join(d, results.RunFile)); err == nil {
		return d, nil
	}
	entries, err := os.ReadDir(d)
	if err != nil {
		return "", err
	}
	var runs []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), "merged-") {
			if _, err := os.Stat(filepath.Join(d, e.Name(), results.RunFile)); err == nil {
				runs = append(runs, e.Name())
			}
		}
	}
	switch len(runs) {
	case 0:
		return "", fmt.Errorf("%s: no %s: not a run's dir (flightdeck run --shard K/N prints its dir)", d, results.RunFile)
	case 1:
		return filepath.Join(d, runs[0]), nil
	}
	return "", fmt.Errorf("%s is a results dir of %d runs (%s): name the shard's run dir", d, len(runs), strings.Join(runs, ", "))
}

// sameRun refuses a shard of another run than first's.
func sameRun(first, rec *results.RunRecord, firstDir, dir string) error {
	a, b := first.Config.Shard, rec.Config.Shard
	differ := func(what, x, y string) error {
		return fmt.Errorf("%s and %s are shards of different runs: %s %s, not %s", dir, firstDir, what, y, x)
	}
	switch {
	case a.N != b.N:
		return differ("split in", fmt.Sprintf("%d shards", a.N), fmt.Sprintf("%d shards", b.N))
	case first.Suite != rec.Suite:
		return differ("suite", first.Suite, rec.Suite)
	case first.Versions.Flightdeck != rec.Versions.Flightdeck:
		return differ("flightdeck", first.Versions.Flightdeck, rec.Versions.Flightdeck)
	case a.Plan != b.Plan:
		return differ("tasks (their ids or digests)", a.Plan, b.Plan)
	case jsonText(first.Config.Variants) != jsonText(rec.Config.Variants) || first.Config.Attempts != rec.Config.Attempts:
		return differ("variants", jsonText(first.Config.Variants), jsonText(rec.Config.Variants))
	}
	return nil
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// mergeTrials links (or copies) a shard's trials into dst, each result
// recorded as the merged run's, and returns the results.
func mergeTrials(src, dst, runID string) ([]*results.Result, error) {
	entries, err := os.ReadDir(src)
	if err != nil {
		return nil, err
	}
	var out []*results.Result
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		r, err := results.ReadResult(filepath.Join(src, e.Name(), results.ResultFile))
		if errors.Is(err, os.ErrNotExist) {
			continue // a trial the shard did not finish: not run
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
		to := filepath.Join(dst, e.Name())
		if _, err := os.Stat(to); err == nil {
			return nil, fmt.Errorf("trial %s is in two shards (%s is one)", e.Name(), src)
		}
		if err := files.ResetDir(to); err != nil {
			return nil, err
		}
		if err := results.LinkTrialFiles(filepath.Join(src, e.Name()), to); err != nil {
			return nil, err
		}
		r.RunID = runID
		if err := results.WriteJSONFile(filepath.Join(to, results.ResultFile), r); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
