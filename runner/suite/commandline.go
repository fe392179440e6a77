package suite

import (
	"path/filepath"

	"github.com/flightdeck/flightdeck/internal/hostpath"
	"github.com/flightdeck/flightdeck/internal/text"
)

// CommandLineSuite is the suite `flightdeck run` uses with --path or
// --registry and no suite file: the built-in agents the flags name (oracle
// when none), the default results dir, nothing else.
func CommandLineSuite(opts Options) *Suite {
	name := "run"
	switch {
	case opts.Dataset != "":
		name = opts.Dataset
	case len(opts.Path) == 1:
		name = filepath.Base(filepath.Clean(hostpath.Abs(opts.Cwd, opts.Path[0])))
	}
	s := &Suite{
		Name: text.FileName(name), Dir: opts.Cwd, File: filepath.Join(opts.Cwd, CommandLine),
		Attempts: 1, Retries: 1, TimeoutMultiplier: Multipliers{Agent: 1, Verifier: 1, Build: 1},
		Results: DefaultResultsDir(opts.Cwd),
	}
	if len(opts.Variants) == 0 {
		s.Variants = []Variant{BuiltinVariant(AgentOracle)}
	}
	return s
}
