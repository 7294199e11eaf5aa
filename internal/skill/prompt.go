package skill

import (
	"fmt"
	"strings"
)

// readTool is the tool the model opens skill files with.
const readTool = "read"

// Prompt is the system prompt section that lists the skills for the model:
// a heading, how to use skills, then one line per skill with its name,
// description and file, sorted by name. Skills with
// disable-model-invocation are left out. available says whether the run's
// tool policy kept a tool (nil: every tool is kept); a skill whose
// command-tool was removed is still listed, with a note that its tool is
// unavailable in this run, so the model can tell the user why the skill
// cannot work rather than fail in silence. When read itself was removed the
// section says the files cannot be opened. The result is "" when no skill
// is listed.
func (s Set) Prompt(available func(tool string) bool) string {
	has := func(tool string) bool { return available == nil || available(tool) }
	var lines []string
	for _, k := range s.skills {
		if k.DisableModelInvocation {
			continue
		}
		line := fmt.Sprintf("- %s: %s (file: %s", k.Name, oneLine(k.Description), k.Path)
		if k.Tool != "" && !has(k.Tool) {
			line += fmt.Sprintf("; its tool %s is not available in this run, so this skill cannot be carried out", k.Tool)
		}
		lines = append(lines, line+")")
	}
	if len(lines) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("## Skills\n\n")
	if has(readTool) {
		b.WriteString("Skills are written instructions for particular tasks, kept as files in your workspace. " +
			"When one skill below clearly fits the task, open its file with the read tool and follow it before you act. " +
			"If several fit, open only the most specific one; if none fits, open none.\n\n")
	} else {
		b.WriteString("Skills are written instructions for particular tasks, kept as files in your workspace. " +
			"The read tool is not available in this run, so the files cannot be opened: go by the descriptions alone.\n\n")
	}
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	return b.String()
}

// oneLine folds a description onto one line, so that no description can
// start a line of its own in the prompt.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
