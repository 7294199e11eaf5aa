package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sort"
	"time"

	"talon/internal/config"
	"talon/internal/policy"
	"talon/protocol"
)

// A method is one WS RPC: the scope it needs ("" for none) and its
// handler. Files named methods_*.go register theirs in init, so the
// method table is the set of those files.
type method struct {
	scope string
	fn    func(s *Server, c *call) (any, error)
}

var methods = map[string]method{}

func register(name, scope string, fn func(s *Server, c *call) (any, error)) {
	if _, dup := methods[name]; dup {
		panic("gateway: method registered twice: " + name)
	}
	methods[name] = method{scope: scope, fn: fn}
}

// methodNames are the methods served, for hello-ok's features.
func methodNames() []string {
	out := make([]string, 0, len(methods)+1)
	out = append(out, "connect")
	for n := range methods {
		out = append(out, n)
	}
	sort.Strings(out[1:])
	return out
}

// eventNames are the events a client may receive.
var eventNames = []string{
	protocol.EventChallenge, protocol.EventTick, protocol.EventShutdown, protocol.EventPresence,
	protocol.EventChat, protocol.EventAgent, protocol.EventApprovalRequest, protocol.EventApprovalResolved,
	protocol.EventSessionsChanged,
}

// call is one request being served.
type call struct {
	ctx context.Context
	c   *conn
	req protocol.Request
	t   *tenant
	// rt is the tenant's runtime when the call began: the config in force
	// (reloaded first if the file changed).
	rt *runtime
}

// params decodes the request's params into v. Absent params are {};
// unknown fields are tolerated (clients of newer upstreams send more);
// wrong types are errors naming the field.
func (c *call) params(v any) error {
	return asError(decodeParams(c.req.Method, c.req.Params, v))
}

// asError keeps a nil *protocol.Error from becoming a non-nil error.
func asError(e *protocol.Error) error {
	if e == nil {
		return nil
	}
	return e
}

func decodeParams(method string, raw json.RawMessage, v any) *protocol.Error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	if raw[0] != '{' {
		return protocol.Errorf("invalid %s params: params must be an object", method)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return protocol.Errorf("invalid %s params: %s must be %s, not %s", method, te.Field, jsonKind(te.Type.Kind().String()), te.Value)
		}
		return protocol.Errorf("invalid %s params: %v", method, err)
	}
	return nil
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct", "ptr", "interface":
		return "an object"
	}
	return "a number"
}

// accept sends the first response of a two-phase method; the handler's
// return value is the second.
func (c *call) accept(payload any) { c.c.sendResponse(c.req.ID, payload, nil) }

// answeredT is the type of answered.
type answeredT struct{}

// answered is what a handler returns when it has sent the request's last
// response itself (respondNow, or a run that answers later): dispatch
// then sends nothing.
var answered = answeredT{}

// respondNow sends a one-response method's answer before the handler
// goes on, so that what it starts next (a run's events) reaches the
// client after the answer; the handler then returns answered.
func (c *call) respondNow(payload any) { c.c.sendResponse(c.req.ID, payload, nil) }

// dispatch serves one request and sends its response.
func (s *Server) dispatch(c *conn, req protocol.Request) {
	payload, err := s.serveCall(c, req)
	if _, done := payload.(answeredT); done && err == nil {
		return
	}
	var pe *protocol.Error
	if err != nil && !errors.As(err, &pe) {
		s.log.Error("ws method failed", "method", req.Method, "conn", c.id, "tenant", c.t.id, "err", err)
		pe = &protocol.Error{Code: protocol.CodeUnavailable, Message: req.Method + " failed; the gateway log has the details"}
	}
	c.sendResponse(req.ID, payload, pe)
}

