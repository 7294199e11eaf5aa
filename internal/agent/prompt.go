package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"talon/internal/llm"
)

// BootstrapFiles are read from the workspace into the system prompt, in
// this order. BOOTSTRAP.md is added only on a session's first run.
var BootstrapFiles = []string{"AGENTS.md", "SOUL.md", "IDENTITY.md", "TOOLS.md", "USER.md", "MEMORY.md", HeartbeatFile}

// HeartbeatFile is an agent's heartbeat checklist.
const HeartbeatFile = "HEARTBEAT.md"

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
	tools    []llm.ToolSpec
	agentID  string
	sandbox  string // where the run works, when sandboxed
	// skills is the skill list section, skill.Set.Prompt's output: a
	// complete "## Skills" section, or "" for none.
	skills string
	// heartbeat says the agent runs scheduled heartbeats: only then is
	// its HEARTBEAT.md part of the prompt (spec automation.md R9.3).
	// light leaves out the other workspace files (lightContext).
	heartbeat, light bool
	// files reads the bootstrap files; nil reads them from disk.
	files *fileCache
	// memo keeps built prompts; nil builds every time.
	memo *promptMemo
}

// buildPrompt assembles the system prompt in OpenClaw's order: identity
// line, where the run works, the tool summary, the skill list, then each
// bootstrap file that exists (capped, truncation marked) and the caller's
// extra instructions. Tools and skills come before the workspace files so
// that the files, which the agent's owner writes, can refer to both.
// Unreadable files are skipped and reported.
func buildPrompt(in promptInput) (string, []string) {
	names := BootstrapFiles
	if in.firstRun {
		names = append(names[:len(names):len(names)], FirstRunFile)
	}
	var problems []string
	texts := make([]string, len(names))
	var dir dirStamp
	for i, name := range names {
		if in.root == nil {
			break
		}
		if name == HeartbeatFile && !in.heartbeat || name != HeartbeatFile && in.light {
			continue
		}
		text, err := in.files.read(in.root, name, &dir)
		if err != nil && !isNotExist(err) {
			problems = append(problems, fmt.Sprintf("reading %s: %v", name, err))
		}
		texts[i] = text
	}
	if p, ok := in.memo.get(&in, texts); ok {
		return p, problems
	}
	p := assemblePrompt(&in, names, texts)
	in.memo.put(&in, texts, p)
	return p, problems
}

// assemblePrompt writes the prompt of buildPrompt, given the texts of the
// bootstrap files names ("" for a missing one).
func assemblePrompt(in *promptInput, names, texts []string) string {
	var b strings.Builder
	// Sized once, and no fmt: the prompt runs to kilobytes, mostly tool
	// lines and files.
	b.Grow(promptSize(in))
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
	for i, text := range texts {
		if text == "" {
			continue
		}
		b.WriteString("\n## " + names[i] + "\n\n")
		b.WriteString(capText(text, in.maxChars))
		b.WriteString("\n")
	}
	if x := strings.TrimSpace(in.extra); x != "" {
		b.WriteString("\n## Instructions from the caller\n\n" + x + "\n")
	}
	return b.String()
}

// promptMemo keeps the last prompt built for each agent with what it was
// built from. A turn's prompt is nearly always its agent's previous one:
// comparing the parts, rather than writing kilobytes again, spares the
// turn the copy and the garbage. Every part is compared, so a change in
// any of them (a file, a tool, the caller's text) builds the prompt anew.
// A nil memo builds every time.
type promptMemo struct {
	mu sync.Mutex
	m  map[string]*builtPrompt
}

type builtPrompt struct {
	in    promptInput // its root, files and memo unused
	texts []string
	out   string
}

// maxMemoPrompts bounds the memo: a config's agents, many times over.
const maxMemoPrompts = 256

func (m *promptMemo) get(in *promptInput, texts []string) (string, bool) {
	if m == nil {
		return "", false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.m[in.agentID]
	if b == nil || !samePromptInput(&b.in, in) || !slices.Equal(b.texts, texts) {
		return "", false
	}
	return b.out, true
}

func (m *promptMemo) put(in *promptInput, texts []string, out string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil || len(m.m) >= maxMemoPrompts {
		m.m = map[string]*builtPrompt{}
	}
	kept := *in
	kept.tools = slices.Clone(in.tools) // the caller's slice may grow in place
	m.m[in.agentID] = &builtPrompt{in: kept, texts: texts, out: out}
}

// samePromptInput compares what assemblePrompt reads of two inputs.
func samePromptInput(a, b *promptInput) bool {
	if a.firstRun != b.firstRun || a.maxChars != b.maxChars || a.extra != b.extra || a.agentID != b.agentID ||
		a.sandbox != b.sandbox || a.skills != b.skills || len(a.tools) != len(b.tools) {
		return false
	}
	for i := range a.tools {
		if a.tools[i].Name != b.tools[i].Name || a.tools[i].Description != b.tools[i].Description {
			return false
		}
	}
	return true
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
