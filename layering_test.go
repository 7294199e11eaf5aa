package talon_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// layers places every package of the module: a package may import only
// packages of a lower layer. It is DESIGN.md's picture made exact — data
// flows from cmd/talon down to the leaves — and a new package must be
// placed here before it builds into the test suite. Test files and
// test-only packages (e2e, internal/benchmarks) are not held to it.
var layers = []struct {
	layer int
	pkgs  []string
}{
	{0, []string{"atomicfile", "contain", "netguard", "untrusted", "tenantid", "sse", "sqlitedb", "procfs", "fakellm", "llm", "testtier", "protocol", "channel/format", "safeyaml", "tools/tts/ttstest", "warm"}},
	{1, []string{"plugin/yamltool", "authlimit", "gatewaytoken", "protocol/client", "config", "approval/analyze", "talonproc", "store/catalog", "mcp/mcptest"}},
	{2, []string{"policy", "budget", "store/pg", "store/catalog/catalogtest", "store/pg/pgtest"}},
	{3, []string{"session", "compaction", "channel", "automation"}},
	{4, []string{"store", "sandbox", "provider", "approval", "channel/telegram", "channel/slack", "channel/discord"}},
	{5, []string{"usage", "automation/cron", "automation/hooks", "sandbox/bwrap", "sandbox/docker", "sandbox/host", "sandbox/sandboxtest", "ceiling", "channel/hub", "channel/telegram/tgtest", "channel/slack/slacktest", "channel/discord/discordtest"}},
	{6, []string{"tools"}},
	{7, []string{"tools/browser", "tools/cron", "tools/exec", "tools/fs", "tools/gateway", "tools/image", "tools/message", "tools/pdf", "tools/sessions", "tools/tts", "tools/web", "tools/websearch", "skill", "mcp"}},
	{8, []string{"tools/core", "plugin"}},
	{9, []string{"plugin/apitools", "plugin/imagegen", "memory"}},
	{10, []string{"standard"}},
	{11, []string{"agent"}},
	{12, []string{"gateway"}},
	{13, []string{"gateway/gatewaytest", "platform/template", "platform/relay"}},
	{14, []string{"platform/install"}},
	{15, []string{"platform/node"}},
	{16, []string{"platform"}},
	{17, []string{"platform/api"}},
	{18, []string{"studio", "bench"}},
	{19, []string{"cmd/talon"}},
}

// apart are imports the layers would allow but the design forbids: the
// platform and Studio reach the gateway only over its WebSocket protocol
// (so a split deployment is the tested path), and the session store
// never depends on the LLM clients.
var apart = map[string][]string{
	"platform":          {"gateway", "agent"},
	"platform/api":      {"gateway", "agent"},
	"platform/install":  {"gateway", "agent"},
	"platform/node":     {"gateway", "agent"},
	"platform/template": {"gateway", "agent"},
	"platform/relay":    {"gateway", "agent"},
	"studio":            {"gateway", "agent"},
	"store":             {"provider"},
	"tools":             {"provider"},
}

// pure are the packages that do no I/O and take no clock, so that their
// decisions are a function of their arguments: the only packages each may
// import, standard and Talon's.
var pure = map[string]struct{ std, ours []string }{
	"policy": {
		std:  []string{"bytes", "encoding/json", "errors", "fmt", "maps", "math", "slices", "sort", "strconv", "strings", "text/tabwriter", "unicode", "unicode/utf8"},
		ours: []string{"config"},
	},
	// time for durations and the flush prompt's date, never time.Now;
	// net/url and net/netip parse a provider's base URL.
	"compaction": {
		std:  []string{"bytes", "encoding/json", "errors", "fmt", "math", "net/netip", "net/url", "regexp", "slices", "strconv", "strings", "sync", "time", "unicode", "unicode/utf8"},
		ours: []string{"config", "llm", "policy"},
	},
	// context and time for the Transport interface's types, never
	// time.Now; a caller passes the clock and the randomness in.
	"channel": {
		std:  []string{"bytes", "context", "encoding/base64", "encoding/json", "crypto/sha256", "errors", "fmt", "regexp", "slices", "sort", "strconv", "strings", "time", "unicode", "unicode/utf8"},
		ours: []string{"config", "policy"},
	},
	// time for months of a time the caller passes, never time.Now.
	"budget": {
		std:  []string{"fmt", "math", "strconv", "strings", "time"},
		ours: []string{"config"},
	},
	// time for the times and durations the caller passes, never
	// time.Now: which tenants to close is a function of what the
	// gateway says they do.
	"warm": {
		std:  []string{"slices", "time"},
		ours: []string{},
	},
	"channel/format": {
		std:  []string{"fmt", "html", "slices", "strconv", "strings", "unicode", "unicode/utf16", "unicode/utf8"},
		ours: []string{},
	},
}

// TestLayers fails when a package imports one of its own layer or above,
// one the design keeps apart from it, or when a pure package (policy,
// compaction) reaches anything but what pure allows it.
func TestLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	layerOf := map[string]int{}
	for _, l := range layers {
		for _, p := range l.pkgs {
			if _, dup := layerOf[p]; dup {
				t.Fatalf("%s is placed twice", p)
			}
			layerOf[p] = l.layer
		}
	}
	short := func(p string) (string, bool) {
		if s, ok := strings.CutPrefix(p, "talon/internal/"); ok {
			return s, true
		}
		if s, ok := strings.CutPrefix(p, "talon/"); ok {
			return s, true
		}
		return p, false
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, _ := short(fields[0])
		if pkg == "talon" || pkg == "e2e" || pkg == "benchmarks" {
			continue // tests only
		}
		seen++
		l, placed := layerOf[pkg]
		if !placed {
			t.Errorf("%s is in no layer: place it in layering_test.go", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			dep, ours := short(imp)
			if p, ok := pure[pkg]; ok {
				if !ours && !slices.Contains(p.std, imp) || ours && !slices.Contains(p.ours, dep) {
					t.Errorf("%s imports %s: it must stay pure (%v and %v only)", pkg, imp, p.ours, p.std)
				}
			}
			if !ours {
				continue
			}
			if dl, ok := layerOf[dep]; ok && dl >= l {
				t.Errorf("%s (layer %d) imports %s (layer %d): a package imports only lower layers", pkg, l, dep, dl)
			}
			if slices.Contains(apart[pkg], dep) {
				t.Errorf("%s imports %s, which the design keeps apart from it", pkg, dep)
			}
		}
	}
	if seen < 40 {
		t.Fatalf("go list gave only %d packages; is the listing broken?", seen)
	}
}
