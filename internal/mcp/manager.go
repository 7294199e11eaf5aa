package mcp

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	"talon/internal/config"
	"talon/internal/netguard"
	"talon/internal/tools"
)

// Manager is one tenant's MCP servers. It lives across config reloads;
// see the package doc for the lifecycle. All methods are safe for
// concurrent use.
type Manager struct {
	log *slog.Logger
	wg  sync.WaitGroup // session watchers
	// guard, when set, is the network guard every url server is reached
	// through: a tenant's servers may call public addresses only.
	guard *netguard.Options

	mu      sync.Mutex
	servers map[string]*server
	closed  bool
}

// NewManager returns a Manager with no servers; Configure gives it some.
// A nil log discards.
func NewManager(log *slog.Logger) *Manager {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{log: log, servers: map[string]*server{}}
}

// NewGuardedManager is NewManager for a tenant: every url server is
// reached through netguard with opts, at each connect and redirect.
func NewGuardedManager(log *slog.Logger, opts netguard.Options) *Manager {
	m := NewManager(log)
	m.guard = &opts
	return m
}

// Configure applies mcp.servers: servers whose config changed or that are
// gone (or now enabled:false) are stopped before it returns; unchanged
// ones keep running; new ones start on first use. After Close it does
// nothing.
func (m *Manager) Configure(servers map[string]config.MCPServer) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	next := map[string]*server{}
	for name, cfg := range servers {
		if cfg.Enabled != nil && !*cfg.Enabled {
			continue
		}
		if old, ok := m.servers[name]; ok && reflect.DeepEqual(old.cfg, cfg) {
			next[name] = old
			continue
		}
		next[name] = newServer(m, name, cloneConfig(cfg))
	}
	var stale []*server
	for name, old := range m.servers {
		if next[name] != old {
			stale = append(stale, old)
		}
	}
	m.servers = next
	m.mu.Unlock()
	shutdownAll(stale)
}

// cloneConfig copies the maps and slices, so a caller reusing its config
// value cannot change a running server's.
func cloneConfig(c config.MCPServer) config.MCPServer {
	c.Args = slices.Clone(c.Args)
	c.Env = maps.Clone(c.Env)
	c.Headers = maps.Clone(c.Headers)
	return c
}

func shutdownAll(list []*server) {
	var wg sync.WaitGroup
	for _, s := range list {
		wg.Go(s.shutdown)
	}
	wg.Wait()
}

// Close stops every server and returns once their processes are reaped
// and every goroutine the Manager started has ended. The Manager is
// unusable afterwards.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	all := slices.Collect(maps.Values(m.servers))
	m.servers = map[string]*server{}
	m.mu.Unlock()
	shutdownAll(all)
	m.wg.Wait() // sessions ended by a broken connection, still tearing down
}

func (m *Manager) server(name string) (*server, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, fmt.Errorf("MCP server %q: the MCP manager is closed", name)
	}
	s, ok := m.servers[name]
	if !ok {
		return nil, fmt.Errorf("MCP server %q is not configured (or enabled: false)", name)
	}
	return s, nil
}

// Tools returns the tools of server name as Talon tools, starting the
// server if it is not running. The list is cached until the server says it
// changed. An error names the server and says what failed (a crashed
// server's error says when it will be retried).
func (m *Manager) Tools(ctx context.Context, name string) ([]tools.Tool, error) {
	s, err := m.server(name)
	if err != nil {
		return nil, err
	}
	return s.tools(ctx)
}

func (m *Manager) call(ctx context.Context, server, mcpName string, args map[string]any) (tools.Result, error) {
	s, err := m.server(server)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	return s.call(ctx, mcpName, args)
}

// State is a server's state as operators see it.
type State string

const (
	// StateStopped: not started yet (servers start on first use), or
	// stopped cleanly.
	StateStopped State = "stopped"
	// StateRunning: connected; PID and Tools are set.
	StateRunning State = "running"
	// StateFailed: the last start failed or the server crashed; LastError
	// says why and RetryAt when the next start may happen.
	StateFailed State = "failed"
)

// ServerStatus is one configured server, for operators.
type ServerStatus struct {
	Name      string    `json:"name"`
	Transport string    `json:"transport"` // "stdio" or "http"
	State     State     `json:"state"`
	PID       int       `json:"pid,omitempty"`   // stdio servers while running
	Tools     []string  `json:"tools,omitempty"` // Talon tool names while running
	LastError string    `json:"lastError,omitempty"`
	RetryAt   time.Time `json:"retryAt,omitzero"` // when failed and backing off
}

// Servers reports every configured (enabled) server, sorted by name.
func (m *Manager) Servers() []ServerStatus {
	m.mu.Lock()
	list := slices.Collect(maps.Values(m.servers))
	m.mu.Unlock()
	out := make([]ServerStatus, 0, len(list))
	for _, s := range list {
		out = append(out, s.status())
	}
	slices.SortFunc(out, func(a, b ServerStatus) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

func (s *server) status() ServerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := ServerStatus{Name: s.name, Transport: s.transport(), State: StateStopped, LastError: s.lastErr}
	switch {
	case s.cur != nil:
		st.State = StateRunning
		if s.cur.proc != nil {
			st.PID = s.cur.proc.pid()
		}
		st.Tools = make([]string, 0, len(s.cur.tools))
		for _, t := range s.cur.tools {
			st.Tools = append(st.Tools, t.Name())
		}
	case s.failures > 0:
		st.State = StateFailed
		st.RetryAt = s.retryAt
	}
	return st
}
