package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"

	"github.com/flightdeck/flightdeck/internal/files"
	"github.com/flightdeck/flightdeck/tasks"
)

// keyInput is everything that decides a trial's result, canonically encoded
// (json sorts map keys) and hashed into its cache key: the task's digest,
// the variant's definition (not its name or expectation), the files the
// agent replays from, the timeouts it runs under, the image-map entries that
// apply to the task, and the attempt number.
type keyInput struct {
	TaskDigest      string            `json:"task_digest"`
	Agent           string            `json:"agent"`
	Command         string            `json:"command,omitempty"`
	Script          string            `json:"script,omitempty"`   // sha256 of the script file
	Solution        string            `json:"solution,omitempty"` // digest of solution/ (oracle, deterministic)
	Env             map[string]string `json:"env,omitempty"`
	Images          []string          `json:"images,omitempty"`
	AgentTimeout    float64           `json:"agent_timeout_sec"`
	VerifierTimeout float64           `json:"verifier_timeout_sec"`
	Attempt         int               `json:"attempt"`
	Grading         string            `json:"grading,omitempty"` // a variant's forced grading ("harbor", "snapshot")
	// Model names the container model a Harbor-way trial ran in, so that
	// results of an earlier model (a snapshot grade) are not taken for
	// results of this one.
	Model string `json:"model,omitempty"`
	// RewardKey is the suite's reward_key: (the key of reward.json that
	// decides the reward).
	RewardKey string `json:"reward_key,omitempty"`
	// Tamper is what a flagged trial becomes ("fail" changes its outcome).
	Tamper string `json:"tamper,omitempty"`
	// NoSubstitute: no image stands in for one the task names, so a result
	// got on a stand-in is not this trial's.
	NoSubstitute bool `json:"no_substitute,omitempty"`
	// VerifierOffline grades with no network in the verifier's phase.
	VerifierOffline bool `json:"verifier_offline,omitempty"`
	// NoSettle: the agent starts without the wait for an entrypoint of
	// the image's own to settle.
	NoSettle bool `json:"no_settle,omitempty"`
	// HideAnswers: the oracle ran with the image's copies of its outputs
	// hidden.
	HideAnswers bool `json:"hide_answers,omitempty"`
	// Patch: the oracle applies solution/reference.patch.
	Patch bool `json:"patch,omitempty"`
	// Attack is task verify's reward hack: its name and a digest of its
	// script, so a changed hack is played anew.
	Attack string `json:"attack,omitempty"`
	// Trace: the grade ran under the tracer, and left its record.
	Trace bool `json:"trace,omitempty"`
	// Memory: the result records the agent's peak memory.
	Memory bool `json:"memory,omitempty"`
	// Regrade is the digest of the recorded trial a regrade grades anew.
	Regrade string `json:"regrade,omitempty"`
	// Build is the digest of flightdeck's own executable: a result another
	// build of flightdeck got is not reused, as its verdict may differ.
	Build string `json:"build,omitempty"`
}

// harborModel is the current Harbor-way container model's name in cache keys.
const harborModel = "live-2" // live-2: the agent waits for an entrypoint of the image's own to settle

func (k keyInput) key() string {
	data, _ := json.Marshal(k) // plain values: cannot fail
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// fileDigest is the sha256 of a file's bytes.
func fileDigest(path string) (string, error) {
	sum, err := files.SHA256(path)
	if err != nil {
		return "", err
	}
	return "sha256:" + sum, nil
}

// solutionDigest hashes the task's solution/ ("" when it has none): the
// oracle's and the deterministic agent's input, which task_digest leaves out.
func solutionDigest(t *tasks.Task) (string, error) {
	dir := t.Path(tasks.SolutionDir)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", nil
	}
	return tasks.DigestTree(dir, tasks.SolutionDir)
}
