package results

// VerifySnapshot is task verify's variant that grades the oracle from a
// snapshot of its container.
const VerifySnapshot = "oracle-snapshot"
