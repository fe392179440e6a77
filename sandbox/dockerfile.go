package sandbox

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/distribution/reference"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
)

// dockerfilePlan is what flightdeck learns from a Dockerfile before it
// builds it, and the Dockerfile it will send.
type dockerfilePlan struct {
	Content  []byte   // the Dockerfile to send: image map applied, # syntax dropped
	Bases    []string // images the build reads (after mapping), first use order, no duplicates
	Mapped   []string // "from=to" substitutions applied
	BuildKit []string // features that need BuildKit, as "line N: RUN --mount"
	Syntax   string   // the frontend image of a dropped "# syntax=" directive
	Escape   rune     // the escape character: backslash unless "# escape=" says otherwise
}

// buildkitOnly reports whether an instruction's flag is one only BuildKit
// understands.
func buildkitOnly(instr, flag string) bool {
	switch instr {
	case "run":
		return slices.Contains([]string{"mount", "network", "security", "device"}, flag)
	case "copy":
		return slices.Contains([]string{"chmod", "link", "parents", "exclude"}, flag)
	case "add":
		return slices.Contains([]string{"chmod", "link", "parents", "exclude", "checksum", "keep-git-dir", "unpack"}, flag)
	}
	return false
}

// DockerfileBases lists the images a build of the Dockerfile reads: the
// bases of its FROM instructions and the images its COPY --from and RUN
// --mount=from name, in the order of first use, each once, before any image
// map. References are expanded with the global ARGs (those before the first
// FROM) as the build expands them; stages, scratch and references whose
// value only the builder knows are left out. It is the build's own reading
// of the Dockerfile, so the two agree. A Dockerfile the build refuses is an
// error wrapping ErrDockerfile.
func DockerfileBases(content []byte) ([]string, error) {
	plan, err := planDockerfile(content, nil, nil)
	if err != nil {
		return nil, err
	}
	return plan.Bases, nil
}

// planDockerfile parses a Dockerfile with BuildKit's parser and applies the
// image map to FROM, COPY --from and RUN --mount=from. Stage names are not
// images, and neither is scratch. Secret and ssh mounts are refused: they
// need a client session, which flightdeck does not offer.
// buildArgs are the build's --build-arg values: a global ARG given one
// takes it, whatever its default.
func planDockerfile(content []byte, imageMap, buildArgs map[string]string) (dockerfilePlan, error) {
	res, err := parser.Parse(bytes.NewReader(content))
	if err != nil {
		return dockerfilePlan{}, fmt.Errorf("%w: %v", ErrDockerfile, err)
	}
	if err := knownInstructions(res.AST); err != nil {
		return dockerfilePlan{}, err
	}
	p := &planner{
		plan:     dockerfilePlan{Escape: res.EscapeToken},
		lines:    strings.Split(string(content), "\n"),
		imageMap: imageMap,
		lex:      shell.NewLex(res.EscapeToken),
		args:     newGlobalArgs(buildArgs),
		stages:   map[string]bool{},
		seen:     map[string]bool{},
	}
	if syntax, _, ranges, ok := parser.DetectSyntax(content); ok && len(ranges) > 0 {
		p.plan.Syntax = syntax
		p.setLine(ranges[0].Start.Line, "#")
	}
	stageCount := 0
	for _, node := range res.AST.Children {
		instr := strings.ToLower(node.Value)
		switch instr {
		case "arg":
			// An ARG inside a stage is the stage's: FROM does not see it.
			if stageCount == 0 {
				for n := node.Next; n != nil; n = n.Next {
					p.args.declare(p.lex, n.Value)
				}
			}
		case "from":
			p.from(node)
			stageCount++
		}
		if err := p.features(node, instr); err != nil {
			return dockerfilePlan{}, err
		}
	}
	if stageCount == 0 {
		return dockerfilePlan{}, fmt.Errorf("%w: no FROM instruction", ErrDockerfile)
	}
	if p.changed {
		p.plan.Content = []byte(strings.Join(p.lines, "\n"))
	} else {
		p.plan.Content = content
	}
	return p.plan, nil
}

type planner struct {
	plan     dockerfilePlan
	lines    []string
	changed  bool
	imageMap map[string]string
	lex      *shell.Lex
	args     *globalArgs
	stages   map[string]bool // stage names seen so far, lower case
	seen     map[string]bool // Bases already listed
}

// globalArgs are the ARGs declared before the first FROM, valued as the
// builders value them: the build's --build-arg value when it has one (a
// compose service's build.args), else the default, expanded with the ARGs
// before it. It is the environment FROM lines are expanded in.
type globalArgs struct {
	values map[string]string
	given  map[string]string // the build's --build-arg values
	// unknown names the ARGs whose value depends on the builder: the
	// platform ARGs BuildKit defines, ARGs whose default uses them, and
	// ARGs declared again without a default (BuildKit keeps the value, the
	// classic builder drops it).
	unknown map[string]bool
}

