package grader

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Reward file names, in the order they are looked for: reward.json wins.
const (
	RewardJSON = "reward.json"
	RewardTxt  = "reward.txt"
)

// maxRewardBytes caps a reward file. Harbor's rewards are a few numbers.
const maxRewardBytes = 64 << 10

// Reward is a grade's reward as read from the reward directory.
type Reward struct {
	Value  float64            `json:"value"`  // the "reward" key, else the lowest key (the only one, often); reward.txt's number
	Values map[string]float64 `json:"values"` // every key of reward.json ({"reward": v} for reward.txt)
	Source string             `json:"source"` // "reward.json" | "reward.txt"
}

// Kinds of RewardError.
const (
	RewardMissing    = "missing"     // neither reward.json nor reward.txt exists
	RewardEmpty      = "empty"       // the file is empty or only whitespace
	RewardMalformed  = "malformed"   // not the expected shape: not JSON, not a flat object, no reward key, more than one number
	RewardNonNumeric = "non_numeric" // a value that is not a number (string, bool, null, object, array, a word)
	RewardNotFinite  = "not_finite"  // NaN, Infinity, or a number out of float64's range
	RewardOversized  = "oversized"   // larger than MaxRewardBytes
	RewardNotRegular = "not_regular" // a symlink, directory, device or pipe, or a file that cannot be read
	RewardUnfinished = "unfinished"  // the grading container stopped under the grader, stopped from within; no reward is read
	RewardMissingKey = "missing_key" // the key that decides (a suite's reward_key:) is not among the keys written
	RewardTampered   = "tampered"    // live grading: a process other than the verifier wrote into the reward dir, or kept the verifier from running; no reward is read
)

// RewardError says why no reward could be read.
type RewardError struct {
	Kind   string // one of the Reward* kinds
	File   string // the file (or, for missing, the directory) concerned
	Detail string
}

func (e *RewardError) Error() string {
	if e.File == "" {
		return fmt.Sprintf("reward %s: %s", e.Kind, e.Detail)
	}
	return fmt.Sprintf("reward %s: %s: %s", e.Kind, e.File, e.Detail)
}

// readReward reads dir/reward.json (which wins when both exist) or
// dir/reward.txt. Each is opened as one regular file — a symlink is refused,
// never followed — and read up to MaxRewardBytes. reward.json must be a flat
// JSON object whose values are all finite numbers; its "reward" key is
// Value, and without one the lowest of its keys (a trial passes only when
// every key is 1). reward.txt is one decimal number, surrounding
// whitespace ignored. Every failure is a *RewardError.
func readReward(dir string) (Reward, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Reward{}, &RewardError{Kind: RewardMissing, File: dir, Detail: "the reward directory does not exist"}
		}
		return Reward{}, &RewardError{Kind: RewardNotRegular, File: dir, Detail: err.Error()}
	}
	defer root.Close()
	for _, name := range []string{RewardJSON, RewardTxt} {
		data, err := readRegular(root, name, maxRewardBytes)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		file := filepath.Join(dir, name)
		if err != nil {
			var re *RewardError
			if errors.As(err, &re) {
				re.File = file
				return Reward{}, re
			}
			return Reward{}, &RewardError{Kind: RewardNotRegular, File: file, Detail: err.Error()}
		}
		var r Reward
		if name == RewardJSON {
			r, err = parseRewardJSON(data)
		} else {
			r, err = parseRewardTxt(data)
		}
		if err != nil {
			err.(*RewardError).File = file
			return Reward{}, err
		}
		return r, nil
	}
	return Reward{}, &RewardError{Kind: RewardMissing, File: dir, Detail: "neither reward.json nor reward.txt was written"}
}

// Key is the reward with key deciding: its Values as read, its Value that
// key's. A key the grader did not write is a *RewardError of kind
// missing_key naming the key and the keys written (File left for the
// caller).
func (r Reward) Key(key string) (Reward, error) {
	v, ok := r.Values[key]
	if !ok {
		written := make([]string, 0, len(r.Values))
		for k := range r.Values {
			written = append(written, strconv.Quote(k))
		}
		sort.Strings(written)
		return Reward{}, &RewardError{Kind: RewardMissingKey,
			Detail: fmt.Sprintf("the reward key %q (reward_key:) was not written; the keys written: %s", key, strings.Join(written, ", "))}
	}
	r.Value = v
	return r, nil
}

// readRegular reads name under root as one regular file of at most max
// bytes. A missing file is fs.ErrNotExist; a file that is not regular or too
// large is a *RewardError (its File left for the caller).
func readRegular(root *os.Root, name string, max int64) ([]byte, error) {
	fi, err := root.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &RewardError{Kind: RewardNotRegular, Detail: "not a regular file (" + fi.Mode().Type().String() + ")"}
	}
	f, err := root.OpenFile(name, os.O_RDONLY|openNoFollow, 0)
	if err != nil {
		return nil, &RewardError{Kind: RewardNotRegular, Detail: err.Error()}
	}
	defer f.Close()
	// Check again on the open file: it may have been replaced since Lstat.
	if fi, err = f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, &RewardError{Kind: RewardNotRegular, Detail: "not a regular file"}
	}
	if fi.Size() > max {
		return nil, &RewardError{Kind: RewardOversized, Detail: fmt.Sprintf("%d bytes, more than the %d allowed", fi.Size(), max)}
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, &RewardError{Kind: RewardNotRegular, Detail: err.Error()}
	}
	if int64(len(data)) > max {
		return nil, &RewardError{Kind: RewardOversized, Detail: fmt.Sprintf("more than the %d bytes allowed", max)}
	}
	return data, nil
}