func (s *Server) serveCall(c *conn, req protocol.Request) (payload any, err error) {
	m, ok := methods[req.Method]
	if !ok {
		if req.Method == "connect" {
			return nil, protocol.Errorf("connect is only valid as the first request")
		}
		return nil, protocol.Errorf("unknown method: %s", req.Method)
	}
	if !c.has(m.scope) {
		return nil, protocol.Errorf("missing scope: %s", m.scope)
	}
	if s.Draining(c.t.id) {
		return nil, movingWS()
	}
	rt, err := c.t.current(s)
	if err != nil {
		return nil, fmt.Errorf("loading the tenant's config: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("ws method panicked", "method", req.Method, "panic", p, "stack", string(debug.Stack()))
			payload, err = nil, &protocol.Error{Code: protocol.CodeUnavailable, Message: req.Method + " failed; the gateway log has the details"}
		}
	}()
	return m.fn(s, &call{ctx: c.ctx, c: c, req: req, t: c.t, rt: rt})
}

// hello builds the connect response.
func (s *Server) hello(c *conn, rt *runtime, version int) *protocol.HelloOK {
	cfg := rt.file.Config
	scopes := make([]string, 0, len(c.scopes))
	for sc := range c.scopes {
		scopes = append(scopes, sc)
	}
	slices.Sort(scopes)
	authMode := "none"
	switch {
	case cfg.Gateway.Auth.Password != "":
		authMode = "password"
	case len(c.t.token(cfg)) > 0:
		authMode = "token"
	}
	return &protocol.HelloOK{
		Type:     "hello-ok",
		Protocol: version,
		Server:   protocol.ServerInfo{Version: Version, ConnID: c.id},
		Features: protocol.Features{Methods: methodNames(), Events: eventNames},
		Snapshot: protocol.Snapshot{
			Presence:        s.presence(c.t, c),
			Health:          s.health(c.t, rt),
			StateVersion:    protocol.StateVersion{},
			UptimeMs:        time.Since(s.started).Milliseconds(),
			ConfigPath:      c.t.configPath,
			StateDir:        c.t.dir,
			SessionDefaults: sessionDefaults(cfg),
			AuthMode:        authMode,
		},
		Auth:   &protocol.HelloAuth{Role: c.role, Scopes: scopes},
		Policy: protocol.HelloPolicy{MaxPayload: defaultMaxPayload, MaxBufferedBytes: defaultMaxBuffered, TickIntervalMs: s.tickInterval().Milliseconds()},
	}
}

func sessionDefaults(cfg *config.Config) *protocol.SessionDefaults {
	id := cfg.DefaultAgentID()
	main := policy.MainSessionKey(cfg, id)
	scope := "per-sender"
	if main == "global" {
		scope = "global"
	}
	return &protocol.SessionDefaults{DefaultAgentID: id, MainKey: policy.MainKey(cfg), MainSessionKey: main, Scope: scope}
}

// presenceMax bounds hello-ok's presence list. Listing every client made
// connecting N clients cost O(N²) (≈ 100 MB of JSON for 1,000 clients,
// most of their handshake time); a client that wants more asks status.
const presenceMax = 64

// presence lists c first, then up to presenceMax-1 other clients of the
// tenant, the most recently connected first.
func (s *Server) presence(t *tenant, c *conn) []protocol.Presence {
	others := s.hubs.of(t)
	others = slices.DeleteFunc(others, func(x *conn) bool { return x == c })
	if len(others) > presenceMax-1 {
		slices.SortFunc(others, func(a, b *conn) int { return b.connected.Compare(a.connected) })
		others = others[:presenceMax-1]
	}
	out := make([]protocol.Presence, 0, len(others)+1)
	for _, x := range append([]*conn{c}, others...) {
		scopes := make([]string, 0, len(x.scopes))
		for sc := range x.scopes {
			scopes = append(scopes, sc)
		}
		slices.Sort(scopes)
		out = append(out, protocol.Presence{
			Host: x.client.DisplayName, Mode: x.client.Mode, Ts: x.connected.UnixMilli(),
			Roles: []string{x.role}, Scopes: scopes, ClientID: x.client.ID, ConnID: x.id,
		})
	}
	return out
}
