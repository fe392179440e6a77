//go:build !(linux && amd64)

package vtrace

import (
	"errors"
	"io"
)

func trace(argv []string, w io.Writer) (int, error) {
	return 126, errors.New("tracing a verifier needs linux/amd64")
}
