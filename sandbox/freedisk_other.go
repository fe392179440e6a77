//go:build !unix

package sandbox

// freeDisk is unknown here.
func freeDisk(string) int64 { return -1 }