func newGlobalArgs(given map[string]string) *globalArgs {
	g := &globalArgs{values: map[string]string{}, unknown: map[string]bool{}, given: given}
	for _, name := range []string{
		"BUILDPLATFORM", "BUILDOS", "BUILDOSVERSION", "BUILDARCH", "BUILDVARIANT",
		"TARGETPLATFORM", "TARGETOS", "TARGETOSVERSION", "TARGETARCH", "TARGETVARIANT", "TARGETSTAGE",
	} {
		g.unknown[name] = true
	}
	return g
}

// Get and Keys make globalArgs the lexer's environment.
func (g *globalArgs) Get(name string) (string, bool) {
	v, ok := g.values[name]
	return v, ok
}

func (g *globalArgs) Keys() []string { return slices.Sorted(maps.Keys(g.values)) }

// declare reads one word of an ARG instruction: NAME or NAME=default.
func (g *globalArgs) declare(lex *shell.Lex, word string) {
	name, def, ok := strings.Cut(word, "=")
	if v, given := g.given[name]; given {
		g.values[name] = v
		delete(g.unknown, name)
		return
	}
	if !ok {
		if _, set := g.values[name]; set {
			delete(g.values, name)
			g.unknown[name] = true
		}
		return
	}
	v, err := lex.ProcessWordWithMatches(def, g)
	if err != nil || g.dependsOnUnknown(v) {
		delete(g.values, name)
		g.unknown[name] = true
		return
	}
	g.values[name] = v.Result
	delete(g.unknown, name)
}

func (g *globalArgs) dependsOnUnknown(res shell.ProcessWordResult) bool {
	for name := range res.Unmatched {
		if g.unknown[name] {
			return true
		}
	}
	return false
}

// expand replaces global-ARG references in a --from value. ok is false
// when a variable has no value here or the word expands to nothing, so it
// cannot be known before the build.
func (p *planner) expand(word string) (string, bool) {
	res, err := p.lex.ProcessWordWithMatches(word, p.args)
	if err != nil || len(res.Unmatched) > 0 || res.Result == "" {
		return word, false
	}
	return res.Result, true
}

// expandBase expands a FROM's image as the build does. An ARG with no value
// here has none in the build either (flightdeck passes no --build-arg), so
// ${VAR:-default} gives the default and $VAR nothing. ok is false when the
// result cannot be known before the build: it uses a value only the builder
// knows, or it is nothing or not an image reference (python:${TAG} with TAG
// unset), which the builder reports.
func (p *planner) expandBase(word string) (string, bool) {
	res, err := p.lex.ProcessWordWithMatches(word, p.args)
	if err != nil || res.Result == "" || p.args.dependsOnUnknown(res) {
		return word, false
	}
	if len(res.Matched)+len(res.Unmatched) > 0 {
		if _, err := reference.ParseNormalizedNamed(res.Result); err != nil {
			return word, false
		}
	}
	return res.Result, true
}

// image records an image the build reads and returns the reference to use.
func (p *planner) image(ref string) string {
	to, ok := MapImage(ref, p.imageMap)
	if ok && to != ref {
		p.plan.Mapped = append(p.plan.Mapped, ref+"="+to)
	}
	if !p.seen[to] {
		p.seen[to] = true
		p.plan.Bases = append(p.plan.Bases, to)
	}
	return to
}

func (p *planner) from(node *parser.Node) {
	if node.Next == nil {
		return
	}
	raw := node.Next.Value
	var stage string
	if as := node.Next.Next; as != nil && strings.EqualFold(as.Value, "as") && as.Next != nil {
		stage = as.Next.Value
	}
	defer func() {
		if stage != "" {
			p.stages[strings.ToLower(stage)] = true
		}
	}()
	base, ok := p.expandBase(raw)
	if !ok || strings.EqualFold(base, "scratch") || p.stages[strings.ToLower(base)] {
		return
	}
	to := p.image(base)
	if to == base {
		return
	}
	line := "FROM "
	for _, f := range node.Flags {
		line += f + " "
	}
	line += to
	if stage != "" {
		line += " AS " + stage
	}
	p.setLine(node.StartLine, line)
	for l := node.StartLine + 1; l <= node.EndLine; l++ {
		p.setLine(l, "")
	}
}

