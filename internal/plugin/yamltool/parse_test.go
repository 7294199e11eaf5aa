package yamltool

import (
	"strings"
	"testing"
)

// base is a valid tool file; each case below replaces one part of it.
const base = `name: get_item
description: Fetch an item
parameters:
  id:
    type: integer
    description: Item id
    required: true
request:
  method: GET
  url: "https://api.example.com/items/{{params.id}}"
allowed_hosts: [api.example.com]
`

func TestParseValid(t *testing.T) {
	tool, err := Parse("get_item.yaml", []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	if tool.Name != "get_item" || tool.Method != "GET" || tool.Timeout != DefaultTimeout {
		t.Errorf("got name %q method %q timeout %v", tool.Name, tool.Method, tool.Timeout)
	}
}

func TestParseErrors(t *testing.T) {
	req := func(r string) string {
		return "name: t\ndescription: d\nparameters:\n  p: {type: string, description: a p}\nrequires_env: [TOKEN]\nallowed_hosts: [api.example.com, \"*.example.org\"]\nrequest:\n" + r
	}
	get := "  method: GET\n  url: https://api.example.com/x\n"
	post := "  method: POST\n  url: https://api.example.com/x\n"
	param := func(p string) string {
		return "name: t\ndescription: d\nparameters:\n  p: " + p + "\nallowed_hosts: [api.example.com]\nrequest:\n" + get
	}
	tests := []struct {
		name, yaml, want string
	}{
		{"empty", "", "file is empty"},
		{"too big", "name: t\n" + strings.Repeat("#", MaxFileSize), "more than 65536"},
		{"bad yaml", "name: [\n", "decoding YAML: line 1"},
		{"unknown top key", base + "extra: 1\n", `line 12 column 1: unknown field "extra"`},
		{"unknown param key", strings.Replace(base, "    required: true", "    requried: true", 1), `line 7 column 5: unknown field "requried"`},
		{"unknown request key", req(get + "  verb: GET\n"), `unknown field "verb"`},
		{"duplicate key", base + "name: again\n", `mapping key "name" already defined`},
		{"no name", "description: d\n", "name is missing"},
		{"bad name", strings.Replace(base, "get_item", "Get-Item", 1), `name "Get-Item" does not match [a-z][a-z0-9_]*`},
		{"long name", strings.Replace(base, "get_item", "a"+strings.Repeat("b", 64), 1), "more than 64"},
		{"no description", strings.Replace(base, "description: Fetch an item\n", "", 1), "description is missing"},
		{"param no type", param("{description: x}"), "parameters.p: type is missing"},
		{"param bad type", param("{type: float, description: x}"), `parameters.p: type "float" is not string, number, integer or boolean`},
		{"param no description", param("{type: string}"), "parameters.p: description is missing"},
		{"param bad name", strings.Replace(param("{type: string, description: x}"), "  p:", "  9p:", 1), `parameters.9p: name "9p" does not match`},
		{"enum on integer", param("{type: integer, description: x, enum: [a]}"), "parameters.p: enum is only for type string, not integer"},
		{"empty enum", param("{type: string, description: x, enum: []}"), "enum has 0 values"},
		{"duplicate enum", param("{type: string, description: x, enum: [a, a]}"), `enum lists "a" twice`},
		{"default wrong type", param("{type: integer, description: x, default: abc}"), "parameters.p: default: want a integer, got a string"},
		{"default not integral", param("{type: integer, description: x, default: 1.5}"), "1.5 is not an integer"},
		{"default bool type", param("{type: boolean, description: x, default: 1}"), "want a boolean, got a number"},
		{"default not in enum", param("{type: string, description: x, enum: [A, B], default: C}"), `default: "C" is not one of A, B`},
		{"default and required", param("{type: string, description: x, required: true, default: a}"), "required and default are both set"},
		{"no request", "name: t\ndescription: d\nallowed_hosts: [a.com]\n", "request is missing"},
		{"bad method", req("  method: HEAD\n  url: https://api.example.com/\n"), `request: method "HEAD" is not one of GET, POST, PUT, PATCH, DELETE`},
		{"no url", req("  method: GET\n"), "request: url: missing"},
		{"relative url", req("  method: GET\n  url: /x\n"), "is not an absolute http or https URL"},
		{"ftp url", req("  method: GET\n  url: ftp://api.example.com/x\n"), `scheme "ftp" is not http or https`},
		{"templated host", req("  method: GET\n  url: https://{{params.p}}.example.com/x\n"), "scheme and host must be literal"},
		{"templated host env", req("  method: GET\n  url: \"https://api.example.com{{env.TOKEN}}/x\"\n"), "scheme and host must be literal"},
		{"userinfo", req("  method: GET\n  url: https://u:p@api.example.com/x\n"), "credentials in the URL are refused"},
		{"host not allowed", req("  method: GET\n  url: https://evil.com/x\n"), `host "evil.com" matches no allowed_hosts entry`},
		{"wildcard not apex", req("  method: GET\n  url: https://example.org/x\n"), `host "example.org" matches no allowed_hosts entry`},
		{"fragment", req("  method: GET\n  url: https://api.example.com/x#f\n"), "fragment"},
		{"space in url", req("  method: GET\n  url: https://api.example.com/a b\n"), "space or control character"},
		{"no allowed hosts", "name: t\ndescription: d\nrequest:\n" + get, "allowed_hosts is missing"},
		{"bad host entry", strings.Replace(base, "[api.example.com]", "[\"https://api.example.com\"]", 1), `allowed_hosts: "https://api.example.com": want a lower-case host name`},
		{"host entry with port", strings.Replace(base, "[api.example.com]", "[\"api.example.com:443\"]", 1), "want a lower-case host name"},
		{"wildcard tld", strings.Replace(base, "[api.example.com]", "[\"*.com\"]", 1), "a wildcard needs at least two labels"},
		{"inner wildcard", strings.Replace(base, "[api.example.com]", "[\"a.*.com\"]", 1), "want a lower-case host name"},
		{"bad env name", strings.Replace(req(get), "[TOKEN]", "[TO-KEN]", 1), `requires_env: "TO-KEN" is not an env var name`},
		{"env twice", strings.Replace(req(get), "[TOKEN]", "[TOKEN, TOKEN]", 1), `"TOKEN" is listed twice`},
		{"timeout too big", req(get + "  timeout_ms: 60001\n"), "timeout_ms 60001 is out of range: want 1 to 60000"},
		{"timeout zero", req(get + "  timeout_ms: 0\n"), "timeout_ms 0 is out of range"},
		{"timeout string", req(get + "  timeout_ms: soon\n"), "decoding YAML"},
		{"bad header name", req(get + "  headers:\n    \"X Bad\": v\n"), "is not a valid header name"},
		{"reserved header", req(get + "  headers:\n    host: evil.com\n"), "Host is set by the HTTP client"},
		{"header twice", req(get + "  headers:\n    X-A: a\n    x-a: b\n"), "X-A is set twice"},
		{"header not string", req(get + "  headers:\n    X-A: [a]\n"), "headers.X-A: want a string, got an array"},
		{"unknown namespace", req(get + "  headers:\n    X-A: \"{{secrets.X}}\"\n"), `unknown namespace "secrets"`},
		{"response in request", req(get + "  headers:\n    X-A: \"{{response.id}}\"\n"), `namespace "response" cannot be used here`},
		{"unclosed tag", req(get + "  headers:\n    X-A: \"{{params.p\"\n"), "has no closing }}"},
		{"malformed tag", req(get + "  headers:\n    X-A: \"{{params.p | upper}}\"\n"), "malformed tag"},
		{"function tag", req(get + "  headers:\n    X-A: \"{{exec(1)}}\"\n"), "malformed tag"},
		{"undeclared env", req(get + "  headers:\n    X-A: \"{{env.OTHER}}\"\n"), "uses env OTHER, which requires_env does not list"},
		{"undeclared param", req(get + "  headers:\n    X-A: \"{{params.q}}\"\n"), "{{params.q}} names no declared parameter"},
		{"param path", req(get + "  headers:\n    X-A: \"{{params.p.x}}\"\n"), "params takes one name, not a path"},
		{"body on GET", req(get + "  body: {type: text, content: hi}\n"), "body: a GET request has no body"},
		{"body no type", req(post + "  body: {content: hi}\n"), "body: type is missing"},
		{"body bad type", req(post + "  body: {type: xml, content: hi}\n"), `body: type "xml" is not json, form or text`},
		{"text body not string", req(post + "  body: {type: text, content: [a]}\n"), "a text body is a string, got an array"},
		{"form body not map", req(post + "  body: {type: form, content: abc}\n"), "a form body is a mapping"},
		{"form nested", req(post + "  body: {type: form, content: {a: {b: c}}}\n"), "content.a: want a string, number or boolean, got an object"},
		{"json body bad tag", req(post + "  body: {type: json, content: {a: [\"{{env.NOPE}}\"]}}\n"), "content: a: 0: {{env.NOPE}} uses env NOPE"},
		{"json too deep", req(post + "  body: {type: json, content: " + strings.Repeat("[", 20) + strings.Repeat("]", 20) + "}\n"), "nested more than 16 deep"},
		{"env in summary", base + "requires_env: [TOKEN]\nresponse: {summary: \"{{env.TOKEN}}\"}\n", `response.summary: tag {{env.TOKEN}}: namespace "env" cannot be used here`},
		{"params in error template", base + "response: {error_template: \"{{params.id}}\"}\n", `response.error_template: tag {{params.id}}: namespace "params" cannot be used here`},
		{"long template", base + "response: {summary: \"" + strings.Repeat("a", maxTemplateLen+1) + "\"}\n", "more than 8192"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatalf("Parse succeeded, want error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), `api tool file "t.yaml": `) {
				t.Errorf("error %q\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

func TestParseTimeoutAndLimits(t *testing.T) {
	tool, err := Parse("t.yaml", []byte(strings.Replace(base, "  method: GET\n", "  method: GET\n  timeout_ms: 60000\n", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if tool.Timeout != MaxTimeout {
		t.Errorf("timeout %v, want %v", tool.Timeout, MaxTimeout)
	}
	var many strings.Builder
	many.WriteString("name: t\ndescription: d\nallowed_hosts: [a.com]\nrequest: {method: GET, url: \"https://a.com/\"}\nparameters:\n")
	for i := range maxParams + 1 {
		many.WriteString("  p" + strings.Repeat("x", i) + ": {type: string, description: d}\n")
	}
	if _, err := Parse("t.yaml", []byte(many.String())); err == nil || !strings.Contains(err.Error(), "33 declared, more than 32") {
		t.Errorf("33 params: got %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(base))
	f.Add([]byte(linkedinYAML(f)))
	f.Add([]byte("name: x\nrequest: {body: {type: json, content: [[[[{a: \"{{params.}}\"}]]]]}}\n"))
	f.Add([]byte("{{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tool, err := Parse("f.yaml", data)
		if err != nil {
			return
		}
		_ = tool.Schema()
		call, err := tool.Request(map[string]any{}, func(string) (string, bool) { return "v", true })
		if err == nil && !tool.hostAllowed(call.Req.URL.Hostname()) {
			t.Fatalf("request to %q, not an allowed host", call.Req.URL.Host)
		}
		_ = tool.Summarize(200, data)
		_ = tool.Summarize(500, data)
	})
}
