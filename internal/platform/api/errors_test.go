package api

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"talon/internal/platform"
	"talon/internal/platform/relay"
	"talon/internal/store"
	"talon/internal/talonproc"
	"talon/protocol"
	"talon/protocol/client"
)

var requestIDRE = regexp.MustCompile(`\(request ([0-9a-f-]{36})\)$`)

// TestFailuresKeepTheirDetailInTheLog: a 500 (the catalog closed under
// the API) and a 502 (a gateway nothing listens on) tell the client a
// fixed message and a request id; the log has the id and what failed.
func TestFailuresKeepTheirDetailInTheLog(t *testing.T) {
	var log talonproc.Buffer
	o := Options{AdminToken: adminTok, Log: slog.New(slog.NewTextHandler(&log, nil))}

	broken := newEnv(t, o)
	broken.createTenant(t, "acme")
	if err := broken.cat.Close(); err != nil {
		t.Fatal(err)
	}

	dead := deadGateway(t)
	unreachable := chatEnv(t, o, dead)
	unreachable.createTenant(t, "acme")
	unreachable.ok(t, 201, "POST", "/api/tenants/acme/installations", `{"slug":"helper"}`, nil)

	cases := []struct {
		name         string
		e            *env
		method, path string
		body         string
		status       int
		code, msg    string
		inLog        string   // what failed, in the log line only
		notInBody    []string // internal text the client must not see
	}{
		{"catalog closed", broken, "GET", "/api/tenants", "", 500, "internal", "internal error",
			"database is closed", []string{"sql", "closed", broken.state}},
		{"gateway unreachable", unreachable, "POST", "/api/tenants/acme/employees/helper/chat", `{"user":"u1","message":"hi"}`, 502, "gateway_error",
			"the gateway could not be reached or dropped the connection; a run that started goes on, and its reply will be in the session history",
			dead, []string{dead, "refused", "dial"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, data := c.e.do(t, c.method, c.path, adminTok, "", c.body)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, data)
			}
			code, msg := errorCode(t, data)
			m := requestIDRE.FindStringSubmatch(msg)
			if code != c.code || m == nil || strings.TrimSuffix(msg, " "+m[0]) != c.msg {
				t.Fatalf("error %s %q, want %s %q and a request id", code, msg, c.code, c.msg)
			}
			for _, s := range c.notInBody {
				if strings.Contains(string(data), s) {
					t.Errorf("the body tells the client %q: %s", s, data)
				}
			}
			line := logLine(t, log.String(), "request="+m[1])
			if !strings.Contains(line, c.inLog) || !strings.Contains(line, fmt.Sprint("status=", c.status)) {
				t.Errorf("the log line %q does not say %q with status %d", line, c.inLog, c.status)
			}
		})
	}
}

// logLine is the one line of log that holds s.
func logLine(t *testing.T, log, s string) string {
	t.Helper()
	var found []string
	for line := range strings.Lines(log) {
		if strings.Contains(line, s) {
			found = append(found, line)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d log lines hold %q:\n%s", len(found), s, log)
	}
	return found[0]
}

// deadGateway is a ws:// URL on loopback that nothing listens on.
func deadGateway(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "ws://" + addr
}

// chatEnv is an env whose chat goes to the gateway at url, with no
// gateway of its own.
func chatEnv(t *testing.T, o Options, url string) *env {
	t.Helper()
	e := &env{state: t.TempDir()}
	rl := relay.New(func(ctx context.Context, tenant string) (*client.Client, error) {
		return client.Dial(ctx, url, client.Options{Tenant: tenant, ClientID: "talon-platform", Mode: "backend"})
	})
	t.Cleanup(rl.Close)
	cat, err := store.OpenCatalog(filepath.Join(t.TempDir(), "platform.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	e.cat = cat
	e.p, err = platform.New(context.Background(), platform.Options{StateDir: e.state, Templates: "testdata/templates", Store: cat, Relay: rl})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(e.p, o))
	t.Cleanup(srv.Close)
	e.url = srv.URL
	return e
}

// TestGatewayRefusals: a gateway's refusal is relayed with its message;
// a spent budget is the gateway's 402, not a failure of the gateway.
func TestGatewayRefusals(t *testing.T) {
	cases := []struct {
		err          error
		status       int
		code, prefix string
	}{
		{&protocol.Error{Code: protocol.CodeBudgetExceeded, Message: "monthly usage budget reached"}, 402, "budget_exceeded", "monthly usage budget reached"},
		{&protocol.Error{Code: protocol.CodeInvalidRequest, Message: "bad"}, 502, "gateway_error", "the gateway refused: bad"},
		{fmt.Errorf("dial: %w", context.DeadlineExceeded), 502, "gateway_error", "the gateway could not be reached"},
	}
	for _, c := range cases {
		ae := gatewayFailed(c.err)
		if ae.status != c.status || ae.code != c.code || !strings.HasPrefix(ae.message, c.prefix) {
			t.Errorf("gatewayFailed(%v) = %d %s %q, want %d %s %q…", c.err, ae.status, ae.code, ae.message, c.status, c.code, c.prefix)
		}
	}
}
