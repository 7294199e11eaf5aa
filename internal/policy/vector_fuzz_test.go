package policy

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzVector feeds any input to ParseVector and EvalVector, the code of
// `talon policy eval`. Errors name the step that failed. An evaluation is
// deterministic, keeps the tools it is given in their order (filter and
// sandbox_policy place every tool either in tools_out or in the trace),
// and the vector, encoded again, evaluates the same.
func FuzzVector(f *testing.F) {
	for _, v := range loadVectors(f) {
		f.Add([]byte(v))
	}
	for _, s := range []string{
		`{"id":"x","kind":"filter","config":{"allow":["read","group:fs","*"],"deny":["exec"]},"tools_in":["read","exec","Write","bash"]}`,
		`{"id":"x","kind":"sandbox_policy","context":{"agent_id":"ops"},"config":{"tools":{"sandbox":{"tools":{"allow":[],"deny":["browser"]}}}},"tools_in":["image","browser","read"]}`,
		`{"id":"x","kind":"plugin_enable","context":{"plugin_id":"p","origin":"workspace"},"config":{"plugins":{"entries":{"p":{"enabled":true}}}}}`,
		`{"id":"x","kind":"effective","context":{"session_key":"agent:main:subagent:A","session_store":{"AGENT:MAIN:SUBAGENT:A":{"spawnDepth":2},"agent:main:subagent:a":{"spawnDepth":1}}},"config":{"agents":{"defaults":{"subagents":{"maxSpawnDepth":2}}}},"tools_in":["read","sessions_spawn","subagents"]}`,
		`{"id":"x","kind":"effective","context":{"session_key":"agent:x:subagent:a:subagent:b","plugin_tools":{"t":"p"},"owner_only_tools":["read"],"plugin_registrations":[{"pluginId":"p","name":"t","optional":true,"origin":"bundled"}]},"config":{"agents":{"list":[{"id":"x","tools":{"allow":["*"],"sandbox":{"tools":{"allow":[]}}}}]}},"tools_in":["t","read","exec"]}`,
		`{"id":"x","kind":"magic"}`, `{"id":"x","kind":"filter","tools":[]}`, `{"kind":"effective","config":[1]}`, `{} {}`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := ParseVector(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "reading vector") {
				t.Fatalf("ParseVector error %q does not say it was reading the vector", err)
			}
			return
		}
		res, err := EvalVector(v)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "vector ") {
				t.Fatalf("EvalVector error %q does not name the vector", err)
			}
			return
		}
		if res.ToolsOut == nil || res.Warnings == nil || res.Trace == nil {
			t.Fatal("a result with a nil list (printed as null)")
		}
		if _, err := json.Marshal(res); err != nil {
			t.Fatalf("result does not encode: %v", err)
		}
		for range 3 { // map order varies from one evaluation to the next
			again, err := EvalVector(v)
			if err != nil {
				t.Fatalf("evaluation failed the next time: %v", err)
			}
			if d := cmp.Diff(res, again); d != "" {
				t.Fatalf("evaluation is not deterministic (-first +next):\n%s", d)
			}
		}
		// Registered plugin tools join the candidates after tools_in.
		candidates := slices.Clone(v.ToolsIn)
		for _, r := range v.Context.PluginRegistrations {
			candidates = append(candidates, r.Name)
		}
		if !isSubsequence(res.ToolsOut, candidates) {
			t.Fatalf("tools_out %q is not drawn in order from the candidates %q", res.ToolsOut, candidates)
		}
		if v.Kind == KindFilter || v.Kind == KindSandboxPolicy {
			if len(res.ToolsOut)+len(res.Trace) != len(v.ToolsIn) {
				t.Fatalf("%d in, %d out and %d removed", len(v.ToolsIn), len(res.ToolsOut), len(res.Trace))
			}
		}

		enc, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("vector does not encode: %v", err)
		}
		v2, err := ParseVector(enc)
		if err != nil {
			t.Fatalf("encoded vector does not parse: %v\n%s", err, enc)
		}
		res2, err := EvalVector(v2)
		if err != nil {
			t.Fatalf("encoded vector does not evaluate: %v\n%s", err, enc)
		}
		if d := cmp.Diff(res, res2); d != "" {
			t.Fatalf("encoded vector evaluates differently (-first +second):\n%s", d)
		}
	})
}

// isSubsequence reports whether sub appears in list in order.
func isSubsequence(sub, list []string) bool {
	i := 0
	for _, s := range sub {
		j := slices.Index(list[i:], s)
		if j < 0 {
			return false
		}
		i += j + 1
	}
	return true
}
