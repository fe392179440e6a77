package aidlc

import (
	_ "embed"
	"fmt"
	"sort"
	"strings"

	"github.com/flightdeck/flightdeck/tasks"
)

// Image is ai-dlc's digest-pinned Python image, the FROM of every imported
// task's Dockerfile. Offline, a suite's images map sends it (or its bare
// name, python:3.12-slim) to flightdeck/base:bookworm.
const Image = "python:3.12-slim@sha256:78387bc3881b8273120a12ebe6c1ab22b018ccc2c9adf565ae1ac9b536e184ea"

// Fixed task settings: Harbor's defaults, and flightdeck's grader command.
const (
	verifierTimeoutSec = 600.0
	buildTimeoutSec    = 600.0
	graderCommand      = "bash tests/test.sh"
)

// testScript is the generic tests/test.sh every imported task gets.
//
//go:embed test.sh
var testScript []byte

// renderDockerfile is environment/Dockerfile: the fixture copied into the
// image's working directory.
func renderDockerfile() string {
	return "# ai-dlc's digest-pinned Python image. With no registry, map it (or its bare\n" +
		"# name) to flightdeck/base:bookworm in the suite's images: (docs/aidlc.md).\n" +
		"FROM " + Image + "\n" +
		"WORKDIR /workspace\n" +
		"COPY workspace/ ./\n"
}

// renderInstruction is instruction.md: the scenario's goal, verbatim, with
// a final newline.
func renderInstruction(sc Scenario) string {
	if strings.HasSuffix(sc.Goal, "\n") {
		return sc.Goal
	}
	return sc.Goal + "\n"
}

// taskDescription is [task].description: the scenario's description, else
// the goal's first line.
func taskDescription(sc Scenario) string {
	if sc.Description != "" {
		return oneLine(sc.Description, 200)
	}
	for _, line := range strings.Split(sc.Goal, "\n") {
		line = strings.TrimSpace(strings.TrimLeft(line, "# "))
		if line != "" {
			return oneLine(line, 200)
		}
	}
	return sc.ID
}

