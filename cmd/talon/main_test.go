package main

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestMain lets the test binary stand in for the talon binary, so that
// TestBinary can run the real main with real exit codes.
func TestMain(m *testing.M) {
	if os.Getenv("TALON_TEST_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// talon runs one command line in-process.
func talon(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

func TestToolsExplainGolden(t *testing.T) {
	cases := []struct {
		name string
		args []string
	}{
		{"tenant-somi", []string{"--config", "testdata/explain/tenant.json5", "--agent", "somi",
			"--plugin-tool", "generate_image=image-gen,optional", "--plugin-tool", "publish_linkedin=api-tools"}},
		{"tenant-restricted-json", []string{"--config", "testdata/explain/tenant.json5", "--agent", "restricted", "--json"}},
		{"coding-main-openai", []string{"--config", "testdata/explain/coding.json5", "--agent", "dev", "--owner",
			"--provider", "openai", "--model", "gpt-5.2"}},
		{"coding-group-alice", []string{"--config", "testdata/explain/coding.json5",
			"--session-key", "agent:dev:whatsapp:group:family", "--provider", "openai", "--model", "gpt-4.1", "--sender", "username:alice"}},
		{"coding-group-bob", []string{"--config", "testdata/explain/coding.json5",
			"--session-key", "agent:dev:whatsapp:group:family", "--sender", "id:bob"}},
		{"coding-subagent", []string{"--config", "testdata/explain/coding.json5",
			"--session-key", "agent:dev:subagent:1234", "--owner"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := talon(t, "", append([]string{"tools", "explain"}, c.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			golden(t, filepath.Join("testdata", "explain", c.name+".golden"), out)
		})
	}
}

// The sandbox goldens use a fixed state dir, which nothing creates: explain
// reads the config and checks the backend, and writes nothing.
func TestSandboxExplainGolden(t *testing.T) {
	cases := []struct {
		name string
		args []string
	}{
		{"main", []string{"--agent", "main"}},
		{"main-bob", []string{"--agent", "main", "--session-key", "agent:main:openai-user:bob"}},
		{"reader-alias-json", []string{"--agent", "reader", "--session-key", "main", "--json"}},
		{"boxed-group", []string{"--agent", "boxed", "--session-key", "agent:boxed:whatsapp:group:1"}},
		{"team-shared", []string{"--agent", "team", "--session-key", "agent:team:x"}},
		{"plain-host", []string{"--agent", "plain"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"sandbox", "explain", "--config", "testdata/sandbox/talon.json5", "--state-dir", "/talon-golden/state"}, c.args...)
			out, errOut, code := talon(t, "", args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			golden(t, filepath.Join("testdata", "sandbox", c.name+".golden"), out)
		})
	}
}

func TestSandboxExplainErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--config", "testdata/sandbox/talon.json5"}, "--agent ID is required"},
		{[]string{"--config", "testdata/sandbox/talon.json5", "--agent", "nobody"}, `agent "nobody" is not in the config`},
		{[]string{"--config", "testdata/sandbox/talon.json5", "--agent", "main", "--session-key", "agent:main:\x01"}, "contains a control character"},
		{[]string{"--config", "testdata/sandbox/missing.json5", "--agent", "main"}, "does not exist"},
		{[]string{"--config", "testdata/sandbox/talon.json5", "--agent", "main", "--session-key", "agent:reader:x"}, "session agent:reader:x belongs to agent reader, not main"},
	}
	for _, c := range cases {
		_, errOut, code := talon(t, "", append([]string{"sandbox", "explain"}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}

func TestToolsExplainUsageErrors(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no agent or key", []string{"--config", "testdata/explain/coding.json5"}, "exactly one of --agent"},
		{"both", []string{"--config", "testdata/explain/coding.json5", "--agent", "a", "--session-key", "k"}, "exactly one of --agent"},
		{"missing file", []string{"--config", "testdata/explain/nope.json", "--agent", "a"}, "does not exist"},
		{"bad plugin tool", []string{"--config", "testdata/explain/coding.json5", "--agent", "a", "--plugin-tool", "x"}, "want NAME=PLUGIN"},
		{"bad origin", []string{"--config", "testdata/explain/coding.json5", "--agent", "a", "--plugin-tool", "x=p,origin=moon"}, "origin must be"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, errOut, code := talon(t, "", append([]string{"tools", "explain"}, c.args...)...)
			if code != 2 || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errOut, c.want)
			}
		})
	}
}

func TestDoctor(t *testing.T) {
	// A config migrated from OpenClaw, with keys Talon does not act on
	// (issue 18): the doctor names each one, and only --strict fails.
	const unusedKeys = `{
		agents: {defaults: {model: {primary: "openai/gpt-5.2", fallbacks: ["anthropic/claude-opus-4-6"]}, humanDelay: {mode: "natural"}},
			list: [{id: "main"}]},
		channels: {telegram: {enabled: true, botToken: "123:abc", streaming: "partial"}},
		tools: {profile: "coding", web: {search: {enabled: true, provider: "brave", openaiCodex: {enabled: true}}}},
		browser: {enabled: true, headless: false},
	}`
	unusedLines := []string{
		"OpenClaw keys Talon accepts but does not act on",
		"  agents.defaults.humanDelay: not used by Talon yet\n",
		"  channels.telegram.streaming: not used by Talon yet\n",
		"  tools.web.search.openaiCodex: not used by Talon yet\n",
		"  browser.headless: not used by Talon yet\n",
		"no tool-policy problems found",
	}
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name     string
		config   string
		args     []string
		wantCode int
		want     []string
	}{
		{"clean", `{tools: {profile: "coding"}, agents: {list: [{id: "main"}]}}`, nil, 0, []string{"no problems found"}},
		{"tenant", "", []string{"--config", "testdata/explain/tenant.json5", "--plugin-tool", "generate_image=image-gen,optional"}, 1,
			[]string{"plugin-not-enabled", "plugins.entries.image-gen.enabled: true", "allowlist-ignored", "sandbox-empty-allow"}},
		{"warnings only pass", `{agents: {defaults: {sandbox: {mode: "all"}}}, tools: {sandbox: {tools: {allow: []}}}}`, nil, 0, []string{"sandbox-empty-allow"}},
		{"warnings fail strict", `{tools: {allow: ["*"]}}`, []string{"--strict"}, 1, []string{"allow-star"}},
		{"type error", `{agents: {list: [{id: "a"}, {id: "b"}, {id: "c", tools: {allow: "read"}}]}}`, nil, 1,
			[]string{"agents.list[2].tools.allow: expected array of strings"}},
		{"unused keys pass", unusedKeys, nil, 0, unusedLines},
		{"unused keys fail strict", unusedKeys, []string{"--strict"}, 1, unusedLines},
		{"unused keys in json", unusedKeys, []string{"--json"}, 0,
			[]string{`"unused_keys": [`, `"agents.defaults.humanDelay",`, `"browser.headless"`}},
		{"unknown key fails strict", `{agents: {list: [{id: "main"}]}, bogus: 1}`, []string{"--strict"}, 1,
			[]string{"config warnings:\n  bogus: unknown key"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := c.args
			if c.config != "" {
				args = append([]string{"--config", write(strings.ReplaceAll(c.name, " ", "-")+".json", c.config)}, args...)
			}
			out, errOut, code := talon(t, "", append([]string{"doctor"}, args...)...)
			if code != c.wantCode {
				t.Errorf("exit %d, want %d; stderr %s", code, c.wantCode, errOut)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestBinary runs the real main in a child process, for exit statuses.
func TestBinary(t *testing.T) {
	cases := []struct {
		args  []string
		stdin string
		code  int
	}{
		{[]string{"version"}, "", 0},
		{[]string{"policy", "eval"}, `{"id":"x","kind":"filter","config":{"deny":["exec"]},"tools_in":["read","exec"]}`, 0},
		{[]string{"policy", "eval"}, `{"kind":`, 2},
		{[]string{"doctor", "--config", "testdata/explain/tenant.json5"}, "", 1},
		{[]string{"nosuchcommand"}, "", 2},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], c.args...)
			cmd.Env = append(os.Environ(), "TALON_TEST_MAIN=1")
			cmd.Stdin = strings.NewReader(c.stdin)
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != c.code {
				t.Errorf("exit %d, want %d; output:\n%s", code, c.code, out)
			}
		})
	}
}

// TestServeFlagErrors: a bad --fsync-window stops serve and gateway before
// anything starts, with the accepted range.
func TestServeFlagErrors(t *testing.T) {
	for _, cmd := range []string{"serve", "gateway"} {
		for _, c := range []struct{ value, want string }{
			{"-1s", "--fsync-window -1s: want 0 (fsync every commit) up to 1m0s"},
			{"2h", "--fsync-window 2h0m0s: want 0"},
			{"soon", `invalid argument "soon" for "--fsync-window"`},
		} {
			_, errOut, code := talon(t, "", cmd, "--state-dir", t.TempDir(), "--fsync-window", c.value)
			if code != 2 || !strings.Contains(errOut, c.want) {
				t.Errorf("%s --fsync-window %s: exit %d, %q; want 2 and %q", cmd, c.value, code, errOut, c.want)
			}
		}
	}
}

// TestDoctorTenantCeiling: a tenant's config, found by its place under a
// state dir, is checked as the gateway runs it: held to the ceiling of
// the root config, each key beyond it an error; explain shows it held.
func TestDoctorTenantCeiling(t *testing.T) {
	state := t.TempDir()
	tdir := filepath.Join(state, "tenants", "acme")
	if err := os.MkdirAll(tdir, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(p, body string) {
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(state, "talon.json"), `{tenants: {sandbox: {limits: {memoryMb: 512}}}}`)
	tcfg := filepath.Join(tdir, "talon.json")
	write(tcfg, `{agents: {defaults: {sandbox: {mode: "off", limits: {memoryMb: 4096}}}, list: [{id: "main", workspace: "."}]}, mcp: {servers: {sh: {command: "/bin/sh"}}}}`)
	out, errOut, code := talon(t, "", "doctor", "--config", tcfg)
	if code != 1 || !strings.Contains(errOut, "4 errors") {
		t.Errorf("doctor: exit %d, stderr %q; want 1 and 4 errors", code, errOut)
	}
	for _, w := range []string{"beyond the operator's ceiling", "agents.defaults.sandbox.mode:", "agents.defaults.sandbox.limits.memoryMb: the operator's ceiling is 512", "agents.list[0].workspace:", "mcp.servers.sh.command:"} {
		if !strings.Contains(out, w) {
			t.Errorf("doctor output lacks %q:\n%s", w, out)
		}
	}
	out, errOut, code = talon(t, "", "sandbox", "explain", "--config", tcfg, "--agent", "main", "--json")
	if code != 0 || !strings.Contains(out, `"sandboxed": true`) || !strings.Contains(out, `"memory_bytes": 536870912`) {
		t.Errorf("sandbox explain of the tenant: exit %d %s\n%s", code, errOut, out)
	}
	// The same file elsewhere is nobody's tenant: nothing to hold it to.
	other := filepath.Join(t.TempDir(), "talon.json")
	write(other, `{agents: {defaults: {sandbox: {mode: "off"}}}}`)
	if out, _, code := talon(t, "", "doctor", "--config", other); code != 0 || strings.Contains(out, "ceiling") {
		t.Errorf("doctor of a root config: exit %d\n%s", code, out)
	}
}

// TestHelpServe: --help says what serve runs now (issue 18: it said
// "today: the gateway" after serve had come to run the platform and
// Studio too).
func TestHelpServe(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--help"}, []string{"serve       Run the gateway, the workforce platform's API and Studio on one address"}},
		{[]string{"serve", "--help"}, []string{"WebSocket protocol", "REST API under\n/api/", "Studio", "talon gateway runs the gateway alone"}},
		{[]string{"gateway", "--help"}, []string{"Starts the gateway", "call        Call one gateway WebSocket method"}},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, errOut, code := talon(t, "", tc.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("help lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "today") {
				t.Errorf("help still says what serve does \"today\":\n%s", out)
			}
		})
	}
}
