package gateway

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"talon/protocol"
	"talon/protocol/client"
)

const wsToken = "ws-test-token"

// startWS starts a gateway whose config sets a token (and whatever extra
// JSON members are given) and returns its ws:// URL.
func startWS(t testing.TB, extra string) (*testServer, string) {
	t.Helper()
	dir := t.TempDir()
	cfg := `{"gateway":{"auth":{"token":"` + wsToken + `"}}` + extra + `}`
	writeFile(t, filepath.Join(dir, "talon.json"), []byte(cfg))
	ts := startServer(t, dir, nil)
	return ts, "ws" + strings.TrimPrefix(ts.url, "http")
}

// rawWS is a WebSocket client that sends and reads frames as they are,
// for the error paths a well-behaved client never takes.
type rawWS struct {
	t  *testing.T
	ws *websocket.Conn
}

func dialRaw(t *testing.T, url string, h http.Header) *rawWS {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	ws.SetReadLimit(64 << 20)
	t.Cleanup(func() { _ = ws.CloseNow() })
	return &rawWS{t: t, ws: ws}
}

func (r *rawWS) send(v any) {
	r.t.Helper()
	b, ok := v.([]byte)
	if !ok {
		var err error
		if b, err = json.Marshal(v); err != nil {
			r.t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.ws.Write(ctx, websocket.MessageText, b); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

// next reads one frame; a closed connection returns its close status.
func (r *rawWS) next() (protocol.Frame, websocket.StatusCode, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, data, err := r.ws.Read(ctx)
	if err != nil {
		return protocol.Frame{}, websocket.CloseStatus(err), err
	}
	var f protocol.Frame
	if err := json.Unmarshal(data, &f); err != nil {
		r.t.Fatalf("frame %s: %v", data, err)
	}
	return f, -1, nil
}

func (r *rawWS) challenge() protocol.Challenge {
	r.t.Helper()
	f, _, err := r.next()
	if err != nil || f.Type != "event" || f.Event != protocol.EventChallenge {
		r.t.Fatalf("first frame = %+v, %v; want connect.challenge", f, err)
	}
	var c protocol.Challenge
	if err := json.Unmarshal(f.Payload, &c); err != nil || c.Nonce == "" || c.Ts == 0 {
		r.t.Fatalf("challenge payload %s: %v", f.Payload, err)
	}
	return c
}

func connectParams(token string, min, max int, scopes ...string) protocol.ConnectParams {
	return protocol.ConnectParams{
		MinProtocol: min, MaxProtocol: max,
		Client: protocol.ClientInfo{ID: "test", Version: "1", Platform: "linux", Mode: "test"},
		Role:   "operator", Scopes: scopes,
		Auth: &protocol.ConnectAuth{Token: token},
	}
}

func connectReq(p any) map[string]any {
	return map[string]any{"type": "req", "id": "c1", "method": "connect", "params": p}
}

// TestHandshakeErrors covers every way a handshake fails: the response
// (if any) and the close code.
func TestHandshakeErrors(t *testing.T) {
	_, url := startWS(t, "")
	big := strings.Repeat("x", 70<<10)
	cases := []struct {
		name      string
		frame     any
		wantMsg   string // "" = no response, only a close
		wantClose websocket.StatusCode
	}{
		{"not JSON", []byte("hello"), "", protocol.ClosePolicy},
		{"an event first", map[string]any{"type": "event", "event": "x"}, "", protocol.ClosePolicy},
		{"another method first", map[string]any{"type": "req", "id": "1", "method": "health"}, "invalid handshake: first request must be connect", protocol.ClosePolicy},
		{"params not an object", map[string]any{"type": "req", "id": "1", "method": "connect", "params": "x"}, "invalid connect params: params must be an object", protocol.ClosePolicy},
		{"missing protocol", connectReq(map[string]any{"client": map[string]any{"id": "x", "mode": "cli"}}), "invalid connect params: minProtocol and maxProtocol must be integers >= 1", protocol.ClosePolicy},
		{"wrong type", connectReq(map[string]any{"minProtocol": "4"}), "invalid connect params: minProtocol must be a number, not string", protocol.ClosePolicy},
		{"no client id", connectReq(connectParams(wsToken, 4, 4)), "", 0}, // replaced below
		{"protocol mismatch", connectReq(connectParams(wsToken, 5, 6)), "protocol mismatch", protocol.CloseProtocol},
		{"protocol too old", connectReq(connectParams(wsToken, 1, 2)), "protocol mismatch", protocol.CloseProtocol},
		{"bad token", connectReq(connectParams("nope", 3, 4)), "unauthorized: gateway token mismatch", protocol.ClosePolicy},
		{"no token", connectReq(connectParams("", 3, 4)), "unauthorized: gateway token missing", protocol.ClosePolicy},
		{"node role", connectReq(func() protocol.ConnectParams { p := connectParams(wsToken, 4, 4); p.Role = "node"; return p }()), "unauthorized role: node", protocol.ClosePolicy},
		{"oversized pre-auth frame", connectReq(map[string]any{"minProtocol": 4, "pad": big}), "", websocket.StatusMessageTooBig},
	}
	cases[6].frame = connectReq(func() protocol.ConnectParams { p := connectParams(wsToken, 4, 4); p.Client.ID = ""; return p }())
	cases[6].wantMsg, cases[6].wantClose = "invalid connect params: client.id is required", protocol.ClosePolicy
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := dialRaw(t, url, nil)
			r.challenge()
			r.send(tc.frame)
			f, code, err := r.next()
			if tc.wantMsg != "" {
				if err != nil {
					t.Fatalf("want an error response, got close %d: %v", code, err)
				}
				if f.Type != "res" || f.OK || f.Error == nil || f.Error.Code != protocol.CodeInvalidRequest || !strings.HasPrefix(f.Error.Message, tc.wantMsg) {
					t.Fatalf("response = %+v (error %+v), want INVALID_REQUEST %q", f, f.Error, tc.wantMsg)
				}
				_, code, err = r.next()
			}
			if err == nil || code != tc.wantClose {
				t.Fatalf("close = %d (%v), want %d", code, err, tc.wantClose)
			}
		})
	}
}