// features records BuildKit-only flags and heredocs, maps images named by
// COPY --from and RUN --mount=from, and refuses session-backed mounts.
func (p *planner) features(node *parser.Node, instr string) error {
	where := "line " + strconv.Itoa(node.StartLine)
	if len(node.Heredocs) > 0 {
		p.plan.BuildKit = append(p.plan.BuildKit, where+": "+strings.ToUpper(instr)+" heredoc")
	}
	for _, flag := range node.Flags {
		name, value, _ := strings.Cut(strings.TrimLeft(flag, "-"), "=")
		if buildkitOnly(instr, name) {
			p.plan.BuildKit = append(p.plan.BuildKit, where+": "+strings.ToUpper(instr)+" --"+name)
		}
		switch {
		case (instr == "copy" || instr == "add") && name == "from":
			if to, ok := p.fromImage(value); ok {
				p.replaceInNode(node, flag, "--from="+to)
			}
		case instr == "run" && name == "mount":
			if err := p.mount(node, flag, value, where); err != nil {
				return err
			}
		}
	}
	return nil
}

// fromImage maps a --from value that names an image (not a stage or a
// stage index); ok is false when there is nothing to rewrite.
func (p *planner) fromImage(value string) (string, bool) {
	v, ok := p.expand(value)
	if !ok || p.stages[strings.ToLower(v)] {
		return "", false
	}
	if _, err := strconv.Atoi(v); err == nil {
		return "", false
	}
	to := p.image(v)
	return to, to != v
}

func (p *planner) mount(node *parser.Node, flag, spec, where string) error {
	fields := strings.Split(spec, ",")
	changed := false
	for i, f := range fields {
		k, v, _ := strings.Cut(f, "=")
		switch strings.ToLower(k) {
		case "type":
			if v == "secret" || v == "ssh" {
				return fmt.Errorf("%w: %s: RUN --mount=type=%s needs a client session (secrets, ssh agent), which flightdeck does not provide", ErrDockerfile, where, v)
			}
		case "from":
			if to, ok := p.fromImage(v); ok {
				fields[i] = k + "=" + to
				changed = true
			}
		}
	}
	if changed {
		p.replaceInNode(node, flag, "--mount="+strings.Join(fields, ","))
	}
	return nil
}

// replaceInNode replaces the first occurrence of old in a node's lines.
func (p *planner) replaceInNode(node *parser.Node, old, new string) {
	for l := node.StartLine; l <= node.EndLine; l++ {
		if l < 1 || l > len(p.lines) {
			continue
		}
		if i := strings.Index(p.lines[l-1], old); i >= 0 {
			p.setLine(l, p.lines[l-1][:i]+new+p.lines[l-1][i+len(old):])
			return
		}
	}
}

// setLine replaces line n (1-based), keeping a trailing carriage return.
func (p *planner) setLine(n int, text string) {
	if n < 1 || n > len(p.lines) {
		return
	}
	if strings.HasSuffix(p.lines[n-1], "\r") {
		text += "\r"
	}
	p.lines[n-1] = text
	p.changed = true
}

// Instruction is one instruction of a Dockerfile as BuildKit's parser
// reads it: its name in lower case, its flags (--from=x), its arguments
// (heredocs' bodies appended) and the line it starts on.
type Instruction struct {
	Line  int
	Cmd   string
	Flags []string
	Args  []string
}

// DockerfileInstructions lists a Dockerfile's instructions, for checks of
// what it does (task verify's reproducibility and leak checks). A
// Dockerfile the parser refuses is an error wrapping ErrDockerfile.
func DockerfileInstructions(content []byte) ([]Instruction, error) {
	res, err := parser.Parse(bytes.NewReader(content))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDockerfile, err)
	}
	if err := knownInstructions(res.AST); err != nil {
		return nil, err
	}
	var out []Instruction
	for _, n := range res.AST.Children {
		in := Instruction{Line: n.StartLine, Cmd: strings.ToLower(n.Value), Flags: n.Flags}
		for a := n.Next; a != nil; a = a.Next {
			in.Args = append(in.Args, a.Value)
		}
		for _, h := range n.Heredocs {
			in.Args = append(in.Args, h.Content)
		}
		out = append(out, in)
	}
	return out, nil
}

// instructions are the Dockerfile instructions the builders know; the
// parser takes any word, and the engine refuses the build of an unknown
// one as a bad request, which would read as the engine's failure.
var instructions = map[string]bool{"from": true, "run": true, "cmd": true, "label": true, "maintainer": true, "expose": true,
	"env": true, "add": true, "copy": true, "entrypoint": true, "volume": true, "user": true, "workdir": true, "arg": true,
	"onbuild": true, "stopsignal": true, "healthcheck": true, "shell": true}

// knownInstructions refuses a Dockerfile with an instruction no builder
// knows (a typo: RUNN), naming its line: the task's defect, found before
// the engine is asked.
func knownInstructions(root *parser.Node) error {
	for _, n := range root.Children {
		if !instructions[strings.ToLower(n.Value)] {
			return fmt.Errorf("%w: line %d: unknown instruction %s (the instructions are FROM, RUN, COPY, ADD, ENV, ARG, WORKDIR, USER, CMD, ENTRYPOINT, …)",
				ErrDockerfile, n.StartLine, strings.ToUpper(n.Value))
		}
	}
	return nil
}
