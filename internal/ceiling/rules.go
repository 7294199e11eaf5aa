package ceiling

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"talon/internal/config"
	"talon/internal/contain"
	"talon/internal/netguard"
	"talon/internal/sandbox"
)

// sandboxedModes are the sandbox modes a tenant may write: both mean every
// session is sandboxed.
var sandboxedModes = []string{"all", "paths-only"}

// dockerKeys are the docker keys a tenant may set. None of them reaches
// the host or loosens the container: binds mount host paths, the profiles
// and capDrop loosen confinement, user can be root, dns/extraHosts/gpus
// reach out, and the resource keys would bypass sandbox.limits, which the
// ceiling holds.
var dockerKeys = []string{"image", "containerPrefix", "env", "setupCommand", "tmpfs", "workdir", "readOnlyRoot", "network"}

func (a *applier) sandboxes() {
	defaults := object(object(object(a.res.Tree, "agents", true), "defaults", true), "sandbox", true)
	a.sandbox("agents.defaults.sandbox", defaults, true)
	a.agents(func(path string, e *config.Value) {
		if sb := object(e, "sandbox", false); sb != nil {
			a.sandbox(path+".sandbox", sb, false)
		}
	})
}

// sandbox holds one sandbox block; the defaults' block also gets the
// tenant defaults for what it leaves unset.
func (a *applier) sandbox(path string, sb *config.Value, defaults bool) {
	switch v := sb.Get("mode"); {
	case v != nil:
		if s, ok := str(v); !ok || !slices.Contains(sandboxedModes, s) {
			a.violate(path+".mode", fmt.Sprintf(`a tenant's sessions always run sandboxed, so mode must be "all" (got %s): "off" and "non-main" would run commands on the host`, show(v)))
			sb.Set("mode", config.NewString("all"))
		}
	case defaults:
		sb.Set("mode", config.NewString("all"))
		a.setDefault(path+".mode", `"all": a tenant's sessions always run sandboxed`)
	}
	if defaults && sb.Get("workspaceAccess") == nil {
		sb.Set("workspaceAccess", config.NewString("rw"))
		a.setDefault(path+".workspaceAccess", `"rw": commands work in the agent workspace, inside the sandbox`)
	}
	if v := sb.Get("backend"); v != nil {
		if s, ok := str(v); !ok || !slices.Contains(a.c.backends, s) {
			a.violate(path+".backend", fmt.Sprintf("the operator lets tenants use the sandbox backends %s (tenants.sandbox.backends; got %s)", strings.Join(a.c.backends, ", "), show(v)))
			sb.Delete("backend")
		}
	}
	if defaults && sb.Get("backend") == nil && !slices.Contains(a.c.backends, sandbox.DefaultBackend()) {
		sb.Set("backend", config.NewString(a.c.backends[0]))
		a.setDefault(path+".backend", fmt.Sprintf("%q: the first backend of tenants.sandbox.backends", a.c.backends[0]))
	}
	a.docker(path+".docker", sb.Get("docker"))
	a.limits(path+".limits", sb, defaults)
}

func (a *applier) docker(path string, d *config.Value) {
	if d == nil || d.Kind != config.Object {
		return
	}
	for _, m := range slices.Clone(d.Members) {
		at := config.JoinKey(path, m.Key)
		switch {
		case m.Key == "network":
			if s, _ := str(m.Value); s != "" && s != "none" && !a.c.network {
				a.violate(at, fmt.Sprintf(`the operator does not let tenant sandboxes have network (tenants.sandbox.network); set it to "none" (got %s)`, show(m.Value)))
				d.Set("network", config.NewString("none"))
			}
		case m.Key == "readOnlyRoot":
			if m.Value.Kind == config.Bool && !m.Value.Bool {
				a.violate(at, "a tenant's container keeps a read-only root file system")
				d.Delete(m.Key)
			}
		case !slices.Contains(dockerKeys, m.Key):
			a.violate(at, fmt.Sprintf("a tenant may set only the docker keys %s: %s would widen the sandbox or bypass its limits (use sandbox.limits)", strings.Join(dockerKeys, ", "), m.Key))
			d.Delete(m.Key)
		}
	}
}