// renderTaskTOML is task.toml. Harbor's keys stay in Harbor's tables;
// answers, max_turns and the grader live under [flightdeck], which Harbor
// ignores.
func renderTaskTOML(suiteID string, sc Scenario, filesDigest string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Imported from ai-dlc suite %s, scenario %s, by flightdeck task import-aidlc.\n", suiteID, sc.ID)
	b.WriteString("schema_version = \"1.4\"\n\n")
	b.WriteString("[task]\n")
	fmt.Fprintf(&b, "name = %s\n", tasks.QuoteTOMLString("aidlc/"+sc.ID))
	fmt.Fprintf(&b, "description = %s\n\n", tasks.QuoteTOMLString(taskDescription(sc)))
	if len(sc.Metadata) > 0 {
		b.WriteString("[metadata]\n")
		keys := make([]string, 0, len(sc.Metadata))
		for k := range sc.Metadata {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			switch v := sc.Metadata[k].(type) {
			case string:
				fmt.Fprintf(&b, "%s = %s\n", k, tasks.QuoteTOMLString(v))
			case bool:
				fmt.Fprintf(&b, "%s = %t\n", k, v)
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("[agent]\n")
	fmt.Fprintf(&b, "timeout_sec = %s  # ai-dlc limits.timeout_sec\n\n", tomlFloat(sc.Limits.TimeoutSec))
	b.WriteString("[verifier]\n")
	fmt.Fprintf(&b, "timeout_sec = %s\n\n", tomlFloat(verifierTimeoutSec))
	b.WriteString("[environment]\n")
	fmt.Fprintf(&b, "build_timeout_sec = %s\ncpus = 1\nmemory_mb = 2048\n\n", tomlFloat(buildTimeoutSec))
	b.WriteString("[flightdeck]\n")
	fmt.Fprintf(&b, "tags = [%s, %s]\n", tasks.QuoteTOMLString("aidlc"), tasks.QuoteTOMLString(suiteID))
	b.WriteString("sealed = false\n")
	b.WriteString("environment = \"bare\"\n")
	fmt.Fprintf(&b, "max_turns = %d  # ai-dlc limits.max_turns\n", sc.Limits.MaxTurns)
	if len(sc.Answers) > 0 {
		b.WriteString("\n[flightdeck.agent]\n")
		b.WriteString("# A question that contains match (ignoring case) gets reply; any other question is needs-input.\n")
		b.WriteString("answers = [\n")
		for _, a := range sc.Answers {
			fmt.Fprintf(&b, "  {match = %s, reply = %s},\n", tasks.QuoteTOMLString(a.Match), tasks.QuoteTOMLString(a.Reply))
		}
		b.WriteString("]\n")
	}
	b.WriteString("\n[flightdeck.grader]\n")
	fmt.Fprintf(&b, "command = %s\n", tasks.QuoteTOMLString(graderCommand))
	fmt.Fprintf(&b, "files_digest = %s\n", tasks.QuoteTOMLString(filesDigest))
	return b.String()
}

// renderSpecs is specs/<scenario>.yaml.
func renderSpecs(suiteID, scenarioID string, specs []spec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Behaviour specs of scenario %s (ai-dlc suite %s), written by\n", scenarioID, suiteID)
	b.WriteString("# flightdeck task import-aidlc. Workflow specs apply to the treatment arm only,\n")
	b.WriteString("# as ai-dlc judged them.\n")
	b.WriteString("specs:\n")
	for _, s := range specs {
		fmt.Fprintf(&b, "  - id: %s\n", yamlString(s.ID))
		fmt.Fprintf(&b, "    description: %s\n", yamlString(s.Description))
		if s.Variant != "" {
			fmt.Fprintf(&b, "    applies_when: {task_id: %s, variant: %s}\n", yamlString(s.TaskID), yamlString(s.Variant))
		} else {
			fmt.Fprintf(&b, "    applies_when: {task_id: %s}\n", yamlString(s.TaskID))
		}
		if s.Assert != "" {
			fmt.Fprintf(&b, "    assert: %s\n", s.Assert)
		} else {
			fmt.Fprintf(&b, "    pending: %s\n", yamlString(s.Pending))
		}
	}
	return b.String()
}

// renderSuiteYAML is suite.yaml: the scenarios as tasks, the arms as empty
// variants for the user to fill.
func renderSuiteYAML(s *Suite, withSpecs bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# ai-dlc suite %s, imported by flightdeck task import-aidlc (docs/aidlc.md).\n", s.ID)
	b.WriteString(commentLines(s.Description, 76))
	b.WriteString(`#
# The variants are ai-dlc's arms, left empty for you to fill: treatment is
# the agent with ai-dlc, baseline the same agent without it (the hangar
# overlay, or the command, that makes each arm what ai-dlc meant). Running an
# empty variant is an error that names it. For example:
#   treatment: {agent: command, command: "my-agent --aidlc --instruction-file /flightdeck/instruction.md"}
#   baseline:  {agent: command, command: "my-agent --instruction-file /flightdeck/instruction.md"}
# Workflow specs in specs/ apply to treatment only, as ai-dlc judged them.
#
# The tasks build FROM ai-dlc's digest-pinned Python image. With no registry,
# map it to the offline base image (flightdeck images base builds it):
`)
	fmt.Fprintf(&b, "#   images: {%q: flightdeck/base:bookworm}\n", Image)
	fmt.Fprintf(&b, "name: %s\n", yamlString(s.ID))
	b.WriteString("tasks:\n")
	for _, sc := range s.Scenarios {
		fmt.Fprintf(&b, "  - %s\n", yamlString(sc.ID))
	}
	b.WriteString("variants:\n")
	b.WriteString("  treatment: {}\n")
	b.WriteString("  baseline: {}\n")
	if withSpecs {
		b.WriteString("specs: [specs/]\n")
	}
	return b.String()
}
