package results

// VerifySnapshot is task verify's variant that grades the oracle from a
// snapshot of its container.
const VerifySnapshot = "oracle-snapshot"

// VerifyEnv is task verify's variant that runs the oracle under another
// time zone, locale and hash seed (VerifyEnvVars).
const VerifyEnv = "oracle-env"

// VerifyEnvVars are the oracle's environment in the VerifyEnv variant: a
// time zone 14 hours ahead of UTC (a POSIX TZ, which needs no tzdata), a
// UTF-8 locale and a fixed hash seed.
var VerifyEnvVars = map[string]string{"TZ": "UTC-14", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "4242"}

// VerifyOffline is task verify's variant that grades a Harbor task's
// oracle with no network in the verifier's phase.
const VerifyOffline = "oracle-offline"

// VerifyPatch is task verify's variant that applies a task's
// solution/reference.patch as the oracle, beside its solve.sh.
const VerifyPatch = "oracle-patch"

// VerifyUnsettled is task verify's variant that starts the oracle as soon
// as the task's container runs, without waiting for its entrypoint to
// settle.
const VerifyUnsettled = "oracle-unsettled"

// VerifyTraced is task verify's variant that grades the oracle under the
// tracer: what its verifier executes and opens is the rewrite attack's
// list of targets.
const VerifyTraced = "oracle-traced"

// VerifyHidden is task verify's variant that runs the oracle with the
// image's copies of its outputs hidden: a reference that then fails
// copies the answer rather than computes it.
const VerifyHidden = "oracle-hidden"

// VerifyAttackPrefix starts the names of task verify's variants that play a
// reward hack in place of the agent: "attack-" and the hack's name.
const VerifyAttackPrefix = "attack-"