// limits holds sandbox.limits to the ceiling; on the defaults' block an
// unset limit whose built-in value is above the ceiling is set to it.
func (a *applier) limits(path string, sb *config.Value, defaults bool) {
	l := sb.Get("limits")
	for i, lim := range a.c.limits {
		at := config.JoinKey(path, lim.key)
		v := l.Get(lim.key)
		if v == nil {
			if defaults && lim.max < defaultLimits[i].max {
				object(sb, "limits", true).Set(lim.key, config.NewInt(lim.max))
				a.setDefault(at, fmt.Sprintf("%d: the operator's ceiling (tenants.sandbox.limits.%s)", lim.max, lim.key))
			}
			continue
		}
		if v.Kind != config.Number {
			continue // not a number: the config's own validation says so
		}
		if n, err := strconv.ParseFloat(v.Num, 64); err != nil || n > float64(lim.max) {
			a.violate(at, fmt.Sprintf("the operator's ceiling is %d (tenants.sandbox.limits.%s; got %s)", lim.max, lim.key, v.Num))
			l.Set(lim.key, config.NewInt(lim.max))
		}
	}
}

// network holds what the gateway itself calls for the tenant to public
// addresses (and the operator's exceptions).
func (a *applier) network() {
	t := a.res.Tree
	if v := t.Lookup("tools", "network", "allowLoopback"); v != nil && (v.Kind != config.Bool || v.Bool) {
		a.violate("tools.network.allowLoopback", "only the operator's root config lets tools reach loopback; the operator can open one address to tenants in tenants.network.allowHosts")
		t.Lookup("tools", "network").Delete("allowLoopback")
	}
	if b := t.Lookup("browser"); b != nil && b.Kind == config.Object && b.Get("executablePath") != nil {
		// The program the gateway runs for a browser is the operator's
		// choice: a tenant's would run any file on the host.
		a.violate("browser.executablePath", "only the operator's root config chooses the browser program the gateway host runs")
		b.Delete("executablePath")
	}
	a.memoryEndpoint("agents.defaults.memorySearch", t.Lookup("agents", "defaults", "memorySearch"))
	a.agents(func(path string, e *config.Value) {
		a.memoryEndpoint(path+".memorySearch", e.Get("memorySearch"))
	})
	a.channels()
	providers := t.Lookup("models", "providers")
	if providers == nil || providers.Kind != config.Object {
		return
	}
	for _, m := range slices.Clone(providers.Members) {
		base, ok := str(m.Value.Get("baseUrl"))
		if !ok || base == "" {
			continue
		}
		if err := netguard.CheckURL(base, a.c.Net()); err != nil {
			a.violate(config.JoinKey("models.providers", m.Key)+".baseUrl", a.refused("a model provider", err))
			providers.Delete(m.Key)
		}
	}
}

// channelURLs are the keys of a channel block (and of each of its
// accounts) naming a server the gateway connects to for the tenant.
var channelURLs = []string{"apiRoot", "apiUrl", "gatewayUrl"}

// channels holds a tenant's chat channel endpoints to public addresses —
// the gateway connects to them with the tenant's bot tokens — and
// refuses tokenFile, a file on the gateway's host.
func (a *applier) channels() {
	chans := a.res.Tree.Get("channels")
	if chans == nil || chans.Kind != config.Object {
		return
	}
	for _, ch := range chans.Members {
		blocks := []struct {
			path string
			v    *config.Value
		}{{config.JoinKey("channels", ch.Key), ch.Value}}
		if accts := ch.Value.Get("accounts"); accts != nil && accts.Kind == config.Object {
			for _, acct := range accts.Members {
				blocks = append(blocks, struct {
					path string
					v    *config.Value
				}{config.JoinKey(config.JoinKey("channels", ch.Key)+".accounts", acct.Key), acct.Value})
			}
		}
		for _, b := range blocks {
			if b.v == nil || b.v.Kind != config.Object {
				continue
			}
			if b.v.Get("tokenFile") != nil {
				a.violate(b.path+".tokenFile", "a tenant's channel token is in its config (botToken, or a \"${NAME}\" of its env), never a file on the gateway's host")
				b.v.Delete("tokenFile")
			}
			for _, k := range channelURLs {
				raw, ok := str(b.v.Get(k))
				if !ok || raw == "" {
					continue
				}
				check := raw
				if rest, ok := strings.CutPrefix(check, "wss://"); ok {
					check = "https://" + rest
				} else if rest, ok := strings.CutPrefix(check, "ws://"); ok {
					check = "http://" + rest
				}
				if err := netguard.CheckURL(check, a.c.Net()); err != nil {
					a.violate(b.path+"."+k, a.refused("a chat channel's server", err))
					b.v.Delete(k)
				}
			}
		}
	}
}

