package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"talon/internal/tools"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, args string
		want       request
		err        string
	}{
		{"get", `{"action":"config.get"}`, request{action: "config.get"}, ""},
		{"get a path", `{"action":"config.get","path":" tools.web "}`, request{action: "config.get", path: "tools.web"}, ""},
		{"patch", `{"action":"config.patch","raw":"{a: 1}","baseHash":"abc"}`, request{action: "config.patch", raw: "{a: 1}", baseHash: "abc"}, ""},
		{"patch without raw", `{"action":"config.patch","baseHash":"abc"}`, request{}, "config.patch needs raw"},
		{"patch with a path", `{"action":"config.patch","raw":"{}","path":"tools"}`, request{}, "path is for config.get"},
		{"get with raw", `{"action":"config.get","raw":"{}"}`, request{}, "raw and baseHash are for config.patch"},
		{"update.run", `{"action":"update.run"}`, request{}, "update.run is not built in Talon: the operator updates the talon binary"},
		{"restart", `{"action":"restart"}`, request{}, "restart is not built in Talon"},
		{"schema lookup", `{"action":"config.schema.lookup","path":"tools"}`, request{}, "config.schema.lookup is not built in Talon"},
		{"apply", `{"action":"config.apply","raw":"{}"}`, request{}, "config.apply is not built in Talon: replace keys with config.patch"},
		{"unknown action", `{"action":"explode"}`, request{}, `argument "action" must be one of "config.get", "config.patch"`},
		{"no action", `{}`, request{}, `missing required argument "action"`},
		{"remote gateway", `{"action":"config.get","gatewayUrl":"ws://evil"}`, request{}, `unknown argument "gatewayUrl"`},
		{"raw too long", `{"action":"config.patch","raw":"` + strings.Repeat("x", maxRaw+1) + `"}`, request{}, "raw is over"},
		{"raw not a string", `{"action":"config.patch","raw":{"a":1}}`, request{}, "raw"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := parse(json.RawMessage(tc.args))
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case r != tc.want:
				t.Errorf("request %+v, want %+v", r, tc.want)
			}
		})
	}
}

// configs answers as the gateway does, and records the patches it gets.
type configs struct {
	snapshot, patchOut string
	err                error
	patches            []string
}

func (c *configs) Get(context.Context) (json.RawMessage, error) {
	return json.RawMessage(c.snapshot), c.err
}

func (c *configs) Patch(_ context.Context, raw, baseHash string) (json.RawMessage, error) {
	c.patches = append(c.patches, baseHash+" "+raw)
	return json.RawMessage(c.patchOut), c.err
}

const snapshot = `{"path":"talon.json","exists":true,"hash":"h1","valid":true,
	"config":{"tools":{"web":{"search":{"provider":"brave","apiKey":"__OPENCLAW_REDACTED__"}}},"agents":{"list":[{"id":"main"},{"id":"ops","name":"Ops"}]}}}`

func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name, args string
		c          *configs
		notOwner   bool
		want       string // a substring of the text
		isErr      bool
		patches    int
	}{
		{"get", `{"action":"config.get"}`, &configs{snapshot: snapshot}, false, `"ok": true,`, false, 0},
		{"get a path", `{"action":"config.get","path":"agents.list[1].name"}`, &configs{snapshot: snapshot}, false,
			"{\n  \"ok\": true,\n  \"result\": {\n    \"hash\": \"h1\",\n    \"path\": \"agents.list[1].name\",\n    \"config\": \"Ops\"\n  }\n}", false, 0},
		{"get a subtree", `{"action":"config.get","path":"tools.web"}`, &configs{snapshot: snapshot}, false, `"apiKey": "__OPENCLAW_REDACTED__"`, false, 0},
		{"a path not there", `{"action":"config.get","path":"agents.list[5]"}`, &configs{snapshot: snapshot}, false, "config path not found: agents.list[5]", true, 0},
		{"an index into an object", `{"action":"config.get","path":"tools.web[0]"}`, &configs{snapshot: snapshot}, false, "config path not found", true, 0},
		{"an empty path", `{"action":"config.get","path":"."}`, &configs{snapshot: snapshot}, false, "config path not found", true, 0},
		{"too large", `{"action":"config.get"}`, &configs{snapshot: `{"hash":"h","config":{"x":"` + strings.Repeat("y", maxResult) + `"}}`}, false,
			"use path to request a narrower config subtree", true, 0},
		{"patch", `{"action":"config.patch","raw":"{a: 1}","baseHash":"h1"}`, &configs{patchOut: `{"ok":true,"path":"talon.json","config":{"a":1},"hash":"h2","restart":{"required":false}}`}, false,
			`"hash": "h2"`, false, 1},
		{"a refused patch", `{"action":"config.patch","raw":"{a: 1}","baseHash":"h0"}`, &configs{err: errors.New("config changed since last load; re-run config.get and retry (the config's hash is now h1)")}, false,
			"gateway: config.patch: config changed since last load; re-run config.get and retry (the config's hash is now h1)", true, 1},
		{"not an owner", `{"action":"config.get"}`, &configs{snapshot: snapshot}, true, "Tool restricted to owner senders.", true, 0},
		{"not an owner's patch", `{"action":"config.patch","raw":"{a: 1}","baseHash":"h1"}`, &configs{}, true, "Tool restricted to owner senders.", true, 0},
		{"no config", `{"action":"config.get"}`, nil, false, "cannot reach the gateway's config", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := &tools.Env{Owner: !tc.notOwner}
			if tc.c != nil {
				env.Configs = tc.c
			}
			res, err := New().Run(t.Context(), env, json.RawMessage(tc.args))
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError != tc.isErr || !strings.Contains(res.Text, tc.want) {
				t.Errorf("result (error %v):\n%s\nwant (error %v) %q", res.IsError, res.Text, tc.isErr, tc.want)
			}
			if tc.c != nil && len(tc.c.patches) != tc.patches {
				t.Errorf("patches %q, want %d", tc.c.patches, tc.patches)
			}
			if strings.Contains(res.Text, `"config": {`) && strings.HasPrefix(tc.args, `{"action":"config.patch"`) {
				t.Errorf("a patch's result carries the config:\n%s", res.Text)
			}
		})
	}
}

func TestSchema(t *testing.T) {
	if err := tools.LintSchema(New().Schema()); err != nil {
		t.Fatal(err)
	}
}
