package grader

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/flightdeck/flightdeck/internal/atomicfile"
	"github.com/flightdeck/flightdeck/internal/text"
)

// maxLogRead caps how much of grader.log is read to find the RESULT line.
const maxLogRead = 64 << 20

// appendTestStdout appends Harbor's test-stdout.txt, read as one regular
// file from the reward dir, to grader.log, without its escape sequences
// (test runners colour their verdicts). A missing file appends nothing.
func appendTestStdout(rewardDir, logPath string) error {
	root, err := os.OpenRoot(rewardDir)
	if err != nil {
		return fmt.Errorf("open %s: %w", rewardDir, err)
	}
	defer root.Close()
	data, err := readRegular(root, HarborTestStdout, maxLogCopy)
	var re *RewardError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.As(err, &re) && re.Kind == RewardOversized:
		data, err = readPrefix(root, HarborTestStdout, maxLogCopy)
		if err != nil {
			return fmt.Errorf("read %s: %w", filepath.Join(rewardDir, HarborTestStdout), err)
		}
		data = append(data, "\n[flightdeck: test-stdout.txt truncated]\n"...)
	case err != nil:
		return fmt.Errorf("read %s: %w", filepath.Join(rewardDir, HarborTestStdout), err)
	}
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("append test output to %s: %w", logPath, err)
	}
	if _, err := io.WriteString(f, text.StripANSI(string(data))); err != nil {
		f.Close()
		return fmt.Errorf("append test output to %s: %w", logPath, err)
	}
	return f.Close()
}

// readPrefix reads the first max bytes of a regular file under root.
func readPrefix(root *os.Root, name string, max int64) ([]byte, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|openNoFollow, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	return io.ReadAll(io.LimitReader(f, max))
}

// cleanLog removes escape sequences from grader.log once the grader has
// written it: the grader's output reaches the file straight from the
// engine, colours and all, and the log is read in reports. A missing log
// is left missing.
func cleanLog(logPath string) error {
	data, err := os.ReadFile(logPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", logPath, err)
	}
	clean := text.StripANSI(string(data))
	if len(clean) == len(data) {
		return nil
	}
	if err := atomicfile.Replace(logPath, []byte(clean)); err != nil {
		return fmt.Errorf("remove escape sequences from %s: %w", logPath, err)
	}
	return nil
}

// readLog reads the tail of grader.log that ParseResult needs, without
// escape sequences: a RESULT line may be coloured.
func readLog(logPath string) ([]byte, error) {
	f, err := os.Open(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > maxLogRead {
		if _, err := f.Seek(fi.Size()-maxLogRead, io.SeekStart); err != nil {
			return nil, err
		}
	}
	var b bytes.Buffer
	_, err = io.Copy(text.NewANSIStripper(&b), io.LimitReader(f, maxLogRead))
	return b.Bytes(), err
}
