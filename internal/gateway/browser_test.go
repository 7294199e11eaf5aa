package gateway

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"talon/protocol"
)

func TestHostAllowed(t *testing.T) {
	loop, lan, one := net.ParseIP("127.0.0.1"), net.ParseIP("0.0.0.0"), net.ParseIP("192.168.1.5")
	proxy := []string{"https://talon.example.com", "talon.bad.example", "*"}
	cases := []struct {
		name    string
		bind    net.IP
		host    string
		origins []string
		want    bool
	}{
		{"loopback address and port", loop, "127.0.0.1:18789", nil, true},
		{"loopback address alone", loop, "127.0.0.1", nil, true},
		{"another 127.x", loop, "127.1.2.3:80", nil, true},
		{"localhost", loop, "localhost:18789", nil, true},
		{"uppercase localhost", loop, "LOCALHOST:18789", nil, true},
		{"IPv6 loopback", loop, "[::1]:18789", nil, true},
		{"IPv6 loopback without port", loop, "[::1]", nil, true},
		{"IPv4-mapped loopback", loop, "[::ffff:127.0.0.1]:18789", nil, true},
		{"missing Host", loop, "", nil, false},
		{"a rebinding name", loop, "rebind.evil.example:18789", nil, false},
		{"localhost as a subdomain", loop, "localhost.evil.example:18789", nil, false},
		{"a name under localhost", loop, "app.localhost:18789", nil, false},
		{"localhost with a dot", loop, "localhost.:18789", nil, false},
		{"a loopback address in a name", loop, "127.0.0.1.nip.io:18789", nil, false},
		{"all interfaces", loop, "0.0.0.0:18789", nil, false},
		{"a LAN address on loopback", loop, "192.168.1.5:18789", nil, false},
		{"IPv6 link-local with zone", loop, "[fe80::1%25eth0]:18789", nil, false},
		{"unclosed bracket", loop, "[::1:18789", nil, false},
		{"an allowed origin's host", loop, "talon.example.com", proxy, true},
		{"an allowed origin's host, any case and port", loop, "TALON.Example.com:8443", proxy, true},
		{"not an origin, not a host", loop, "talon.bad.example", proxy, false},
		{"* names no host", loop, "evil.example", proxy, false},
		{"not listening yet: judged as loopback", nil, "192.168.1.5", nil, false},
		{"not listening yet: localhost", nil, "localhost", nil, true},
		{"LAN bind: an address", lan, "192.168.1.5:18789", nil, true},
		{"LAN bind: an IPv6 address", lan, "[2001:db8::1]:18789", nil, true},
		{"LAN bind: a rebinding name", lan, "rebind.evil.example:18789", nil, false},
		{"LAN bind: localhost", lan, "localhost:18789", nil, true},
		{"one address bound: another address", one, "203.0.113.9:18789", nil, true},
		{"one address bound: a name", one, "gateway.lan:18789", nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := hostAllowed(c.host, c.bind, c.origins); got != c.want {
				t.Errorf("hostAllowed(%q, %v, %q) = %v, want %v", c.host, c.bind, c.origins, got, c.want)
			}
		})
	}
}

func TestOriginAllowed(t *testing.T) {
	dev := []string{"http://localhost:5173/"}
	cases := []struct {
		name, origin, host string
		origins            []string
		want               bool
	}{
		{"no Origin: not a browser", "", "127.0.0.1:18789", nil, true},
		{"same origin", "http://127.0.0.1:18789", "127.0.0.1:18789", nil, true},
		{"same origin, any case", "http://LOCALHOST:18789", "localhost:18789", nil, true},
		{"same origin behind a TLS proxy", "https://talon.example.com", "talon.example.com", nil, true},
		{"a foreign site", "http://evil.example", "127.0.0.1:18789", nil, false},
		{"a rebinding name on another port", "http://rebind.evil.example:8080", "127.0.0.1:18789", nil, false},
		{"another local port", "http://localhost:5173", "127.0.0.1:18789", nil, false},
		{"another loopback name", "http://localhost:18789", "127.0.0.1:18789", nil, false},
		{"null", "null", "127.0.0.1:18789", nil, false},
		{"a file page", "file://", "127.0.0.1:18789", nil, false},
		{"an extension", "chrome-extension://abcdefghijklmnopabcdefghijklmnop", "127.0.0.1:18789", nil, false},
		{"not http", "ws://127.0.0.1:18789", "127.0.0.1:18789", nil, false},
		{"listed", "http://localhost:5173", "127.0.0.1:18789", dev, true},
		{"listed, any case", "http://LocalHost:5173", "127.0.0.1:18789", dev, true},
		{"listed with another scheme", "https://localhost:5173", "127.0.0.1:18789", dev, false},
		{"listed with another port", "http://localhost:5174", "127.0.0.1:18789", dev, false},
		{"any origin", "http://evil.example", "127.0.0.1:18789", []string{"*"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := originAllowed(c.origin, c.host, c.origins); got != c.want {
				t.Errorf("originAllowed(%q, %q, %q) = %v, want %v", c.origin, c.host, c.origins, got, c.want)
			}
		})
	}
}