// memoryEndpoint holds a memorySearch block's remote.baseUrl, which the
// gateway calls with the agent's memory text, as a model provider's.
// Without it the provider's own endpoint applies, itself held above.
func (a *applier) memoryEndpoint(path string, ms *config.Value) {
	remote := ms.Get("remote")
	base, ok := str(remote.Get("baseUrl"))
	if !ok || base == "" {
		return
	}
	if err := netguard.CheckURL(base, a.c.Net()); err != nil {
		a.violate(path+".remote.baseUrl", a.refused("the memory search embeddings endpoint", err))
		remote.Delete("baseUrl")
	}
}

// refused is the rule for a URL netguard refused.
func (a *applier) refused(what string, err error) string {
	return fmt.Sprintf("%s of a tenant must be on the public internet (%v); the operator can open a private address to tenants in tenants.network.allowHosts", what, err)
}

// mcpServers drops the tenant's servers that would run a program or call
// a private address, and offers the operator's declared servers.
func (a *applier) mcpServers() {
	t := a.res.Tree
	declared := func(name string) *config.Value {
		if i := slices.IndexFunc(a.c.mcp, func(m config.Member) bool { return m.Key == name }); i >= 0 {
			return a.c.mcp[i].Value
		}
		return nil
	}
	if servers := t.Lookup("mcp", "servers"); servers != nil && servers.Kind == config.Object {
		for _, m := range slices.Clone(servers.Members) {
			at := config.JoinKey("mcp.servers", m.Key)
			cmd, _ := str(m.Value.Get("command"))
			url, _ := str(m.Value.Get("url"))
			var rule string
			op := declared(m.Key)
			switch {
			case op != nil && config.Equal(op, m.Value):
				// the operator's own definition, as Apply put it there
			case op != nil:
				rule = fmt.Sprintf("the operator declares the MCP server %q for every tenant (tenants.mcp.servers); a tenant cannot redefine it", m.Key)
			case cmd != "":
				at += ".command"
				rule = "a tenant's MCP server cannot run a program on the host; use a url server, or ask the operator to declare this one in tenants.mcp.servers"
			case url != "":
				if err := netguard.CheckURL(url, a.c.Net()); err != nil {
					at += ".url"
					rule = a.refused("an MCP server", err)
				}
			}
			if rule != "" {
				a.violate(at, rule)
				servers.Delete(m.Key)
			}
		}
	}
	if len(a.c.mcp) == 0 {
		return
	}
	servers := object(object(t, "mcp", true), "servers", true)
	for _, m := range a.c.mcp {
		servers.Set(m.Key, m.Value.Clone())
		a.setDefault(config.JoinKey("mcp.servers", m.Key), "declared by the operator in tenants.mcp.servers")
	}
}

// plugins keeps plugins.load.paths inside the tenant directory, the
// gateway's environment out of api-tools, and turns off the compiled-in
// plugins the ceiling does not offer.
func (a *applier) plugins() {
	t := a.res.Tree
	if base, ok := str(t.Lookup("plugins", "entries", "image-gen", "config", "baseUrl")); ok && base != "" {
		if err := netguard.CheckURL(base, a.c.Net()); err != nil {
			a.violate("plugins.entries.image-gen.config.baseUrl", a.refused("the image-gen endpoint", err))
			t.Lookup("plugins", "entries", "image-gen", "config").Delete("baseUrl")
		}
	}
	if c := t.Lookup("plugins", "entries", "api-tools", "config"); c != nil && c.Get("processEnv") != nil {
		a.violate("plugins.entries.api-tools.config.processEnv", "the gateway's environment is the operator's: a tenant's api-tools read its own env only")
		c.Delete("processEnv")
	}
	if paths := t.Lookup("plugins", "load", "paths"); paths != nil && paths.Kind == config.Array {
		kept := paths.Items[:0:0]
		for i, it := range paths.Items {
			p, ok := str(it)
			if ok && p != "" && !a.inside(p) {
				a.violate(config.JoinIndex("plugins.load.paths", i), fmt.Sprintf("%q is outside the tenant directory: a tenant loads plugins from its own directory only", p))
				continue
			}
			kept = append(kept, it)
		}
		paths.Items = kept
	}
	var off []string
	for _, id := range a.c.bundled {
		if !slices.Contains(a.c.plugins, id) {
			off = append(off, id)
		}
	}
	if len(off) == 0 {
		return
	}
	p := object(t, "plugins", true)
	for _, id := range off {
		for _, key := range a.enables(p, id) {
			a.violate(key, fmt.Sprintf("the operator does not offer the plugin %q to tenants (tenants.plugins.allow)", id))
		}
		if e := p.Lookup("entries", id); e != nil {
			e.Delete("enabled")
		}
		if allow := p.Get("allow"); allow != nil && allow.Kind == config.Array {
			allow.Items = slices.DeleteFunc(allow.Items, func(it *config.Value) bool { s, _ := str(it); return s == id })
		}
		if s, _ := str(p.Lookup("slots", "memory")); s == id {
			p.Get("slots").Delete("memory")
		}
	}
	deny := p.Get("deny")
	if deny == nil || deny.Kind != config.Array {
		deny = config.NewArray()
		p.Set("deny", deny)
	}
	for _, id := range off {
		deny.Items = append(deny.Items, config.NewString(id))
	}
	a.setDefault("plugins.deny", fmt.Sprintf("%s: not offered to tenants (tenants.plugins.allow)", strings.Join(off, ", ")))
}

