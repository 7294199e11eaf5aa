package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMergePatch(t *testing.T) {
	tests := []struct {
		name, base, patch, want string
	}{
		{"replace scalar", `{a: 1}`, `{a: 2}`, `{"a":2}`},
		{"deep merge", `{nested: {a: 1, b: 2}}`, `{nested: {b: 3}}`, `{"nested":{"a":1,"b":3}}`},
		{"null deletes", `{a: 1, b: 2}`, `{b: null}`, `{"a":1}`},
		{"null for a missing key", `{a: 1}`, `{zz: null}`, `{"a":1}`},
		{"nested null deletes", `{a: {b: 1, c: 2}}`, `{a: {b: null}}`, `{"a":{"c":2}}`},
		{"arrays replace", `{arr: [1, 2, 3]}`, `{arr: [4]}`, `{"arr":[4]}`},
		{"object replaces scalar", `{a: 1}`, `{a: {b: 1, c: null}}`, `{"a":{"b":1}}`},
		{"scalar replaces object", `{a: {b: 1}}`, `{a: "x"}`, `{"a":"x"}`},
		{"new keys appended in patch order, base order kept",
			`{z: 1, a: 1, m: 1}`, `{y: 2, a: 2, b: 2}`, `{"z":1,"a":2,"m":1,"y":2,"b":2}`},
		{"agents.list merges by id",
			`{agents: {list: [{id: "primary", workspace: "/tmp/one"}, {id: "secondary", workspace: "/tmp/two"}]}}`,
			`{agents: {list: [{id: "primary", memorySearch: {extraPaths: ["/m.md"]}}]}}`,
			`{"agents":{"list":[{"id":"primary","workspace":"/tmp/one","memorySearch":{"extraPaths":["/m.md"]}},{"id":"secondary","workspace":"/tmp/two"}]}}`},
		{"unknown ids appended in patch order",
			`{list: [{id: "a"}]}`,
			`{list: [{id: "c", n: 1}, {id: "a", n: 2}, {id: "b", n: 3, gone: null}]}`,
			`{"list":[{"id":"a","n":2},{"id":"c","n":1},{"id":"b","n":3}]}`},
		{"merge inside an id element: nested and null",
			`{list: [{id: "a", tools: {allow: ["x"], deny: ["y"]}, name: "A"}]}`,
			`{list: [{id: "a", tools: {deny: null, profile: "coding"}, name: null}]}`,
			`{"list":[{"id":"a","tools":{"allow":["x"],"profile":"coding"}}]}`},
		{"patch element without id: replace",
			`{list: [{id: "a", w: 1}]}`, `{list: [{id: "b"}, {name: "no id"}]}`, `{"list":[{"id":"b"},{"name":"no id"}]}`},
		{"base element without id: replace",
			`{list: [{id: "a"}, {x: 1}]}`, `{list: [{id: "a", w: 1}]}`, `{"list":[{"id":"a","w":1}]}`},
		{"empty id is no id: replace",
			`{list: [{id: ""}]}`, `{list: [{id: "a"}]}`, `{"list":[{"id":"a"}]}`},
		{"numeric id is no id: replace",
			`{list: [{id: 1, w: 1}]}`, `{list: [{id: 1}]}`, `{"list":[{"id":1}]}`},
		{"empty patch array replaces (see MergePatch doc)",
			`{list: [{id: "a"}]}`, `{list: []}`, `{"list":[]}`},
		{"empty base array takes id elements",
			`{list: []}`, `{list: [{id: "a", x: null}]}`, `{"list":[{"id":"a"}]}`},
		{"id array against a non-array base replaces",
			`{list: {id: "a"}}`, `{list: [{id: "a"}]}`, `{"list":[{"id":"a"}]}`},
		{"id arrays merge at any depth",
			`{a: {b: [{id: "x", v: 1}]}}`, `{a: {b: [{id: "x", w: 2}]}}`, `{"a":{"b":[{"id":"x","v":1,"w":2}]}}`},
		{"prototype keys ignored",
			`{a: {b: 1}}`,
			`{__proto__: {polluted: true}, a: {constructor: {x: 1}, prototype: 1, c: 2}, arr: [{__proto__: 1, k: 1}], list: [{id: "n", __proto__: 1}]}`,
			`{"a":{"b":1,"c":2},"arr":[{"k":1}],"list":[{"id":"n"}]}`},
		{"prototype keys in base are not the patch's business",
			`{constructor: 1}`, `{a: 1}`, `{"constructor":1,"a":1}`},
		{"non-object base, object patch", `[1, 2]`, `{a: 1, b: null}`, `{"a":1}`},
		{"null base, object patch", `null`, `{a: {b: null, c: 1}}`, `{"a":{"c":1}}`},
		{"non-object patch replaces", `{a: 1}`, `[1]`, `[1]`},
		{"null patch replaces (RFC 7386)", `{a: 1}`, `null`, `null`},
		{"empty patch", `{a: 1}`, `{}`, `{"a":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, patch := mustJSON5(t, tt.base), mustJSON5(t, tt.patch)
			base0, patch0 := base.Clone(), patch.Clone()
			got := MergePatch(base, patch)
			if diff := cmp.Diff(tt.want, compact(t, got)); diff != "" {
				t.Errorf("MergePatch (-want +got):\n%s", diff)
			}
			if !Equal(base, base0) || !Equal(patch, patch0) {
				t.Errorf("inputs modified: base %s, patch %s", compact(t, base), compact(t, patch))
			}
		})
	}
}

func TestMergePatchResultIsIndependent(t *testing.T) {
	base := mustJSON5(t, `{keep: {x: 1}, list: [{id: "a", v: {n: 1}}]}`)
	patch := mustJSON5(t, `{add: {y: [1]}, list: [{id: "b", v: {n: 2}}]}`)
	base0, patch0 := base.Clone(), patch.Clone()
	got := MergePatch(base, patch)
	got.Get("keep").Set("x", NewInt(9))
	got.Get("add").Get("y").Items[0] = NewInt(9)
	got.Get("list").Items[0].Get("v").Set("n", NewInt(9))
	got.Get("list").Items[1].Get("v").Set("n", NewInt(9))
	if !Equal(base, base0) || !Equal(patch, patch0) {
		t.Errorf("result shares nodes with inputs: base %s, patch %s", compact(t, base), compact(t, patch))
	}
}

func TestMergePatchNilPatch(t *testing.T) {
	base := mustJSON5(t, `{a: 1}`)
	if got := MergePatch(base, nil); !Equal(got, base) || got == base {
		t.Errorf("MergePatch(base, nil) = %v, want a copy of base", got)
	}
}
