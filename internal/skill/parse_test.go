package skill

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const file = "skills/demo/SKILL.md"

func TestParse(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want Skill  // when ok
		line int    // when failing: the line the warning names
		err  string // when failing: part of the reason
	}{
		{name: "good skill", in: "---\nname: demo\ndescription: Does the demo.\n---\n# body\n",
			want: Skill{Name: "demo", Description: "Does the demo.", UserInvocable: true}},
		{name: "seed form: dispatch inside metadata.openclaw",
			in: "---\nname: generate-image\ndescription: Draw.\nmetadata: {\"openclaw\":{\"command-dispatch\":\"tool\",\"command-tool\":\"generate_image\"}}\n---\n",
			want: Skill{Name: "generate-image", Description: "Draw.", UserInvocable: true, Tool: "generate_image",
				Metadata: json.RawMessage(`{"openclaw":{"command-dispatch":"tool","command-tool":"generate_image"}}`)}},
		{name: "OpenClaw form: dispatch at the top level", in: "---\nname: demo\ndescription: d\ncommand-dispatch: tool\ncommand-tool: exec\ncommand-arg-mode: raw\n---\n",
			want: Skill{Name: "demo", Description: "d", UserInvocable: true, Tool: "exec"}},
		{name: "underscore spelling and both places agreeing",
			in:   "---\nname: demo\ndescription: d\ncommand_dispatch: TOOL\ncommand_tool: exec\nmetadata: {openclaw: {command-tool: exec}}\n---\n",
			want: Skill{Name: "demo", Description: "d", UserInvocable: true, Tool: "exec", Metadata: json.RawMessage(`{"openclaw":{"command-tool":"exec"}}`)}},
		{name: "block metadata with trailing commas, legacy clawdbot, emoji",
			in:   "---\nname: demo\ndescription: d\nmetadata:\n  {\n    \"clawdbot\": { \"emoji\": \"🎨\", \"requires\": { \"bins\": [\"uv\"] }, },\n  }\n---\n",
			want: Skill{Name: "demo", Description: "d", UserInvocable: true, Emoji: "🎨", Metadata: json.RawMessage(`{"clawdbot":{"emoji":"🎨","requires":{"bins":["uv"]}}}`)}},
		{name: "metadata as a quoted JSON string", in: "---\nname: demo\ndescription: d\nmetadata: '{\"openclaw\":{\"emoji\":\"x\"}}'\n---\n",
			want: Skill{Name: "demo", Description: "d", UserInvocable: true, Emoji: "x", Metadata: json.RawMessage(`{"openclaw":{"emoji":"x"}}`)}},
		{name: "name falls back to the directory", in: "---\ndescription: d\n---\n",
			want: Skill{Name: "demo", Description: "d", UserInvocable: true}},
		{name: "flags, CRLF and a byte-order mark", in: "\uFEFF---\r\nname: demo\r\ndescription: d\r\nuser-invocable: false\r\ndisable-model-invocation: true\r\n---\r\n",
			want: Skill{Name: "demo", Description: "d", DisableModelInvocation: true}},
		{name: "unknown keys are ignored", in: "---\nname: demo\ndescription: d\nlicense: MIT\nread_when: [a, b]\n---\n",
			want: Skill{Name: "demo", Description: "d", UserInvocable: true}},

		{name: "missing frontmatter", in: "# just markdown\n", line: 1, err: "no frontmatter"},
		{name: "empty file", in: "", line: 1, err: "no frontmatter"},
		{name: "unclosed frontmatter", in: "---\nname: demo\n", line: 1, err: "not closed"},
		{name: "bad YAML names its line", in: "---\nname: demo\ndescription: d\nmetadata: {\"openclaw\": [\n---\n", line: 4, err: "not valid YAML"},
		{name: "duplicate key", in: "---\nname: demo\ndescription: d\nname: other\n---\n", line: 4, err: "already defined"},
		{name: "wrong type", in: "---\nname: demo\ndescription: d\nuser-invocable: yes\n---\n", line: 4, err: `user-invocable must be true or false, not "yes"`},
		{name: "list for a string", in: "---\nname: demo\ndescription:\n  - a\n---\n", line: 4, err: "description must be text"},
		{name: "frontmatter that is a list", in: "---\n- a\n---\n", line: 2, err: "not valid YAML"},
		{name: "alias", in: "---\nname: &n demo\ndescription: *n\n---\n", line: 3, err: "aliases"},
		{name: "missing description", in: "---\nname: demo\n---\n", err: "description is missing"},
		{name: "description too long", in: "---\nname: demo\ndescription: " + strings.Repeat("é", MaxDescriptionLen+1) + "\n---\n", line: 3, err: "1025 characters"},
		{name: "bad name", in: "---\nname: Demo_Skill\ndescription: d\n---\n", line: 2, err: `name "Demo_Skill" is not lower-case`},
		{name: "name too long", in: "---\nname: " + strings.Repeat("a", MaxNameLen+1) + "\ndescription: d\n---\n", line: 2, err: "65 characters"},
		{name: "metadata not JSON", in: "---\nname: demo\ndescription: d\nmetadata: '{openclaw: nope'\n---\n", line: 4, err: "metadata must be a JSON object"},
		{name: "metadata a list", in: "---\nname: demo\ndescription: d\nmetadata: [1]\n---\n", line: 4, err: "not a list"},
		{name: "metadata.openclaw not an object", in: "---\nname: demo\ndescription: d\nmetadata: {openclaw: 3}\n---\n", line: 4, err: "metadata.openclaw must be a JSON object"},
		{name: "dispatch other than tool", in: "---\nname: demo\ndescription: d\ncommand-dispatch: prompt\ncommand-tool: exec\n---\n", line: 4, err: `the only dispatch is "tool"`},
		{name: "dispatch to an invalid tool", in: "---\nname: demo\ndescription: d\ncommand-dispatch: tool\ncommand-tool: Generate-Image\n---\n", line: 5, err: "is not a tool name"},
		{name: "dispatch without a tool", in: "---\nname: demo\ndescription: d\nmetadata: {\"openclaw\":{\"command-dispatch\":\"tool\"}}\n---\n", line: 4, err: "command-tool, the tool to call, is missing"},
		{name: "tool without dispatch", in: "---\nname: demo\ndescription: d\ncommand-tool: exec\n---\n", line: 4, err: "command-dispatch is not"},
		{name: "places disagree", in: "---\nname: demo\ndescription: d\ncommand-dispatch: tool\ncommand-tool: exec\nmetadata: {\"openclaw\":{\"command-tool\":\"read\"}}\n---\n", line: 6, err: "give it once"},
		{name: "arg mode other than raw", in: "---\nname: demo\ndescription: d\ncommand-dispatch: tool\ncommand-tool: exec\ncommand-arg-mode: parsed\n---\n", line: 6, err: `only argument mode is "raw"`},
		{name: "too big", in: "---\nname: demo\ndescription: d\n---\n" + strings.Repeat("x", MaxFileSize), err: "more than the 262144 allowed"},
		{name: "frontmatter too big", in: "---\nname: demo\ndescription: d\nlicense: " + strings.Repeat("x", MaxFrontmatter) + "\n---\n", line: 1, err: "more than the 16384 allowed"},
		{name: "brackets nested too deep", in: "---\nname: demo\ndescription: d\nmetadata: {\"a\": " + strings.Repeat("[", 10) + strings.Repeat("]", 10) + "}\n---\n", line: 4, err: "more than 10 deep"},
		{name: "not UTF-8", in: "---\nname: demo\ndescription: \xff\n---\n", err: "not UTF-8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Parse(file, []byte(c.in))
			if c.err != "" {
				w, ok := err.(Warning)
				if !ok {
					t.Fatalf("Parse = %+v, %v; want a Warning containing %q", got, err, c.err)
				}
				if !strings.Contains(w.Reason, c.err) || w.Line != c.line || w.Path != file {
					t.Fatalf("warning %q (line %d, path %s); want reason containing %q at line %d", w.Reason, w.Line, w.Path, c.err, c.line)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.want.Path = file
			c.want.Command = strings.ReplaceAll(c.want.Name, "-", "_")
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("skill (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWarningText(t *testing.T) {
	if got := (Warning{Path: file, Line: 3, Reason: "bad"}).Error(); got != "skills/demo/SKILL.md:3: bad" {
		t.Errorf("with a line: %q", got)
	}
	if got := (Warning{Path: file, Reason: "bad"}).Error(); got != "skills/demo/SKILL.md: bad" {
		t.Errorf("without a line: %q", got)
	}
}

func TestCommandName(t *testing.T) {
	for in, want := range map[string]string{
		"generate-image":          "generate_image",
		"a--b__c":                 "a_b_c",
		"Hello World!":            "hello_world",
		"---":                     "skill",
		strings.Repeat("ab-", 20): strings.Repeat("ab_", 11)[:32],
	} {
		if got := commandName(in); got != want {
			t.Errorf("commandName(%q) = %q, want %q", in, got, want)
		}
	}
}
