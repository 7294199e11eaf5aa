package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"talon/internal/provider"
)

// BootstrapFiles are read from the workspace into the system prompt, in
// this order. BOOTSTRAP.md is added only on a session's first run.
var BootstrapFiles = []string{"AGENTS.md", "SOUL.md", "IDENTITY.md", "TOOLS.md", "USER.md", "MEMORY.md", "HEARTBEAT.md"}

// FirstRunFile is the bootstrap file for a session's first run.
const FirstRunFile = "BOOTSTRAP.md"

// DefaultBootstrapMaxChars caps each bootstrap file in the prompt, as
// agents.defaults.bootstrapMaxChars does.
const DefaultBootstrapMaxChars = 20000

// promptInput is everything the system prompt is made of.
type promptInput struct {
	root     *os.Root
	firstRun bool
	maxChars int
	extra    string // system/developer text from the request
	tools    []provider.ToolSpec
	agentID  string
	sandbox  string // where the run works, when sandboxed
	// skills is the skill list section, skill.Set.Prompt's output: a
	// complete "## Skills" section, or "" for none.
	skills string
	// files reads the bootstrap files; nil reads them from disk.
	files *fileCache
}

// buildPrompt assembles the system prompt in OpenClaw's order: identity
// line, where the run works, the tool summary, the skill list, then each
// bootstrap file that exists (capped, truncation marked) and the caller's
// extra instructions. Tools and skills come before the workspace files so
// that the files, which the agent's owner writes, can refer to both.
// Unreadable files are skipped and reported.
func buildPrompt(in promptInput) (string, []string) {
	var b strings.Builder
	var problems []string
	// Sized once, and no fmt: the prompt is built on every turn and runs
	// to kilobytes, mostly tool lines and files.
	b.Grow(promptSize(&in))
	b.WriteString("You are agent " + strconv.Quote(in.agentID) + ", running in Talon.\n")
	if in.sandbox != "" {
		b.WriteString(in.sandbox + "\n")
	}
	if len(in.tools) > 0 {
		b.WriteString("\n## Tools\n\nYou can call these tools:\n")
		for _, t := range in.tools {
			b.WriteString("- " + t.Name + ": " + firstLine(t.Description) + "\n")
		}
	}
	if sk := strings.TrimSpace(in.skills); sk != "" {
		b.WriteString("\n" + sk + "\n")
	}
	files := BootstrapFiles
	if in.firstRun {
		files = append(files[:len(files):len(files)], FirstRunFile)
	}
	for _, name := range files {
		if in.root == nil {
			break
		}
		text, err := in.files.read(in.root, name)
		if err != nil {
			if !isNotExist(err) {
				problems = append(problems, fmt.Sprintf("reading %s: %v", name, err))
			}
			continue
		}
		if text == "" {
			continue
		}
		b.WriteString("\n## " + name + "\n\n")
		b.WriteString(capText(text, in.maxChars))
		b.WriteString("\n")
	}
	if x := strings.TrimSpace(in.extra); x != "" {
		b.WriteString("\n## Instructions from the caller\n\n" + x + "\n")
	}
	return b.String(), problems
}

// promptSize guesses the prompt's length before its files are read.
func promptSize(in *promptInput) int {
	n := 1024 + len(in.sandbox) + len(in.skills) + len(in.extra)
	for _, t := range in.tools {
		n += len(t.Name) + min(len(t.Description), 256)
	}
	return n + 4096 // the bootstrap files, as the templates start them
}

// capText keeps the first max characters and says how many it dropped.
func capText(s string, max int) string {
	if max <= 0 || utf8.RuneCountInString(s) <= max {
		return s
	}
	runes := []rune(s)
	return string(runes[:max]) + fmt.Sprintf("\n[…truncated: %d more characters]", len(runes)-max)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
