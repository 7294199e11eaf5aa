package session

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEntryJSONRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want Entry
		out  string // "" means the same as in
	}{
		{
			name: "minimal",
			in:   `{"sessionId":"s","updatedAt":1700000000000}`,
			want: Entry{SessionID: "s", UpdatedAt: 1700000000000},
		},
		{
			name: "modelled fields",
			in: `{"sessionId":"s","updatedAt":1,"label":"L","spawnedBy":"agent:a:main","spawnDepth":0,` +
				`"execHost":"node","inputTokens":3,"systemSent":true,"origin":{"provider":"webchat"}}`,
			want: Entry{SessionID: "s", UpdatedAt: 1, Label: "L", SpawnedBy: "agent:a:main", SpawnDepth: intp(0),
				ExecHost: "node", InputTokens: 3, SystemSent: true, Origin: json.RawMessage(`{"provider":"webchat"}`)},
		},
		{
			name: "unknown fields kept, sorted after the modelled ones",
			in:   `{"zeta":[1,2],"sessionId":"s","updatedAt":2,"fastMode":true,"skillsSnapshot":{"a":{"b":null}}}`,
			want: Entry{SessionID: "s", UpdatedAt: 2, Extra: map[string]json.RawMessage{
				"zeta": json.RawMessage(`[1,2]`), "fastMode": json.RawMessage(`true`),
				"skillsSnapshot": json.RawMessage(`{"a":{"b":null}}`),
			}},
			out: `{"sessionId":"s","updatedAt":2,"fastMode":true,"skillsSnapshot":{"a":{"b":null}},"zeta":[1,2]}`,
		},
		{
			name: "a known name in another case is not kept twice",
			in:   `{"sessionId":"s","updatedAt":2,"LABEL":"x"}`,
			want: Entry{SessionID: "s", UpdatedAt: 2, Label: "x"},
			out:  `{"sessionId":"s","updatedAt":2,"label":"x"}`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var e Entry
			if err := json.Unmarshal([]byte(c.in), &e); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(c.want, e); d != "" {
				t.Errorf("decoded (-want +got):\n%s", d)
			}
			b, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			want := c.out
			if want == "" {
				want = c.in
			}
			if string(b) != want {
				t.Errorf("encoded\n got %s\nwant %s", b, want)
			}
		})
	}
}

func TestEntryExtraIgnoresKnownNames(t *testing.T) {
	e := Entry{SessionID: "s", UpdatedAt: 1, Extra: map[string]json.RawMessage{"sessionId": json.RawMessage(`"evil"`), "x": nil}}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"sessionId":"s","updatedAt":1,"x":null}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
}

func TestEntryClone(t *testing.T) {
	e := Entry{SpawnDepth: intp(1), Origin: json.RawMessage(`{}`), Extra: map[string]json.RawMessage{"a": json.RawMessage(`1`)}}
	c := e.Clone()
	*c.SpawnDepth = 9
	c.Origin[0] = '['
	c.Extra["a"][0] = '2'
	c.Extra["b"] = nil
	if *e.SpawnDepth != 1 || string(e.Origin) != `{}` || string(e.Extra["a"]) != `1` || len(e.Extra) != 1 {
		t.Errorf("Clone shares memory with the original: %+v", e)
	}
}
