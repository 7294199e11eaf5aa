package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

const vectorsPath = "../../testdata/conformance/tool-policy/vectors.json"

// TestPolicyEvalVectors feeds every conformance vector to `talon policy
// eval` and compares its JSON output with the vector's expectations.
func TestPolicyEvalVectors(t *testing.T) {
	data, err := os.ReadFile(vectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	var vectors []json.RawMessage
	if err := json.Unmarshal(data, &vectors); err != nil {
		t.Fatal(err)
	}
	if len(vectors) != 80 {
		t.Fatalf("%d vectors, want 80", len(vectors))
	}
	for _, raw := range vectors {
		var want struct {
			ID             string          `json:"id"`
			Kind           string          `json:"kind"`
			ToolsOut       []string        `json:"tools_out"`
			Warnings       []string        `json:"warnings"`
			ExpectedPolicy json.RawMessage `json:"expected_policy"`
			ExpectedState  json.RawMessage `json:"expected_state"`
		}
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		t.Run(want.ID, func(t *testing.T) {
			out, errOut, code := talon(t, string(raw), "policy", "eval")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var got struct {
				ToolsOut []string        `json:"tools_out"`
				Warnings []string        `json:"warnings"`
				Policy   json.RawMessage `json:"policy"`
				State    json.RawMessage `json:"state"`
				Trace    []struct {
					Tool      string `json:"tool"`
					RemovedBy string `json:"removed_by"`
				} `json:"trace"`
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("output is not JSON: %v\n%s", err, out)
			}
			switch want.Kind {
			case "plugin_enable":
				var w, g struct {
					Enabled bool   `json:"enabled"`
					Reason  string `json:"reason"`
				}
				json.Unmarshal(want.ExpectedState, &w)
				json.Unmarshal(got.State, &g)
				if w != g {
					t.Errorf("state = %+v, want %+v", g, w)
				}
				return
			case "sandbox_policy":
				var w, g struct{ Allow, Deny []string }
				json.Unmarshal(want.ExpectedPolicy, &w)
				json.Unmarshal(got.Policy, &g)
				if diff := cmp.Diff(w, g, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("policy (-want +got):\n%s", diff)
				}
			}
			if diff := cmp.Diff(want.ToolsOut, got.ToolsOut, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("tools_out (-want +got):\n%s", diff)
			}
			if want.Warnings != nil {
				if diff := cmp.Diff(want.Warnings, got.Warnings); diff != "" {
					t.Errorf("warnings (-want +got):\n%s", diff)
				}
			}
			for _, tr := range got.Trace {
				if tr.Tool == "" || tr.RemovedBy == "" {
					t.Errorf("trace entry without tool or stage: %+v", tr)
				}
			}
		})
	}
}

func TestPolicyEvalBadInput(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"empty", "", "reading vector"},
		{"not json", "hello", "reading vector"},
		{"unknown field", `{"id":"x","kind":"filter","tools":[]}`, `unknown field "tools"`},
		{"unknown kind", `{"id":"x","kind":"magic"}`, "unknown kind"},
		{"bad config type", `{"id":"x","kind":"effective","config":{"tools":{"allow":"read"}}}`, "tools.allow: expected array of strings"},
		{"config not object", `{"id":"x","kind":"effective","config":[1]}`, "config"},
		{"two values", `{"id":"x","kind":"filter"} {}`, "more than one"},
		{"plugin without id", `{"id":"x","kind":"plugin_enable","context":{"origin":"bundled"}}`, "plugin_id is required"},
		{"bad origin", `{"id":"x","kind":"plugin_enable","context":{"plugin_id":"p","origin":"moon"}}`, "origin must be"},
		{"bad role", `{"id":"x","kind":"effective","context":{"session_key":"agent:a:subagent:b","subagent_role":"boss"}}`, "subagent_role must be"},
		{"bad access", `{"id":"x","kind":"effective","context":{"workspace_access":"all"}}`, "workspace_access must be"},
		{"registration without name", `{"id":"x","kind":"effective","context":{"plugin_registrations":[{"pluginId":"p"}]}}`, "name and pluginId are required"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := talon(t, c.in, "policy", "eval")
			if code != 2 {
				t.Fatalf("exit %d, want 2; stdout %q", code, out)
			}
			if out != "" {
				t.Errorf("stdout should be empty on error, got %q", out)
			}
			if !strings.Contains(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
				t.Errorf("stderr = %q, want one line containing %q", errOut, c.want)
			}
		})
	}
}

// FuzzPolicyEval: any input gives exit 0 with JSON, or exit 2 with one line
// on stderr; never a panic.
func FuzzPolicyEval(f *testing.F) {
	data, err := os.ReadFile(vectorsPath)
	if err != nil {
		f.Fatal(err)
	}
	var vectors []json.RawMessage
	if err := json.Unmarshal(data, &vectors); err != nil {
		f.Fatal(err)
	}
	for _, v := range vectors {
		f.Add(string(v))
	}
	f.Add(`{"kind":"effective","config":{"agents":{"list":[{"id":"x","tools":{"allow":["*"],"sandbox":{"tools":{"allow":[]}}}}]}},"context":{"session_key":"agent:x:subagent:a:subagent:b"}}`)
	f.Fuzz(func(t *testing.T, in string) {
		out, errOut, code := talon(t, in, "policy", "eval")
		switch code {
		case 0:
			if !json.Valid([]byte(out)) {
				t.Fatalf("exit 0 with invalid JSON: %q", out)
			}
		case 2:
			if !strings.HasPrefix(errOut, "talon: ") || strings.Count(errOut, "\n") != 1 {
				t.Fatalf("exit 2 with stderr %q", errOut)
			}
		default:
			t.Fatalf("exit %d", code)
		}
	})
}