// enables are the keys of plugins by which a tenant turns plugin id on.
func (a *applier) enables(p *config.Value, id string) []string {
	var keys []string
	if v := p.Lookup("entries", id, "enabled"); v != nil && v.Kind == config.Bool && v.Bool {
		keys = append(keys, config.JoinKey("plugins.entries", id)+".enabled")
	}
	if allow := p.Get("allow"); allow != nil && allow.Kind == config.Array {
		for i, it := range allow.Items {
			if s, _ := str(it); s == id {
				keys = append(keys, config.JoinIndex("plugins.allow", i))
			}
		}
	}
	if s, _ := str(p.Lookup("slots", "memory")); s == id {
		keys = append(keys, "plugins.slots.memory")
	}
	return keys
}

// paths keeps every agent's workspace and sandbox workspace root strictly
// inside the tenant directory, by their text; where they lead on disk is
// checked again each time they are used (contain.Resolved).
func (a *applier) paths() {
	var cfg config.Config
	_, _ = config.Decode(a.res.Tree, &cfg) // a config that does not decode is refused by its own validation
	for _, id := range cfg.AgentIDs() {
		if ws := cfg.AgentWorkspace(a.dir, id); !a.strictlyInside(ws) {
			a.clampPath(id, "workspace", "defaults.workspace", ws, "the workspace")
		}
		if root := sandbox.WorkspacesRoot(&cfg, a.dir, id); !a.strictlyInside(root) {
			a.clampPath(id, "sandbox.workspaceRoot", "defaults.sandbox.workspaceRoot", root, "the sandbox workspace root")
		}
	}
}

// clampPath reports and removes the key that put agent id's path p
// outside: the agent's own key when it has one, else the defaults'.
func (a *applier) clampPath(id, own, def, p, what string) {
	rule := fmt.Sprintf("%s of agent %q must be inside the tenant directory, not the directory itself (%s)", what, id, a.where(p))
	found := false
	a.agents(func(path string, e *config.Value) {
		if found || config.NormalizeAgentID(strOr(e.Get("id"))) != id {
			return
		}
		if v := lookupDotted(e, own); v != nil {
			a.violate(path+"."+own, rule)
			deleteDotted(e, own)
			found = true
		}
	})
	if !found && lookupDotted(a.res.Tree.Get("agents"), def) != nil {
		for _, is := range a.res.Violations {
			if is.Path == "agents."+def {
				return // reported once, for the first agent it misplaces
			}
		}
		a.violate("agents."+def, rule)
		deleteDotted(a.res.Tree.Get("agents"), def)
	}
}

// inside reports whether a configured path (relative to the tenant
// directory) stays inside it.
func (a *applier) inside(p string) bool {
	if strings.HasPrefix(p, "~") {
		return false
	}
	if !strings.HasPrefix(p, "/") {
		p = a.dir + "/" + p
	}
	_, ok := contain.Within(a.dir, p)
	return ok
}

func (a *applier) strictlyInside(p string) bool {
	rel, ok := contain.Within(a.dir, p)
	return ok && rel != "."
}

// where says where p is, as a tenant sees it: never a host path.
func (a *applier) where(p string) string {
	switch rel, ok := contain.Within(a.dir, p); {
	case !ok:
		return "this one leads outside it"
	case rel == ".":
		return "this one is the tenant directory"
	default:
		return "this one is " + strconv.Quote(rel)
	}
}

func lookupDotted(v *config.Value, dotted string) *config.Value {
	return v.Lookup(strings.Split(dotted, ".")...)
}

func deleteDotted(v *config.Value, dotted string) {
	parts := strings.Split(dotted, ".")
	v.Lookup(parts[:len(parts)-1]...).Delete(parts[len(parts)-1])
}

func strOr(v *config.Value) string {
	s, _ := str(v)
	return s
}

// show is a value as a rule quotes it.
func show(v *config.Value) string {
	if v == nil {
		return "nothing"
	}
	if v.Kind == config.String {
		return strconv.Quote(v.Str)
	}
	return v.Kind.String()
}
