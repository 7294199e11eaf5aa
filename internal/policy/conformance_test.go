package policy

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"talon/internal/testtier"
)

// vectorsPath is the repo's copy of ../shared/conformance/tool-policy, kept
// so a fresh clone tests without ../shared.
const vectorsPath = "../../testdata/conformance/tool-policy/vectors.json"

func loadVectors(t testing.TB) []json.RawMessage {
	t.Helper()
	data, err := os.ReadFile(vectorsPath)
	if err != nil {
		t.Fatalf("reading vectors: %v", err)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatalf("parsing vectors: %v", err)
	}
	return raw
}

// TestConformance runs every vector through ParseVector and EvalVector, the
// code path of `talon policy eval`, and compares the exact tool order.
func TestConformance(t *testing.T) {
	raw := loadVectors(t)
	if len(raw) != 80 {
		t.Fatalf("vectors.json holds %d cases, want 80", len(raw))
	}
	kinds := map[string]int{}
	for _, data := range raw {
		v, err := ParseVector(data)
		if err != nil {
			t.Fatalf("parse: %v", err)
		}
		kinds[v.Kind]++
		t.Run(v.ID, func(t *testing.T) {
			got, err := EvalVector(v)
			if err != nil {
				t.Fatalf("EvalVector: %v", err)
			}
			switch v.Kind {
			case KindPluginEnable:
				if diff := cmp.Diff(v.ExpectedState, got.State, cmpopts.IgnoreFields(EnableState{}, "Key")); diff != "" {
					t.Errorf("state (-want +got):\n%s", diff)
				}
				return
			case KindSandboxPolicy:
				if diff := cmp.Diff(v.ExpectedPolicy, got.Policy, cmpopts.IgnoreFields(SandboxPolicy{}, "ImageAdded", "AllowWasEmpty")); diff != "" {
					t.Errorf("policy (-want +got):\n%s", diff)
				}
			}
			if diff := cmp.Diff(v.ToolsOut, got.ToolsOut, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("tools_out (-want +got):\n%s", diff)
			}
			if v.Warnings != nil {
				if diff := cmp.Diff(v.Warnings, got.Warnings); diff != "" {
					t.Errorf("warnings (-want +got):\n%s", diff)
				}
			}
			// Every candidate is either kept or traced, never both. Plugin
			// registrations are traced on their own: one may lose a name
			// conflict to a kept tool of the same name.
			if v.Kind == KindEffective || v.Kind == KindFilter {
				kept := map[string]bool{}
				for _, n := range got.ToolsOut {
					kept[n] = true
				}
				for _, rm := range got.Trace {
					if rm.Stage == StagePlugin {
						continue
					}
					if kept[rm.Tool] {
						t.Errorf("tool %q is both kept and traced as removed by %s", rm.Tool, rm.Stage)
					}
					kept[rm.Tool] = true
				}
				for _, n := range v.ToolsIn {
					if !kept[n] {
						t.Errorf("tool %q is neither kept nor traced", n)
					}
				}
			}
		})
	}
	want := map[string]int{KindEffective: 61, KindFilter: 8, KindPluginEnable: 8, KindSandboxPolicy: 3}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("vector kinds (-want +got):\n%s", diff)
	}
}

// TestConformanceResolution checks that Talon resolves, from config and
// session key alone, the context every effective vector records as resolved
// (sandboxed, workspace access, subagent depth and role), and that the
// pipeline gives the same tools without those overrides.
func TestConformanceResolution(t *testing.T) {
	for _, data := range loadVectors(t) {
		v, err := ParseVector(data)
		if err != nil {
			t.Fatal(err)
		}
		if v.Kind != KindEffective {
			continue
		}
		t.Run(v.ID, func(t *testing.T) {
			c := v.Context
			c.Sandboxed, c.WorkspaceAccess, c.SubagentDepth, c.SubagentRole = nil, "", nil, ""
			v2 := v
			v2.Context = c
			got, err := EvalVector(v2)
			if err != nil {
				t.Fatal(err)
			}
			r := got.Resolved
			if v.Context.Sandboxed != nil && r.Sandboxed != *v.Context.Sandboxed {
				t.Errorf("sandboxed = %v, vector says %v", r.Sandboxed, *v.Context.Sandboxed)
			}
			if v.Context.SandboxMode != "" && r.SandboxMode != v.Context.SandboxMode {
				t.Errorf("sandbox mode = %q, vector says %q", r.SandboxMode, v.Context.SandboxMode)
			}
			if v.Context.WorkspaceAccess != "" && r.WorkspaceAccess != v.Context.WorkspaceAccess {
				t.Errorf("workspace access = %q, vector says %q", r.WorkspaceAccess, v.Context.WorkspaceAccess)
			}
			if v.Context.SubagentRole != "" {
				if r.SubagentRole != v.Context.SubagentRole || r.SubagentDepth != *v.Context.SubagentDepth {
					t.Errorf("subagent = %d/%s, vector says %d/%s", r.SubagentDepth, r.SubagentRole, *v.Context.SubagentDepth, v.Context.SubagentRole)
				}
			}
			if r.AgentID != v.Context.AgentID {
				t.Errorf("agent = %q, vector says %q", r.AgentID, v.Context.AgentID)
			}
			if diff := cmp.Diff(v.ToolsOut, got.ToolsOut, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("tools_out without overrides (-want +got):\n%s", diff)
			}
		})
	}
}

// TestVectorsMatchShared fails when the repo's copy of the vectors drifts
// from ../shared. Outside CI a checkout without ../shared skips it.
func TestVectorsMatchShared(t *testing.T) {
	shared := filepath.Join("..", "..", "..", "shared", "conformance", "tool-policy", "vectors.json")
	want, err := os.ReadFile(shared)
	if err != nil {
		testtier.Unavailable(t, "no ../shared beside this checkout: %v", err)
	}
	got, err := os.ReadFile(vectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs from %s; copy it again", vectorsPath, shared)
	}
}