func TestHandshakeTimeout(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "talon.json"), []byte(`{}`))
	ts := startServer(t, dir, nil)
	ts.srv.opts.HandshakeTimeout = 200 * time.Millisecond
	r := dialRaw(t, "ws"+strings.TrimPrefix(ts.url, "http"), nil)
	r.challenge()
	_, code, err := r.next() // send nothing
	if err == nil || code != protocol.ClosePolicy {
		t.Fatalf("close = %d (%v), want 1008", code, err)
	}
}

func TestMissingProtocolDetails(t *testing.T) {
	_, url := startWS(t, "")
	r := dialRaw(t, url, nil)
	r.challenge()
	r.send(connectReq(connectParams(wsToken, 5, 7)))
	f, _, err := r.next()
	if err != nil {
		t.Fatal(err)
	}
	d, _ := json.Marshal(f.Error.Details)
	if string(d) != `{"clientMaxProtocol":7,"clientMinProtocol":5,"expectedProtocol":4}` {
		t.Fatalf("details = %s", d)
	}
}

// TestHello checks hello-ok for both protocol versions clients send.
func TestHello(t *testing.T) {
	_, url := startWS(t, "")
	for _, v := range [][2]int{{3, 3}, {4, 4}, {3, 4}, {1, 9}} {
		t.Run(strconv.Itoa(v[0])+"-"+strconv.Itoa(v[1]), func(t *testing.T) {
			r := dialRaw(t, url, nil)
			r.challenge()
			r.send(connectReq(connectParams(wsToken, v[0], v[1], protocol.ScopeRead)))
			f, _, err := r.next()
			if err != nil || !f.OK || f.ID != "c1" {
				t.Fatalf("connect = %+v, %v", f, err)
			}
			var h protocol.HelloOK
			if err := json.Unmarshal(f.Payload, &h); err != nil {
				t.Fatal(err)
			}
			want := min(v[1], 4)
			if h.Type != "hello-ok" || h.Protocol != want || h.Server.ConnID == "" || h.Policy.MaxPayload != 25<<20 || h.Policy.TickIntervalMs != 30000 {
				t.Fatalf("hello = %+v", h)
			}
			if !slices.Contains(h.Features.Methods, "health") || !slices.Contains(h.Features.Events, "chat") {
				t.Fatalf("features = %+v", h.Features)
			}
			for _, m := range h.Features.Methods {
				if _, ok := methods[m]; !ok && m != "connect" {
					t.Errorf("advertised method %q is not served", m)
				}
			}
			if h.Auth == nil || h.Auth.Role != "operator" || !slices.Equal(h.Auth.Scopes, []string{protocol.ScopeRead}) {
				t.Fatalf("auth = %+v", h.Auth)
			}
			if h.Snapshot.SessionDefaults == nil || h.Snapshot.SessionDefaults.MainSessionKey != "agent:main:main" || len(h.Snapshot.Presence) == 0 {
				t.Fatalf("snapshot = %+v", h.Snapshot)
			}
		})
	}
}