func TestNeedsJSON(t *testing.T) {
	cases := []struct {
		method, path string
		want         bool
	}{
		{"POST", "/v1/chat/completions", true},
		{"PUT", "/v1/x", true},
		{"PATCH", "/api/tenants/acme", true},
		{"DELETE", "/api/tenants/acme", true},
		{"POST", "/api", true},
		{"GET", "/v1/models", false},
		{"HEAD", "/api/library", false},
		{"OPTIONS", "/v1/chat/completions", false},
		{"POST", "/signin", false},       // Studio: CSRF tokens instead
		{"POST", "/tenants/acme", false}, // Studio
		{"POST", "/v1beta/x", false},     // not the API
		{"POST", "/apis", false},         // not the API
		{"GET", "/", false},              // WebSocket upgrades
		{"POST", "/api/../signin", true}, // uncleaned paths are judged as sent
	}
	for _, c := range cases {
		if got := needsJSON(c.method, c.path); got != c.want {
			t.Errorf("needsJSON(%s %s) = %v, want %v", c.method, c.path, got, c.want)
		}
	}
	types := []struct {
		ct   string
		want bool
	}{
		{"application/json", true},
		{"application/json; charset=utf-8", true},
		{"Application/JSON", true},
		{"application/merge-patch+json", true},
		{"", false},
		{"text/plain", false},
		{"text/plain; charset=application/json", false},
		{"application/x-www-form-urlencoded", false},
		{"multipart/form-data; boundary=x", false},
		{"text/json+json", false},
		{"application/json;;", false},
	}
	for _, c := range types {
		if got := isJSON(c.ct); got != c.want {
			t.Errorf("isJSON(%q) = %v, want %v", c.ct, got, c.want)
		}
	}
}

// TestCrossSitePost: the request a web page can send without a preflight
// is refused on a tokenless loopback gateway, in each API's error shape,
// before anything behind the check runs; a JSON request is served.
func TestCrossSitePost(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "talon.json"), []byte(`{}`))
	reached := 0
	ts := startServerWith(t, dir, nil, func(o *Options) {
		o.API = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { reached++; w.WriteHeader(http.StatusNoContent) })
	})
	chat := `{"model":"openclaw","messages":[{"role":"user","content":"/tools"}]}`
	cases := []struct {
		name, method, path, ct string
		status                 int
		errField, errValue     string // a member of "error" the answer must hold
	}{
		{"text/plain chat", "POST", "/v1/chat/completions", "text/plain", 415, "type", errInvalidRequest},
		{"a form's chat", "POST", "/v1/chat/completions", "application/x-www-form-urlencoded", 415, "type", errInvalidRequest},
		{"a multipart chat", "POST", "/v1/chat/completions", "multipart/form-data; boundary=b", 415, "type", errInvalidRequest},
		{"no type", "POST", "/v1/chat/completions", "", 415, "type", errInvalidRequest},
		{"text/plain to the platform", "POST", "/api/tenants", "text/plain", 415, "code", "unsupported_media_type"},
		{"a bodiless delete", "DELETE", "/api/tenants/acme", "", 415, "code", "unsupported_media_type"},
		{"JSON chat", "POST", "/v1/chat/completions", "application/json; charset=utf-8", 200, "", ""},
		{"JSON delete", "DELETE", "/api/tenants/acme", "application/json", 204, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := reached
			req, _ := http.NewRequest(c.method, ts.url+c.path, strings.NewReader(chat))
			if c.ct != "" {
				req.Header.Set("Content-Type", c.ct)
			}
			req.Header.Set("Origin", "http://evil.example")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := readBody(resp)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, body)
			}
			if c.errField == "" {
				return
			}
			var e struct{ Error map[string]string }
			if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error[c.errField] != c.errValue || !strings.Contains(e.Error["message"], "send application/json") {
				t.Errorf("body %s, want error.%s %q and a message saying what to send", body, c.errField, c.errValue)
			}
			if reached != before {
				t.Error("the refused request reached the platform API")
			}
		})
	}
}

// TestForeignHost: a rebinding name is refused on HTTP and WebSocket
// alike, naming the Host and the key that would admit it; a host of the
// operator's allowedOrigins is served.
func TestForeignHost(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "talon.json"), []byte(`{gateway:{controlUi:{allowedOrigins:["https://talon.example.com"]}}}`))
	ts := startServer(t, dir, nil)
	port := ts.url[strings.LastIndexByte(ts.url, ':')+1:]
	cases := []struct {
		host   string
		status int
	}{
		{"rebind.evil.example:" + port, 421},
		{"127.0.0.1.nip.io:" + port, 421},
		{"talon.example.com", 200},
		{"localhost:" + port, 200},
	}
	for _, c := range cases {
		t.Run(c.host, func(t *testing.T) {
			req, _ := http.NewRequest("GET", ts.url+"/v1/models", nil)
			req.Host = c.host
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := readBody(resp)
			if resp.StatusCode != c.status {
				t.Fatalf("GET: status %d, want %d: %s", resp.StatusCode, c.status, body)
			}
			if c.status == 421 && (!strings.Contains(body, `Host \"`+c.host+`\"`) || !strings.Contains(body, "gateway.controlUi.allowedOrigins")) {
				t.Errorf("GET: the refusal does not name the Host and the key: %s", body)
			}
			// The WebSocket upgrade of the same Host, same-origin as a
			// rebinding page would be.
			ws, resp, err := dialHostOrigin(ts.url, c.host, "http://"+c.host)
			if c.status == 421 {
				if err == nil || resp == nil || resp.StatusCode != 421 {
					t.Errorf("WS: %v (%v), want a 421 refusal", err, resp)
				}
				return
			}
			if err != nil {
				t.Fatalf("WS: %v", err)
			}
			ws.CloseNow()
		})
	}
}

