package skill

import (
	"encoding/json"
	"fmt"
)

// Limits on what a workspace may declare. They keep a careless or hostile
// workspace from making every run slow or its prompt huge.
const (
	MaxFileSize       = 256 << 10 // bytes of one SKILL.md
	MaxFrontmatter    = 16 << 10  // bytes of its frontmatter
	MaxSkills         = 200       // skills loaded per workspace
	MaxNameLen        = 64        // AgentSkills' limit on a skill name
	MaxDescriptionLen = 1024      // AgentSkills' limit, in characters
)

// FileName is the file that makes a directory under skills/ a skill.
const FileName = "SKILL.md"

// Dir is the workspace directory that holds the skills.
const Dir = "skills"

// Skill is one loaded skill.
type Skill struct {
	Name        string
	Description string
	// Path is the file, relative to the workspace with forward slashes
	// (skills/<dir>/SKILL.md): what the model passes to the read tool.
	Path string
	// Command is the slash command (without "/") that invokes the skill:
	// the name with "-" turned into "_" as OpenClaw does, cut to 32
	// characters, with "_2", "_3", … added when two skills would share it.
	Command                string
	Emoji                  string
	UserInvocable          bool
	DisableModelInvocation bool
	// Tool is the tool a "/name args" message calls directly
	// (command-dispatch: tool); empty for a skill the model carries out.
	Tool string
	// Metadata is the frontmatter's metadata object as JSON, or nil.
	Metadata json.RawMessage
}

// Warning says why a skill was left out (or, with Line 0 and no skill
// behind it, what else in skills/ was not understood).
type Warning struct {
	Path   string // relative to the workspace, e.g. skills/x/SKILL.md
	Line   int    // 1-based line in Path; 0 when not tied to a line
	Reason string
}

func (w Warning) Error() string {
	if w.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", w.Path, w.Line, w.Reason)
	}
	return fmt.Sprintf("%s: %s", w.Path, w.Reason)
}

func (w Warning) String() string { return w.Error() }