// TestCallErrors covers the request errors after a good handshake.
func TestCallErrors(t *testing.T) {
	_, url := startWS(t, "")
	ctx := context.Background()
	read, err := client.Dial(ctx, url, client.Options{Token: wsToken, Scopes: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer read.Close()
	cases := []struct {
		method string
		params any
		want   string
	}{
		{"nope.nothing", nil, "unknown method: nope.nothing"},
		{"connect", nil, "connect is only valid as the first request"},
		{"status", nil, "missing scope: operator.read"},
		{"health", nil, ""},
	}
	for _, tc := range cases {
		err := read.Call(ctx, tc.method, tc.params, nil)
		var pe *protocol.Error
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.method, err)
		case tc.want != "" && (!errors.As(err, &pe) || pe.Code != protocol.CodeInvalidRequest || pe.Message != tc.want):
			t.Errorf("%s: err = %v, want %q", tc.method, err, tc.want)
		}
	}
	admin, err := client.Dial(ctx, url, client.Options{Token: wsToken})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	err = admin.Call(ctx, "models.list", map[string]any{"view": 3}, nil)
	if err == nil || !strings.Contains(err.Error(), "invalid models.list params: view must be a string, not number") {
		t.Fatalf("bad params: %v", err)
	}
	var models struct {
		Models []struct{ ID, Provider string }
	}
	if err := admin.Call(ctx, "models.list", nil, &models); err != nil || len(models.Models) == 0 || models.Models[len(models.Models)-1].ID != "inspect" {
		t.Fatalf("models.list = %+v, %v", models, err)
	}
}

// TestFrameAfterHello: a malformed frame gets an error response and the
// connection stays usable; an oversized one (over maxPayload) closes it.
func TestFrameAfterHello(t *testing.T) {
	_, url := startWS(t, "")
	r := dialRaw(t, url, nil)
	r.challenge()
	r.send(connectReq(connectParams(wsToken, 4, 4, protocol.ScopeRead)))
	if f, _, err := r.next(); err != nil || !f.OK {
		t.Fatalf("connect: %+v %v", f, err)
	}
	r.send([]byte(`{"type":"req","id":"x"}`))
	f, _, err := r.next()
	if err != nil || f.OK || f.Error == nil || !strings.HasPrefix(f.Error.Message, "invalid frame") {
		t.Fatalf("got %+v %v", f, err)
	}
	r.send(map[string]any{"type": "req", "id": "h", "method": "health"})
	if f, _, err = r.next(); err != nil || !f.OK || f.ID != "h" {
		t.Fatalf("health after a bad frame: %+v %v", f, err)
	}
	r.send(append(append([]byte(`{"type":"req","id":"big","method":"health","params":{"p":"`), strings.Repeat("x", 26<<20)...), `"}}`...))
	for {
		_, code, err := r.next()
		if err != nil {
			if code != websocket.StatusMessageTooBig {
				t.Fatalf("close = %d, %v; want 1009", code, err)
			}
			break
		}
	}
}

// TestDeviceIdentity checks device proofs: a valid v2 signature over the
// challenge nonce is accepted, a tampered or stale one refused.
func TestDeviceIdentity(t *testing.T) {
	_, url := startWS(t, "")
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	sum := sha256.Sum256(pub)
	id := hex.EncodeToString(sum[:])
	sign := func(nonce string, at int64, version string) *protocol.Device {
		fields := []string{version, id, "test", "test", "operator", "operator.read", strconv.FormatInt(at, 10), wsToken, nonce}
		if version == "v3" {
			fields = append(fields, "linux", "")
		}
		sig := ed25519.Sign(priv, []byte(strings.Join(fields, "|")))
		return &protocol.Device{ID: id, PublicKey: base64.RawURLEncoding.EncodeToString(pub), Signature: base64.RawURLEncoding.EncodeToString(sig), SignedAt: at, Nonce: nonce}
	}
	now := time.Now().UnixMilli()
	cases := []struct {
		name   string
		device func(nonce string) *protocol.Device
		want   string // detail code; "" = accepted
	}{
		{"v2", func(n string) *protocol.Device { return sign(n, now, "v2") }, ""},
		{"v3", func(n string) *protocol.Device { return sign(n, now, "v3") }, ""},
		{"other nonce", func(string) *protocol.Device { return sign("other", now, "v2") }, "DEVICE_AUTH_NONCE_MISMATCH"},
		{"no nonce", func(string) *protocol.Device { d := sign("", now, "v2"); return d }, "DEVICE_AUTH_NONCE_REQUIRED"},
		{"stale", func(n string) *protocol.Device { return sign(n, now-11*60*1000, "v2") }, "DEVICE_AUTH_SIGNATURE_EXPIRED"},
		{"tampered", func(n string) *protocol.Device { d := sign(n, now, "v2"); d.SignedAt++; return d }, "DEVICE_AUTH_SIGNATURE_INVALID"},
		{"wrong id", func(n string) *protocol.Device { d := sign(n, now, "v2"); d.ID = strings.Repeat("0", 64); return d }, "DEVICE_AUTH_DEVICE_ID_MISMATCH"},
		{"bad key", func(n string) *protocol.Device { d := sign(n, now, "v2"); d.PublicKey = "abc"; return d }, "DEVICE_AUTH_PUBLIC_KEY_INVALID"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := dialRaw(t, url, nil)
			ch := r.challenge()
			p := connectParams(wsToken, 4, 4, protocol.ScopeRead)
			p.Device = tc.device(ch.Nonce)
			r.send(connectReq(p))
			f, _, err := r.next()
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if !f.OK {
					t.Fatalf("refused: %+v", f.Error)
				}
				return
			}
			d, _ := f.Error.Details.(map[string]any)
			if f.OK || d["code"] != tc.want {
				t.Fatalf("got ok=%v error=%+v, want %s", f.OK, f.Error, tc.want)
			}
		})
	}
}

