package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// The diagnostic log: what flightdeck did beneath the lines it prints for
// the user (every engine call with its duration and outcome, each
// cleanup, each retry decision). It is off unless asked for, and never
// holds a request's body: no environment value, file or secret.
const (
	logEnv     = "FLIGHTDECK_LOG"      // debug, info, warn or error
	logFileEnv = "FLIGHTDECK_LOG_FILE" // where it goes (appended); default stderr
)

// diagnosticLog is the log FLIGHTDECK_LOG asks for, written to
// FLIGHTDECK_LOG_FILE (relative to cwd) or else to stderr, and the
// function that closes it. No FLIGHTDECK_LOG: no log (nil).
func diagnosticLog(getenv func(string) string, cwd string, stderr io.Writer) (*slog.Logger, func(), error) {
	level := strings.ToLower(strings.TrimSpace(getenv(logEnv)))
	file := getenv(logFileEnv)
	if level == "" {
		if file != "" {
			level = "debug"
		} else {
			return nil, func() {}, nil
		}
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, nil, fmt.Errorf("%s=%q: not a log level (debug, info, warn or error)", logEnv, getenv(logEnv))
	}
	w, closeFn := stderr, func() {}
	if file != "" {
		if !filepath.IsAbs(file) {
			file = filepath.Join(cwd, file)
		}
		f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: open the diagnostic log: %v", logFileEnv, err)
		}
		w, closeFn = f, func() { f.Close() }
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), closeFn, nil
}
