package tasks

import (
	"bufio"
	"bytes"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/flightdeck/flightdeck/internal/text"
)

// ruleDockerfileInstruction: a Dockerfile line starts with a word no builder knows.
const ruleDockerfileInstruction = "dockerfile.instruction"

// dockerfileInstructions are the instructions the builders know.
var dockerfileInstructions = []string{"FROM", "RUN", "CMD", "LABEL", "MAINTAINER", "EXPOSE", "ENV", "ADD", "COPY",
	"ENTRYPOINT", "VOLUME", "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL"}

// heredocStart finds a heredoc's delimiter on an instruction's line:
// <<EOF, <<-EOF, <<"EOF", <<'EOF'.
var heredocStart = regexp.MustCompile(`<<-?["']?([A-Za-z_][A-Za-z0-9_]*)["']?`)

// checkDockerfileInstructions warns of a Dockerfile line whose first word is no
// instruction (RUNN): the build fails there. Continuation lines, comments,
// parser directives and heredoc bodies are not instructions' starts.
func checkDockerfileInstructions(dir string) []Finding {
	data, err := readRegular(filepath.Join(dir, filepath.FromSlash(environmentDockerfile)))
	if err != nil {
		return nil
	}
	var out []Finding
	continued, heredoc := false, ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		l := strings.TrimSpace(sc.Text())
		switch {
		case heredoc != "":
			if l == heredoc {
				heredoc = ""
			}
			continue
		case l == "" || strings.HasPrefix(l, "#"):
			continue
		case continued:
			continued = strings.HasSuffix(l, "\\") || strings.HasSuffix(l, "`")
			continue
		}
		continued = strings.HasSuffix(l, "\\") || strings.HasSuffix(l, "`")
		word := strings.ToUpper(strings.Fields(l)[0])
		if m := heredocStart.FindStringSubmatch(l); m != nil && !continued {
			heredoc = m[1]
		}
		if !slices.Contains(dockerfileInstructions, word) {
			msg := "%s is not a Dockerfile instruction: the build fails at this line"
			args := []any{strings.Fields(l)[0]}
			if near := text.Nearest(word, dockerfileInstructions); near != "" {
				msg += "; did you mean %s?"
				args = append(args, near)
			}
			out = append(out, finding(dir, environmentDockerfile, line, SeverityWarning, ruleDockerfileInstruction, msg, args...))
		}
	}
	return out
}
