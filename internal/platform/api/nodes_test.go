package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"talon/internal/platform"
	"talon/internal/platform/install"
	"talon/internal/platform/node"
)

// TestNodeRoutes: the node routes are the admin's alone — a tenant's
// token neither lists nodes nor moves itself or another tenant — and a
// platform over its own state dir has no nodes and refuses a move.
func TestNodeRoutes(t *testing.T) {
	e := newEnv(t, Options{AdminToken: adminTok})
	acme := e.createTenant(t, "acme")
	e.createTenant(t, "globex")
	for _, c := range []struct {
		name, method, path, token, body string
		status                          int
		code                            string
	}{
		{"tenant lists nodes", "GET", "/api/nodes", acme, "", http.StatusForbidden, "forbidden"},
		{"tenant moves itself", "POST", "/api/tenants/acme/move", acme, `{"node":"b"}`, http.StatusForbidden, "forbidden"},
		{"tenant moves another", "POST", "/api/tenants/globex/move", acme, `{"node":"b"}`, http.StatusForbidden, "forbidden"},
		{"no token", "POST", "/api/tenants/acme/move", "", `{"node":"b"}`, http.StatusUnauthorized, "unauthorized"},
		{"no node", "POST", "/api/tenants/acme/move", adminTok, `{}`, http.StatusBadRequest, "invalid_node"},
		{"bad node id", "POST", "/api/tenants/acme/move", adminTok, `{"node":"../b"}`, http.StatusBadRequest, "invalid_node"},
		{"unknown field", "POST", "/api/tenants/acme/move", adminTok, `{"node":"b","url":"http://evil"}`, http.StatusBadRequest, ""},
		{"unknown tenant", "POST", "/api/tenants/nobody/move", adminTok, `{"node":"b"}`, http.StatusNotFound, "no_tenant"},
		{"single node", "POST", "/api/tenants/acme/move", adminTok, `{"node":"b"}`, http.StatusConflict, "single_node"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, data := e.do(t, c.method, c.path, c.token, "", c.body)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, data)
			}
			if code, _ := errorCode(t, data); c.code != "" && code != c.code {
				t.Errorf("code %q, want %q", code, c.code)
			}
		})
	}
	var nodes struct{ Nodes []any }
	e.ok(t, http.StatusOK, "GET", "/api/nodes", "", &nodes)
	if nodes.Nodes == nil || len(nodes.Nodes) != 0 {
		t.Errorf("nodes of a single-node platform: %v, want []", nodes.Nodes)
	}
	var list struct {
		Tenants []struct {
			ID, Node  string
			Available bool
		}
	}
	e.ok(t, http.StatusOK, "GET", "/api/tenants", "", &list)
	for _, x := range list.Tenants {
		if x.Node != "local" || !x.Available {
			t.Errorf("tenant %+v, want on local and available", x)
		}
	}
}

// TestNodeErrors: the node API's errors reach a caller as the platform's,
// and an unreachable node's address is not in the answer.
func TestNodeErrors(t *testing.T) {
	for _, c := range []struct {
		name   string
		err    error
		status int
		code   string
	}{
		{"unreachable", fmt.Errorf("node http://10.0.0.9:18789: GET /node/tenants/t1/usage: %w", errors.Join(node.ErrUnreachable, errors.New("connection refused"))), 503, "node_unavailable"},
		{"drained on its node", fmt.Errorf("node http://10.0.0.9:18789: %w", node.ErrMoving), 503, "tenant_moving"},
		{"down by health", &platform.UnavailableError{Tenant: "t1", Node: "a", Reason: "dial tcp 10.0.0.9:18789: refused"}, 503, "node_unavailable"},
		{"no tenant on the node", fmt.Errorf("tenant %q: %w", "t1", install.ErrNoTenant), 404, "no_tenant"},
		{"exists on the node", fmt.Errorf("creating tenant %q: %w", "t1", install.ErrExists), 409, "exists"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := classify(c.err)
			if e.status != c.status || e.code != c.code {
				t.Errorf("%d %s, want %d %s", e.status, e.code, c.status, c.code)
			}
			if strings.Contains(e.message, "10.0.0.9") {
				t.Errorf("the answer names the node's address: %q", e.message)
			}
		})
	}
}
