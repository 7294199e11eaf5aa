package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

func TestParseGateways(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []gatewayNode
		err  string
	}{
		{"http://10.0.0.1:18789", []gatewayNode{{"10.0.0.1:18789", "http://10.0.0.1:18789"}}, ""},
		{" a=http://h1:1/ , b=https://h2 ,", []gatewayNode{{"a", "http://h1:1"}, {"b", "https://h2"}}, ""},
		{"", nil, "name at least one"},
		{"a=ftp://h", nil, "want http:// or https://"},
		{"a=http://u:p@h", nil, "without user"},
		{"../x=http://h", nil, "node id"},
		{"a=http://h1,a=http://h2", nil, "listed twice"},
		{"http://h1,b=http://h1", nil, "listed twice"},
		{"a=h1:18789", nil, "want http:// or https://"},
	} {
		t.Run(c.in, func(t *testing.T) {
			got, err := parseGateways(c.in)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

// TestServeGatewaysRefused: serve --gateways stops before serving on a
// missing node token or a bad flag, saying which.
func TestServeGatewaysRefused(t *testing.T) {
	for _, c := range []struct {
		name, token string
		args        []string
		want        string
	}{
		{"no node token", "", []string{"--gateways", "http://127.0.0.1:1"}, "set TALON_NODE_TOKEN"},
		{"bad URL", "node-token-0123456789", []string{"--gateways", "ftp://h"}, "want http:// or https://"},
		{"health too often", "node-token-0123456789", []string{"--gateways", "http://127.0.0.1:1", "--health-interval", "10ms"}, "--health-interval 10ms: want 1s up to 1h"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(nodeTokenEnv, c.token)
			_, errOut, code := talon(t, "", append([]string{"serve", "--state-dir", t.TempDir(), "--port", "1"}, c.args...)...)
			if code == 0 || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d, %q; want a failure saying %q", code, errOut, c.want)
			}
		})
	}
}

// TestTenantsMoveCLI: talon tenants move checks its arguments, sends the
// admin token, and says what the platform answered.
func TestTenantsMoveCLI(t *testing.T) {
	var got struct{ auth, path, body string }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.auth, got.path, got.body = r.Header.Get("Authorization"), r.URL.Path, string(b)
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(got.body, `"c"`) {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error":{"code":"node_unavailable","message":"moving tenant \"t1\": node c cannot take it"}}`)
			return
		}
		fmt.Fprint(w, `{"tenant":"t1","from":"a","to":"b"}`)
	}))
	defer srv.Close()
	t.Setenv(adminTokenEnv, "")
	if _, errOut, code := talon(t, "", "tenants", "move", "t1", "b", "--url", srv.URL); code == 0 || !strings.Contains(errOut, "set TALON_ADMIN_TOKEN") {
		t.Errorf("without the admin token: exit %d, %q", code, errOut)
	}
	t.Setenv(adminTokenEnv, "admin-secret")
	for _, c := range []struct {
		name   string
		args   []string
		ok     bool
		output string
	}{
		{"moved", []string{"t1", "b"}, true, "tenant t1 moved from a to b"},
		{"refused", []string{"t1", "c"}, false, "node c cannot take it (node_unavailable, HTTP 503)"},
		{"bad tenant", []string{"../t1", "b"}, false, "is not a tenant id"},
		{"bad node", []string{"t1", "b/c"}, false, "node id"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := talon(t, "", append([]string{"tenants", "move"}, append(c.args, "--url", srv.URL)...)...)
			if (code == 0) != c.ok || !strings.Contains(out+errOut, c.output) {
				t.Errorf("exit %d, %q %q; want ok=%v and %q", code, out, errOut, c.ok, c.output)
			}
		})
	}
	if got.auth != "Bearer admin-secret" || got.path != "/api/tenants/t1/move" || got.body != `{"node":"c"}` {
		t.Errorf("the platform was asked %+v", got)
	}
}
