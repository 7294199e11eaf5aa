package api

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
)

type openAPIDocument struct {
	OpenAPI    string                                `json:"openapi"`
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components map[string]map[string]json.RawMessage `json:"components"`
}

// TestOpenAPIMatchesRoutes checks the served document against the route
// table both ways, that every path parameter is declared, that every
// route's auth and error statuses are documented, and that every $ref
// resolves.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	e := newEnv(t, Options{AdminToken: adminTok})
	resp, data := e.do(t, "GET", "/api/openapi.json", "", "", "")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var doc openAPIDocument
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi %q", doc.OpenAPI)
	}
	inTable := map[string]route{}
	for _, rt := range routes {
		inTable[strings.ToLower(rt.method)+" "+rt.path] = rt
	}
	inDoc := map[string]json.RawMessage{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			inDoc[method+" "+path] = op
		}
	}
	for k := range inTable {
		if _, ok := inDoc[k]; !ok {
			t.Errorf("route %s is served but not documented", k)
		}
	}
	for k := range inDoc {
		if _, ok := inTable[k]; !ok {
			t.Errorf("route %s is documented but not served", k)
		}
	}
	wildcard := regexp.MustCompile(`\{([a-zA-Z]+)\}`)
	for k, raw := range inDoc {
		rt, ok := inTable[k]
		if !ok {
			continue
		}
		var op struct {
			OperationID string `json:"operationId"`
			Parameters  []struct {
				Ref string `json:"$ref"`
			} `json:"parameters"`
			Responses map[string]json.RawMessage `json:"responses"`
			Security  []map[string]any           `json:"security"`
		}
		if err := json.Unmarshal(raw, &op); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		var params []string
		for _, p := range op.Parameters {
			params = append(params, strings.TrimPrefix(p.Ref, "#/components/parameters/"))
		}
		for _, m := range wildcard.FindAllStringSubmatch(rt.path, -1) {
			if !slices.Contains(params, m[1]) {
				t.Errorf("%s: path parameter %s is not declared", k, m[1])
			}
		}
		if op.OperationID == "" {
			t.Errorf("%s: no operationId", k)
		}
		var want []string
		switch rt.access {
		case admin:
			want = []string{"401", "403", "429", "503"}
		case tenant:
			want = []string{"401", "403", "429"}
		}
		// talon serve refuses a POST or DELETE that is not JSON, body or no.
		if (rt.method == http.MethodPost || rt.method == http.MethodDelete) && op.Responses["415"] == nil {
			t.Errorf("%s does not document 415", k)
		}
		for _, s := range want {
			if op.Responses[s] == nil {
				t.Errorf("%s: status %s not documented", k, s)
			}
		}
		if (rt.access == public) != (len(op.Security) == 0) {
			t.Errorf("%s: security %v does not match its access", k, op.Security)
		}
	}
	refs := regexp.MustCompile(`"\$ref":\s*"#/components/([^/"]+)/([^"]+)"`)
	for _, m := range refs.FindAllStringSubmatch(string(data), -1) {
		if doc.Components[m[1]][m[2]] == nil {
			t.Errorf("$ref %s/%s does not resolve", m[1], m[2])
		}
	}
}
