package gateway

import (
	goruntime "runtime"
	"runtime/debug"
	"sort"
	"time"

	"talon/internal/config"
	"talon/protocol"
)

// Version is the gateway's version as hello-ok and status report it: the
// module version of the build, "(devel)" for a work tree.
var Version = func() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}()

func init() {
	register("health", "", func(s *Server, c *call) (any, error) {
		return s.health(c.t, c.rt), nil
	})
	register("status", protocol.ScopeRead, (*Server).status)
	register("models.list", protocol.ScopeRead, modelsList)
}

// health is the health snapshot: hello-ok carries it too.
func (s *Server) health(t *tenant, rt *runtime) map[string]any {
	cfg := rt.file.Config
	return map[string]any{
		"ok":             true,
		"ts":             time.Now().UnixMilli(),
		"uptimeMs":       time.Since(s.started).Milliseconds(),
		"defaultAgentId": cfg.DefaultAgentID(),
		"agents":         cfg.AgentIDs(),
	}
}

func (s *Server) status(c *call) (any, error) {
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	cfg := c.rt.file.Config
	return map[string]any{
		"version":      Version,
		"uptimeMs":     time.Since(s.started).Milliseconds(),
		"tenant":       c.t.id,
		"configPath":   c.t.configPath,
		"configHash":   c.rt.file.Hash,
		"stateDir":     c.t.dir,
		"connections":  len(s.hubs.of(c.t)),
		"agents":       cfg.AgentIDs(),
		"defaultModel": cfg.AgentModel(cfg.DefaultAgentID()),
		"runtime": map[string]any{
			"goroutines": goruntime.NumGoroutine(),
			"heapBytes":  ms.HeapAlloc,
			"sysBytes":   ms.Sys,
		},
	}, nil
}

// modelsList lists the models the config declares, plus the offline
// inspect model that is always there.
func modelsList(_ *Server, c *call) (any, error) {
	var p struct {
		View string `json:"view"`
	}
	if err := c.params(&p); err != nil {
		return nil, err
	}
	switch p.View {
	case "", "default", "configured", "all":
	default:
		return nil, protocol.Errorf(`invalid models.list params: view must be "default", "configured" or "all"`)
	}
	type model struct {
		ID            string   `json:"id"`
		Name          string   `json:"name"`
		Provider      string   `json:"provider"`
		ContextWindow *float64 `json:"contextWindow,omitempty"`
		Reasoning     *bool    `json:"reasoning,omitempty"`
	}
	cfg := c.rt.file.Config
	names := make([]string, 0, len(cfg.Models.Providers))
	for n := range cfg.Models.Providers {
		names = append(names, n)
	}
	sort.Strings(names)
	out := []model{}
	for _, n := range names {
		for _, m := range cfg.Models.Providers[n].Models {
			name := m.Name
			if name == "" {
				name = m.ID
			}
			out = append(out, model{ID: m.ID, Name: name, Provider: n, ContextWindow: m.ContextWindow, Reasoning: m.Reasoning})
		}
	}
	out = append(out, model{ID: config.InspectModel, Name: "Talon inspect (offline, deterministic)", Provider: config.InspectProvider})
	return map[string]any{"models": out}, nil
}