// TestTenantScopedConnect: X-Tenant-ID picks the tenant whose token must
// be presented; an unknown tenant reads like a bad token.
func TestTenantScopedConnect(t *testing.T) {
	ts, url := startWS(t, "")
	tdir := filepath.Join(ts.dir, "tenants", "acme")
	writeFile(t, filepath.Join(tdir, "talon.json"), []byte(`{"gateway":{"auth":{"token":"acme-token"}}}`))
	ctx := context.Background()
	for _, tc := range []struct {
		tenant, token string
		ok            bool
	}{
		{"acme", "acme-token", true},
		{"acme", wsToken, false},
		{"", "acme-token", false},
		{"nobody", "acme-token", false},
	} {
		c, err := client.Dial(ctx, url, client.Options{Tenant: tc.tenant, Token: tc.token})
		if (err == nil) != tc.ok {
			t.Errorf("tenant %q token %q: err = %v, want ok=%v", tc.tenant, tc.token, err, tc.ok)
		}
		if err == nil {
			var st struct{ Tenant, StateDir string }
			if err := c.Call(ctx, "status", nil, &st); err != nil || st.Tenant != "acme" || st.StateDir != "." {
				t.Errorf("status = %+v, %v", st, err)
			}
			c.Close()
		} else if !strings.Contains(err.Error(), "unauthorized") {
			t.Errorf("error %v does not say unauthorized", err)
		}
	}
}

// TestTickAndShutdown: ticks carry a per-connection seq; shutdown sends
// a shutdown event and closes with 1012.
func TestTickAndShutdown(t *testing.T) {
	ts, url := startWS(t, "")
	ts.srv.opts.TickInterval = 50 * time.Millisecond
	c, err := client.Dial(context.Background(), url, client.Options{Token: wsToken})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var last int64
	for i := 0; i < 3; i++ {
		f := <-c.Events()
		if f.Event != protocol.EventTick || f.Seq == nil || *f.Seq <= last {
			t.Fatalf("event %d = %+v", i, f)
		}
		last = *f.Seq
	}
	ts.stop()
	sawShutdown := false
	for f := range c.Events() {
		if f.Event == protocol.EventShutdown {
			sawShutdown = true
		}
	}
	if !sawShutdown {
		t.Error("no shutdown event before the close")
	}
	if code := websocket.CloseStatus(errors.Unwrap(c.Err())); code != protocol.CloseRestart {
		t.Errorf("close = %d (%v), want 1012", code, c.Err())
	}
}

// TestHelloPresenceBounded: hello-ok lists the connecting client first and
// at most presenceMax clients in all.
func TestHelloPresenceBounded(t *testing.T) {
	_, url := startWS(t, "")
	for i := range presenceMax + 5 {
		c, err := client.Dial(context.Background(), url, client.Options{Token: wsToken})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		p := c.Hello().Snapshot.Presence
		if want := min(i+1, presenceMax); len(p) != want || p[0].ConnID != c.Hello().Server.ConnID {
			t.Fatalf("client %d: %d presence entries (first %s), want %d starting with itself", i, len(p), p[0].ConnID, want)
		}
	}
}
