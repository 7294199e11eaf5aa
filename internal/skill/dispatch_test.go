package skill

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDispatch(t *testing.T) {
	set := fixture(t)
	args := func(command, name, skill string) json.RawMessage {
		b, err := json.Marshal(map[string]string{"command": command, "commandName": name, "skillName": skill})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := []struct {
		name string
		text string
		want *Call // nil: not a dispatch
	}{
		{"skill name", "/generate-image a cat", &Call{Skill: "generate-image", Command: "generate_image", Tool: "generate_image",
			Args: args("a cat", "generate_image", "generate-image")}},
		{"OpenClaw's command name", "/generate_image a cat", &Call{Skill: "generate-image", Command: "generate_image", Tool: "generate_image",
			Args: args("a cat", "generate_image", "generate-image")}},
		{"generic /skill form, loose spelling", "/skill Generate_Image   a cat  ", &Call{Skill: "generate-image", Command: "generate_image", Tool: "generate_image",
			Args: args("a cat", "generate_image", "generate-image")}},
		{"leading whitespace and lines kept raw", "  \n/publish-post First line\n<b>second</b> & more\n", &Call{Skill: "publish-post", Command: "publish_post", Tool: "publish_linkedin",
			Args: json.RawMessage(`{"command":"First line\n<b>second</b> & more","commandName":"publish_post","skillName":"publish-post"}`)}},
		{"no args", "/generate-image", &Call{Skill: "generate-image", Command: "generate_image", Tool: "generate_image",
			Args: args("", "generate_image", "generate-image")}},
		{"model-hidden skill is still a command", "/hidden_helper now", &Call{Skill: "hidden-helper", Command: "hidden_helper", Tool: "reset_demo",
			Args: args("now", "hidden_helper", "hidden-helper")}},
		{"unknown skill", "/paint a cat", nil},
		{"skill without dispatch", "/release-notes v1.2", nil},
		{"not user-invocable", "/sync-notes today", nil},
		{"slash alone", "/", nil},
		{"/skill alone", "/skill", nil},
		{"/skill with an unknown name", "/skill paint a cat", nil},
		{"plain text", "please /generate-image a cat", nil},
		{"empty", "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := set.Dispatch(c.text)
			if c.want == nil {
				if ok {
					t.Fatalf("Dispatch(%q) = %+v, want no dispatch", c.text, got)
				}
				return
			}
			if !ok {
				t.Fatalf("Dispatch(%q) found nothing", c.text)
			}
			if diff := cmp.Diff(*c.want, got); diff != "" {
				t.Errorf("call (-want +got):\n%s", diff)
			}
			var obj map[string]string
			if err := json.Unmarshal(got.Args, &obj); err != nil {
				t.Errorf("args are not a JSON object of strings: %v", err)
			}
		})
	}
}
