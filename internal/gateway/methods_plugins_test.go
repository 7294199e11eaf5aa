package gateway

import (
	"strings"
	"testing"
)

// TestPluginsList: plugins.list says which plugins an agent's runs get,
// and a config.patch enabling one shows at once, without a restart.
func TestPluginsList(t *testing.T) {
	_, url := startWS(t, "")
	c := dialWS(t, url)
	defer c.Close()
	state := func(id string) (bool, string) {
		t.Helper()
		var out pluginsListResult
		mustRPC(t, c, "plugins.list", map[string]any{}, &out)
		if out.AgentID != "main" {
			t.Errorf("agentId = %q, want the default agent", out.AgentID)
		}
		for _, p := range out.Plugins {
			if p.ID == id && p.OverriddenBy == "" {
				return p.Enabled, p.Reason
			}
		}
		t.Fatalf("plugin %s not listed: %+v", id, out.Plugins)
		return false, ""
	}
	if on, why := state("api-tools"); on || why != "bundled (disabled by default)" {
		t.Fatalf("api-tools = %v %q, want off by default", on, why)
	}
	hash := mustCall[configSnapshot](t, c, "config.get", nil).Hash
	mustRPC(t, c, "config.patch", map[string]any{"raw": `{plugins: {entries: {"api-tools": {enabled: true}}}}`, "baseHash": hash}, nil)
	if on, why := state("api-tools"); !on {
		t.Fatalf("after config.patch api-tools = off (%s), want on", why)
	}
	_, msg := rpc(t, c, "plugins.list", map[string]any{"agentId": "ghost"})
	if !strings.Contains(msg, `agent "ghost" is not in the config`) {
		t.Errorf("unknown agent: %q", msg)
	}
}