// TestWSOrigin: a browser Origin that is not the gateway's own is refused
// before any frame, with or without a token, on a tokenless loopback
// gateway (where it used to get operator.admin) and on one with a token;
// the gateway's own origin and a listed one connect.
func TestWSOrigin(t *testing.T) {
	ui := `controlUi:{allowedOrigins:["http://localhost:5173"]}`
	for name, cfg := range map[string]string{
		"tokenless": `{gateway:{` + ui + `}}`,
		"token":     `{gateway:{auth:{token:"` + wsToken + `"},` + ui + `}}`,
	} {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "talon.json"), []byte(cfg))
		ts := startServer(t, dir, nil)
		self := "http://" + strings.TrimPrefix(ts.url, "http://")
		cases := []struct {
			origin, token string
			ok            bool
		}{
			{"http://evil.example", "", false},
			{"http://evil.example", wsToken, false},
			{"http://localhost:8080", wsToken, false},
			{"null", wsToken, false},
			{self, wsToken, true},
			{"http://localhost:5173", wsToken, true},
			{"", wsToken, true},
		}
		for _, c := range cases {
			t.Run(name+" gateway, origin "+c.origin+", token "+c.token, func(t *testing.T) {
				ws, resp, err := dialHostOrigin(ts.url, "", c.origin)
				if !c.ok {
					if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
						t.Fatalf("%v (%v), want a 403 refusal of the upgrade", err, resp)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				r := &rawWS{t: t, ws: ws}
				t.Cleanup(func() { ws.CloseNow() })
				r.challenge()
				r.send(connectReq(connectParams(c.token, 3, 4, protocol.ScopeAdmin)))
				if f, code, err := r.next(); err != nil || !f.OK {
					t.Fatalf("connect: %+v %d %v", f.Error, code, err)
				}
			})
		}
	}
}

// TestDefaultToken: the token talon serve keeps closes a gateway whose
// config sets none; TALON_GATEWAY_TOKEN still wins.
func TestDefaultToken(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		good string
		bad  []string
	}{
		{"the kept token", nil, "kept-token-0123456789", []string{"", "nope"}},
		{"the environment's", map[string]string{"TALON_GATEWAY_TOKEN": "env-token-0123456789"}, "env-token-0123456789", []string{"", "kept-token-0123456789"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "talon.json"), []byte(`{}`))
			ts := startServerWith(t, dir, c.env, func(o *Options) { o.DefaultToken = "kept-token-0123456789" })
			for _, tok := range append([]string{c.good}, c.bad...) {
				want := 401
				if tok == c.good {
					want = 200
				}
				if got := getModels(t, ts.url, tok, ""); got != want {
					t.Errorf("token %q: status %d, want %d", tok, got, want)
				}
			}
		})
	}
}

func getModels(t *testing.T, base, token, tenant string) int {
	t.Helper()
	resp, err := getModelsResp(base, token, tenant)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func getModelsResp(base, token, tenant string) (*http.Response, error) {
	req, _ := http.NewRequest("GET", base+"/v1/models", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if tenant != "" {
		req.Header.Set("X-Tenant-ID", tenant)
	}
	return http.DefaultClient.Do(req)
}

// dialHostOrigin opens a WebSocket to the gateway at base (http://…) with a Host
// and an Origin header ("" for the defaults: the URL's host, none).
func dialHostOrigin(base, host, origin string) (*websocket.Conn, *http.Response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h := http.Header{}
	if origin != "" {
		h.Set("Origin", origin)
	}
	u, _ := url.Parse(base)
	u.Scheme = "ws"
	return websocket.Dial(ctx, u.String(), &websocket.DialOptions{Host: host, HTTPHeader: h})
}

// TestHandlerWithoutListen: a server used as a handler without Listen
// judges Hosts as a loopback one does.
func TestHandlerWithoutListen(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "talon.json"), []byte(`{}`))
	s, err := New(Options{StateDir: dir, Tools: mustRegistry(t), Env: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	for host, want := range map[string]int{"example.com": 421, "127.0.0.1": 200} {
		req := httptest.NewRequest("GET", "/healthz", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Host %s: %d, want %d", host, rec.Code, want)
		}
	}
}
