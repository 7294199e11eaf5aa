package agent

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// IdentityFile is the bootstrap file that holds an agent's name, emoji,
// avatar and theme as "- Key: value" lines.
const IdentityFile = "IDENTITY.md"

// maxIdentityBytes bounds how much of IDENTITY.md is read for the identity:
// the lines that matter are short, and a huge file must not slow a listing.
const maxIdentityBytes = 64 << 10

// identityTemplate starts IDENTITY.md; AppendIdentity adds the lines.
const identityTemplate = "# IDENTITY.md\n\nEach \"- Key: value\" line sets part of your identity (Name, Emoji, Avatar, Theme); " +
	"a later line replaces an earlier one with the same key.\n\n"

// workspaceTemplates are the files a new agent workspace starts with. The
// text is Talon's own and short on purpose: every file that exists is put
// into the system prompt of every turn (see BootstrapFiles), so each says
// what it is for, which helps the model keep it, and no more. MEMORY.md,
// HEARTBEAT.md and BOOTSTRAP.md are left for the agent or its owner to
// create: an empty memory is no memory, heartbeats run only where the
// config asks for them, and a first-run script is a choice of the owner.
var workspaceTemplates = []struct{ name, text string }{
	{"AGENTS.md", "# AGENTS.md\n\nThis folder is your workspace. Its files are read into your instructions at the start of every turn: " +
		"SOUL.md (who you are), IDENTITY.md (your name and look), USER.md (who you work with), TOOLS.md (notes about your tools and setup) " +
		"and MEMORY.md (what you chose to remember). Keep them short and current: when you learn something that should outlast " +
		"this conversation, write it into the file where it belongs.\n"},
	{"SOUL.md", "# SOUL.md\n\nYour character, values and tone. Until this says more: be helpful, direct and honest, " +
		"and ask before doing anything that cannot be undone.\n"},
	{IdentityFile, identityTemplate},
	{"USER.md", "# USER.md\n\nNotes about the people you work with: names, how to address them, preferences, time zone.\n"},
	{"TOOLS.md", "# TOOLS.md\n\nNotes about your environment that your tool descriptions do not tell you: hosts, paths, conventions.\n"},
}

// SeedWorkspace writes the template files ws lacks and returns the names
// it created. It never overwrites, so pointing a new agent at an existing
// workspace keeps that workspace's files. With skip (agents.defaults.
// skipBootstrap) it writes nothing.
func SeedWorkspace(ws *os.Root, skip bool) ([]string, error) {
	if skip {
		return nil, nil
	}
	var created []string
	for _, t := range workspaceTemplates {
		ok, err := createFile(ws, t.name, t.text)
		if err != nil {
			return created, err
		}
		if ok {
			created = append(created, t.name)
		}
	}
	return created, nil
}

// createFile writes a new file, reporting false when the name is taken.
func createFile(ws *os.Root, name, text string) (bool, error) {
	f, err := ws.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("creating %s: %w", name, err)
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, fmt.Errorf("writing %s: %w", name, err)
	}
	return true, nil
}

// IdentityLine is one "- Key: value" line of IDENTITY.md.
type IdentityLine struct{ Key, Value string }

// AppendIdentity appends lines to IDENTITY.md, creating it (with its
// template heading) when missing. Values must be one line each: a line
// break would smuggle another key, or anything else, into the prompt.
func AppendIdentity(ws *os.Root, lines []IdentityLine) error {
	if len(lines) == 0 {
		return nil
	}
	var b strings.Builder
	for _, l := range lines {
		if strings.ContainsAny(l.Key+l.Value, "\r\n") {
			return fmt.Errorf("appending to %s: the %s value spans lines", IdentityFile, l.Key)
		}
		fmt.Fprintf(&b, "- %s: %s\n", l.Key, l.Value)
	}
	if _, err := createFile(ws, IdentityFile, identityTemplate); err != nil {
		return err
	}
	f, err := ws.OpenFile(IdentityFile, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("opening %s: %w", IdentityFile, err)
	}
	defer f.Close()
	text := b.String()
	// Start on a line of its own even when the file does not end with one.
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, fi.Size()-1); err == nil && last[0] != '\n' {
			text = "\n" + text
		}
	}
	if _, err := f.WriteString(text); err != nil {
		return fmt.Errorf("appending to %s: %w", IdentityFile, err)
	}
	return f.Close()
}

// Identity is what IDENTITY.md says about an agent; empty fields are unset.
type Identity struct {
	Name   string `json:"name,omitempty"`
	Theme  string `json:"theme,omitempty"`
	Emoji  string `json:"emoji,omitempty"`
	Avatar string `json:"avatar,omitempty"`
}

// ReadIdentity reads the identity from ws's IDENTITY.md (its first 64 KiB).
// A missing file is an empty identity.
func ReadIdentity(ws *os.Root) (Identity, error) {
	f, err := ws.Open(IdentityFile)
	if errors.Is(err, fs.ErrNotExist) {
		return Identity{}, nil
	}
	if err != nil {
		return Identity{}, fmt.Errorf("opening %s: %w", IdentityFile, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return Identity{}, fmt.Errorf("reading %s: not a regular file", IdentityFile)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxIdentityBytes))
	if err != nil {
		return Identity{}, fmt.Errorf("reading %s: %w", IdentityFile, err)
	}
	return ParseIdentity(string(data)), nil
}

// ParseIdentity reads "- Key: value" lines (also with "*" bullets and
// **bold** keys, as hand-written files have them). Keys are Name, Theme,
// Emoji and Avatar, in any case; the last line of a key wins, so appending
// a line changes a value. Values in parentheses, which templates use for
// "fill me in" hints, count as unset.
func ParseIdentity(text string) Identity {
	var id Identity
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		rest, ok := strings.CutPrefix(line, "- ")
		if !ok {
			if rest, ok = strings.CutPrefix(line, "* "); !ok {
				continue
			}
		}
		key, value, ok := strings.Cut(strings.ReplaceAll(rest, "**", ""), ":")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		if hint := strings.Trim(value, "_*"); value == "" || strings.HasPrefix(hint, "(") && strings.HasSuffix(hint, ")") {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(key)) {
		case "name":
			id.Name = value
		case "theme":
			id.Theme = value
		case "emoji":
			id.Emoji = value
		case "avatar":
			id.Avatar = value
		}
	}
	return id
}
