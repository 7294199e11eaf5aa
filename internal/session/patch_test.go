package session

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func intp(i int) *int { return &i }

const (
	mainSess = "agent:ops:main"
	subKey   = "agent:ops:subagent:abc"
)

func TestApplyPatch(t *testing.T) {
	base := Entry{SessionID: "s1", UpdatedAt: 5}
	full := Entry{
		SessionID: "s1", UpdatedAt: 5, Label: "Mine", ExecHost: "node", ExecSecurity: "full",
		ExecAsk: "always", ExecNode: "Node-1", VerboseLevel: "on", ReasoningLevel: "stream",
		ResponseUsage: "full", ElevatedLevel: "ask", SendPolicy: "deny", GroupActivation: "always",
		ThinkingLevel: "high", ModelOverride: "m",
	}
	spawned := Entry{SessionID: "s1", SpawnedBy: "agent:ops:main", SpawnDepth: intp(1)}

	cases := []struct {
		name  string
		key   string
		in    Entry
		patch string
		want  Entry
	}{
		{"empty patch", mainSess, full, `{}`, full},
		{"key is not a change", mainSess, base, `{"key":"agent:ops:main"}`, base},
		{"caller fields untouched", mainSess, full, `{"model":"x/y","thinkingLevel":"low"}`, full},
		{"label set and trimmed", mainSess, base, `{"label":"  My Chat  "}`,
			Entry{SessionID: "s1", UpdatedAt: 5, Label: "My Chat"}},
		{"label 512 units", mainSess, base, `{"label":"` + strings.Repeat("é", 512) + `"}`,
			Entry{SessionID: "s1", UpdatedAt: 5, Label: strings.Repeat("é", 512)}},
		{"exec fields lower-cased", mainSess, base,
			`{"execHost":" Gateway ","execSecurity":"ALLOWLIST","execAsk":"On-Miss","execNode":" Mac-Mini "}`,
			Entry{SessionID: "s1", UpdatedAt: 5, ExecHost: "gateway", ExecSecurity: "allowlist", ExecAsk: "on-miss", ExecNode: "Mac-Mini"}},
		{"levels", mainSess, base,
			`{"verboseLevel":"FULL","reasoningLevel":"on","responseUsage":"on","elevatedLevel":"off","sendPolicy":"Allow","groupActivation":"mention"}`,
			Entry{SessionID: "s1", UpdatedAt: 5, VerboseLevel: "full", ReasoningLevel: "on", ResponseUsage: "tokens",
				ElevatedLevel: "off", SendPolicy: "allow", GroupActivation: "mention"}},
		{"off clears reasoning and usage", mainSess, full, `{"reasoningLevel":"off","responseUsage":"OFF"}`,
			func() Entry { e := full; e.ReasoningLevel, e.ResponseUsage = "", ""; return e }()},
		{"null clears every field", mainSess, full,
			`{"label":null,"execHost":null,"execSecurity":null,"execAsk":null,"execNode":null,"verboseLevel":null,
			  "reasoningLevel":null,"responseUsage":null,"elevatedLevel":null,"sendPolicy":null,"groupActivation":null}`,
			Entry{SessionID: "s1", UpdatedAt: 5, ThinkingLevel: "high", ModelOverride: "m"}},
		{"null on unset field", mainSess, base, `{"label":null,"spawnedBy":null,"spawnDepth":null}`, base},
		{"absent untouched", mainSess, full, `{"execAsk":"off"}`,
			func() Entry { e := full; e.ExecAsk = "off"; return e }()},
		{"spawn fields on subagent", subKey, base, `{"spawnedBy":" agent:ops:main ","spawnDepth":1}`,
			Entry{SessionID: "s1", UpdatedAt: 5, SpawnedBy: "agent:ops:main", SpawnDepth: intp(1)}},
		{"spawnDepth 2.0", subKey, base, `{"spawnDepth":2.0}`, Entry{SessionID: "s1", UpdatedAt: 5, SpawnDepth: intp(2)}},
		{"spawnDepth 0", subKey, base, `{"spawnDepth":0}`, Entry{SessionID: "s1", UpdatedAt: 5, SpawnDepth: intp(0)}},
		{"same spawn values again", subKey, spawned, `{"spawnedBy":"agent:ops:main","spawnDepth":1}`, spawned},
		{"bare subagent key", "subagent:x", base, `{"spawnDepth":3}`, Entry{SessionID: "s1", UpdatedAt: 5, SpawnDepth: intp(3)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := c.in.Clone()
			got, err := ApplyPatch(c.key, c.in, json.RawMessage(c.patch))
			if err != nil {
				t.Fatalf("ApplyPatch error: %v", err)
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("entry (-want +got):\n%s", d)
			}
			if d := cmp.Diff(in, c.in); d != "" {
				t.Errorf("ApplyPatch modified its input (-before +after):\n%s", d)
			}
		})
	}
}

