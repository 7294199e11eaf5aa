package skill

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode"
)

// Call is a user's slash command that runs a skill's tool directly,
// without asking the model.
type Call struct {
	Skill   string // the skill's name
	Command string // the skill's command, without "/"
	Tool    string // the tool to run
	// Args is the tool's argument object, as OpenClaw passes it:
	// {"command": "<the text after the command>", "commandName": "<command>",
	// "skillName": "<skill>"}.
	Args json.RawMessage
}

// dispatchArgs is the argument object of a dispatched tool call; the field
// names are OpenClaw's.
type dispatchArgs struct {
	Command     string `json:"command"`
	CommandName string `json:"commandName"`
	SkillName   string `json:"skillName"`
}

// Dispatch recognises a user message that invokes a skill's tool: the
// message, leading and trailing space aside, is "/<skill> args" or
// "/skill <skill> args", where <skill> is the skill's command
// ("generate_image"), its name ("generate-image"), or either with "_",
// "-" and spaces mixed up, in any case; the skill is user-invocable and has
// command-dispatch: tool. The args are passed raw, trimmed. Anything else
// (plain text, an unknown skill, a skill the model carries out) is false:
// the message goes to the model as it is. The caller must still put the
// call through the run's tool policy.
func (s Set) Dispatch(text string) (Call, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(text), "/")
	if !ok {
		return Call{}, false
	}
	name, args := cutWord(rest)
	if strings.EqualFold(name, "skill") {
		name, args = cutWord(args)
	}
	k, ok := s.command(name)
	if !ok || !k.UserInvocable || k.Tool == "" {
		return Call{}, false
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // keep "<" and "&" readable in transcripts
	if err := enc.Encode(dispatchArgs{Command: args, CommandName: k.Command, SkillName: k.Name}); err != nil {
		return Call{}, false // strings always encode; kept for safety
	}
	return Call{Skill: k.Name, Command: k.Command, Tool: k.Tool, Args: bytes.TrimSpace(b.Bytes())}, true
}

// command finds the skill a slash command names.
func (s Set) command(name string) (Skill, bool) {
	if name == "" {
		return Skill{}, false
	}
	// Exact matches first, so that a command made unique ("x_2") is never
	// taken for another skill's name spelled loosely.
	lower := strings.ToLower(name)
	for _, k := range s.skills {
		if k.Command == lower || k.Name == lower {
			return k, true
		}
	}
	want := normalize(name)
	for _, k := range s.skills {
		if normalize(k.Command) == want || normalize(k.Name) == want {
			return k, true
		}
	}
	return Skill{}, false
}

// normalize lower-cases a command and makes "_", "-" and spaces alike.
func normalize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || unicode.IsSpace(r) {
			return '-'
		}
		return unicode.ToLower(r)
	}, s)
}

// cutWord splits s at its first run of white space, trimming both parts.
func cutWord(s string) (word, rest string) {
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	i := strings.IndexFunc(s, unicode.IsSpace)
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimSpace(s[i:])
}