func parseRewardJSON(data []byte) (Reward, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return Reward{}, &RewardError{Kind: RewardEmpty, Detail: "the file is empty"}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return Reward{}, jsonSyntaxError(data, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return Reward{}, &RewardError{Kind: RewardMalformed, Detail: "reward.json must be a JSON object of numbers, like {\"reward\": 1}"}
	}
	values := map[string]float64{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Reward{}, jsonSyntaxError(data, err)
		}
		key := tok.(string) // inside an object, Token returns keys as strings
		if _, dup := values[key]; dup {
			return Reward{}, &RewardError{Kind: RewardMalformed, Detail: fmt.Sprintf("key %q appears twice", key)}
		}
		tok, err = dec.Token()
		if err != nil {
			return Reward{}, jsonSyntaxError(data, err)
		}
		num, ok := tok.(json.Number)
		if !ok {
			return Reward{}, &RewardError{Kind: RewardNonNumeric, Detail: fmt.Sprintf("key %q: %s, but rewards are numbers only", key, describeToken(tok))}
		}
		v, err := strconv.ParseFloat(num.String(), 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
			return Reward{}, &RewardError{Kind: RewardNotFinite, Detail: fmt.Sprintf("key %q: %s is out of range", key, num)}
		}
		values[key] = v
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return Reward{}, jsonSyntaxError(data, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Reward{}, &RewardError{Kind: RewardMalformed, Detail: "data after the JSON object"}
	}
	r := Reward{Values: values, Source: RewardJSON}
	switch v, ok := values["reward"]; {
	case ok:
		r.Value = v
	case len(values) == 1:
		for _, v := range values {
			r.Value = v
		}
	case len(values) == 0:
		return Reward{}, &RewardError{Kind: RewardMalformed, Detail: "the object has no keys"}
	default:
		// Several keys and none is "reward" (Harbor records each key): the
		// trial's reward is the lowest, so it passes only when every key
		// does.
		r.Value = math.Inf(1)
		for _, v := range values {
			r.Value = min(r.Value, v)
		}
	}
	return r, nil
}

// jsonSyntaxError classifies a decoding error: a NaN or Infinity literal
// (which Python's json writes) is not_finite, anything else malformed.
func jsonSyntaxError(data []byte, err error) error {
	if lit := nonFiniteLiteral(data); lit != "" {
		return &RewardError{Kind: RewardNotFinite, Detail: lit + " is not a finite number"}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &RewardError{Kind: RewardMalformed, Detail: "the JSON ends early"}
	}
	return &RewardError{Kind: RewardMalformed, Detail: "not JSON: " + err.Error()}
}

// nonFiniteLiteral finds a bare NaN or Infinity outside JSON strings.
func nonFiniteLiteral(data []byte) string {
	inString, escaped := false, false
	for i, c := range data {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString:
			for _, lit := range []string{"NaN", "Infinity"} {
				if bytes.HasPrefix(data[i:], []byte(lit)) {
					return lit
				}
			}
		}
	}
	return ""
}

func describeToken(tok json.Token) string {
	switch t := tok.(type) {
	case string:
		return fmt.Sprintf("the string %q", truncate(t, 40))
	case bool:
		return fmt.Sprintf("the boolean %t", t)
	case nil:
		return "null"
	case json.Delim:
		if t == '{' {
			return "an object"
		}
		return "an array"
	}
	return fmt.Sprintf("%v", tok)
}

// decimalNumber is a plain decimal number, as reward.txt holds it.
var decimalNumber = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// notFiniteWord is what Python's float() and friends print for non-finite values.
var notFiniteWord = regexp.MustCompile(`(?i)^[+-]?(nan|inf|infinity)$`)

func parseRewardTxt(data []byte) (Reward, error) {
	text := strings.TrimSpace(string(data))
	switch {
	case text == "":
		return Reward{}, &RewardError{Kind: RewardEmpty, Detail: "the file is empty"}
	case strings.ContainsAny(text, " \t\r\n\v\f"):
		return Reward{}, &RewardError{Kind: RewardMalformed, Detail: "reward.txt must hold one number, found several words"}
	case notFiniteWord.MatchString(text):
		return Reward{}, &RewardError{Kind: RewardNotFinite, Detail: truncate(text, 40) + " is not a finite number"}
	case !decimalNumber.MatchString(text):
		return Reward{}, &RewardError{Kind: RewardNonNumeric, Detail: fmt.Sprintf("%q is not a number", truncate(text, 40))}
	}
	v, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(v, 0) {
		return Reward{}, &RewardError{Kind: RewardNotFinite, Detail: truncate(text, 40) + " is out of range"}
	}
	return Reward{Value: v, Values: map[string]float64{"reward": v}, Source: RewardTxt}, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