// §5.3: the exact INVALID_REQUEST messages.
func TestApplyPatchErrors(t *testing.T) {
	spawned := Entry{SessionID: "s1", SpawnedBy: "agent:ops:main", SpawnDepth: intp(1)}
	cases := []struct {
		name  string
		key   string
		in    Entry
		patch string
		want  string
	}{
		{"not an object", mainSess, Entry{}, `[1]`, "invalid sessions.patch params: must be an object"},
		{"null patch", mainSess, Entry{}, `null`, "invalid sessions.patch params: must be an object"},
		{"bad JSON", mainSess, Entry{}, `{`, "invalid sessions.patch params: must be an object"},
		{"unknown field", mainSess, Entry{}, `{"colour":"red"}`, `invalid sessions.patch params: unexpected property "colour"`},
		{"execHost", mainSess, Entry{}, `{"execHost":"cloud"}`, `invalid execHost (use "sandbox"|"gateway"|"node")`},
		{"execHost number", mainSess, Entry{}, `{"execHost":1}`, `invalid execHost (use "sandbox"|"gateway"|"node")`},
		{"execHost empty", mainSess, Entry{}, `{"execHost":""}`, `invalid execHost (use "sandbox"|"gateway"|"node")`},
		{"execSecurity", mainSess, Entry{}, `{"execSecurity":"yolo"}`, `invalid execSecurity (use "deny"|"allowlist"|"full")`},
		{"execAsk", mainSess, Entry{}, `{"execAsk":"sometimes"}`, `invalid execAsk (use "off"|"on-miss"|"always")`},
		{"execNode empty", mainSess, Entry{}, `{"execNode":"  "}`, "invalid execNode: empty"},
		{"execNode number", mainSess, Entry{}, `{"execNode":7}`, "invalid execNode: must be a string"},
		{"verboseLevel", mainSess, Entry{}, `{"verboseLevel":"loud"}`, `invalid verboseLevel (use "on"|"off"|"full")`},
		{"reasoningLevel", mainSess, Entry{}, `{"reasoningLevel":"deep"}`, `invalid reasoningLevel (use "on"|"off"|"stream")`},
		{"responseUsage", mainSess, Entry{}, `{"responseUsage":"all"}`, `invalid responseUsage (use "off"|"tokens"|"full")`},
		{"elevatedLevel", mainSess, Entry{}, `{"elevatedLevel":"root"}`, `invalid elevatedLevel (use "on"|"off"|"ask"|"full")`},
		{"sendPolicy", mainSess, Entry{}, `{"sendPolicy":"maybe"}`, `invalid sendPolicy (use "allow"|"deny")`},
		{"groupActivation", mainSess, Entry{}, `{"groupActivation":"never"}`, `invalid groupActivation (use "mention"|"always")`},
		{"label empty", mainSess, Entry{}, `{"label":"   "}`, "invalid label: empty"},
		{"label not string", mainSess, Entry{}, `{"label":5}`, "invalid label: must be a string"},
		{"label too long", mainSess, Entry{}, `{"label":"` + strings.Repeat("x", 513) + `"}`, "invalid label: too long (max 512)"},
		{"label too long in UTF-16", mainSess, Entry{}, `{"label":"` + strings.Repeat("😀", 257) + `"}`, "invalid label: too long (max 512)"},
		{"spawnedBy on main", mainSess, Entry{}, `{"spawnedBy":"agent:ops:main"}`, "spawnedBy is only supported for subagent:* sessions"},
		{"spawnDepth on main", mainSess, Entry{}, `{"spawnDepth":1}`, "spawnDepth is only supported for subagent:* sessions"},
		{"spawnedBy empty", subKey, Entry{}, `{"spawnedBy":" "}`, "invalid spawnedBy: empty"},
		{"spawnedBy not string", subKey, Entry{}, `{"spawnedBy":{}}`, "invalid spawnedBy: must be a string"},
		{"spawnDepth negative", subKey, Entry{}, `{"spawnDepth":-1}`, "invalid spawnDepth (use an integer >= 0)"},
		{"spawnDepth fraction", subKey, Entry{}, `{"spawnDepth":1.5}`, "invalid spawnDepth (use an integer >= 0)"},
		{"spawnDepth string", subKey, Entry{}, `{"spawnDepth":"1"}`, "invalid spawnDepth (use an integer >= 0)"},
		{"spawnDepth huge", subKey, Entry{}, `{"spawnDepth":1e300}`, "invalid spawnDepth (use an integer >= 0)"},
		{"spawnedBy changed", subKey, spawned, `{"spawnedBy":"agent:ops:other"}`, "spawnedBy cannot be changed once set"},
		{"spawnedBy cleared", subKey, spawned, `{"spawnedBy":null}`, "spawnedBy cannot be cleared once set"},
		{"spawnDepth changed", subKey, spawned, `{"spawnDepth":2}`, "spawnDepth cannot be changed once set"},
		{"spawnDepth cleared", subKey, spawned, `{"spawnDepth":null}`, "spawnDepth cannot be cleared once set"},
		{"first failing field in OpenClaw's order", mainSess, Entry{}, `{"execAsk":"x","label":""}`, "invalid label: empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ApplyPatch(c.key, c.in, json.RawMessage(c.patch))
			if err == nil {
				t.Fatalf("ApplyPatch = %+v, want error %q", got, c.want)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Errorf("error %T is not a *ValidationError", err)
			}
			if err.Error() != c.want {
				t.Errorf("error = %q\nwant    %q", err, c.want)
			}
		})
	}
}

func TestPatchSets(t *testing.T) {
	p, err := ParsePatch(json.RawMessage(`{"label":null,"execHost":"node"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		field string
		want  bool
	}{{"label", true}, {"execHost", true}, {"execAsk", false}} {
		if got := p.Sets(c.field); got != c.want {
			t.Errorf("Sets(%q) = %v, want %v", c.field, got, c.want)
		}
	}
}
