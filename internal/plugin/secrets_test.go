package plugin_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"talon/internal/plugin"
)

// loopbackPort is the port of a test server on 127.0.0.1.
func loopbackPort(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// envTool is a YAML tool that sends {{env.<name>}} as a bearer token to
// url on host.
func envTool(name, rawURL, host string) string {
	return "name: send_env\ndescription: Send an env var\nrequest:\n  method: GET\n  url: \"" + rawURL +
		"\"\n  headers:\n    Authorization: \"Bearer {{env." + name + "}}\"\nrequires_env: [" + name + "]\nallowed_hosts: [\"" + host + "\"]\n"
}

// TestPluginEnvScope: a YAML tool reads the config's env; the process
// environment only for the default tenant and only the names its
// operator lists, whatever the name (TALON_ADMIN_TOKEN is not special:
// it is simply never listed here).
func TestPluginEnvScope(t *testing.T) {
	t.Setenv("TALON_ADMIN_TOKEN", "admin-Q8XW2")
	t.Setenv("LISTED_TOKEN", "listed-R5TV7")
	t.Setenv("SHADOWED", "process-M3NB6")
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Authorization")
	}))
	t.Cleanup(srv.Close)
	port := loopbackPort(t, srv)
	const (
		tenantHint  = "set it in the config's env or env.vars"
		defaultHint = "set it in the config's env or env.vars, or list it in plugins.entries.api-tools.config.processEnv to pass the gateway's own"
	)
	tests := []struct {
		desc    string
		process bool   // the default tenant
		env     string // the config's env object
		list    string // processEnv
		name    string
		sent    string // Authorization received; "" when nothing is sent
		err     string
	}{
		{"tenant reads its config's env", false, `{vars: {CFG_TOKEN: "cfg-1"}}`, `[]`, "CFG_TOKEN", "Bearer cfg-1", ""},
		{"tenant never reads the process", false, `{}`, `[]`, "LISTED_TOKEN", "", "env LISTED_TOKEN is not set: " + tenantHint},
		{"tenant never reads the admin token", false, `{}`, `[]`, "TALON_ADMIN_TOKEN", "", "env TALON_ADMIN_TOKEN is not set: " + tenantHint},
		{"default tenant reads its config's env", true, `{CFG_TOKEN: "cfg-2"}`, `[]`, "CFG_TOKEN", "Bearer cfg-2", ""},
		{"default tenant without a list", true, `{}`, `[]`, "LISTED_TOKEN", "", "env LISTED_TOKEN is not set: " + defaultHint},
		{"default tenant never reads the admin token", true, `{}`, `[]`, "TALON_ADMIN_TOKEN", "", "env TALON_ADMIN_TOKEN is not set: " + defaultHint},
		{"default tenant reads a listed name", true, `{}`, `["LISTED_TOKEN"]`, "LISTED_TOKEN", "Bearer listed-R5TV7", ""},
		{"a list grants only its names", true, `{}`, `["LISTED_TOKEN"]`, "TALON_ADMIN_TOKEN", "", "env TALON_ADMIN_TOKEN is not set: " + defaultHint},
		{"the config's env comes first", true, `{SHADOWED: "cfg-3"}`, `["SHADOWED"]`, "SHADOWED", "Bearer cfg-3", ""},
		{"an empty config value shadows the process", true, `{SHADOWED: ""}`, `["SHADOWED"]`, "SHADOWED", "", "env SHADOWED is not set: " + defaultHint},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			h := plugin.NewHost(plugin.Options{StateDir: t.TempDir(), ProcessEnv: tt.process})
			t.Cleanup(func() { h.Close() })
			agentDir := t.TempDir()
			writeFiles(t, agentDir, map[string]string{"api-tools/send_env.yaml": envTool(tt.name, "http://127.0.0.1:"+port+"/x", "127.0.0.1")})
			cfg := mustConfig(t, `{env: `+tt.env+`, plugins: {entries: {"api-tools": {enabled: true, config: {processEnv: `+tt.list+`}}}}}`)
			rt := h.Configure(cfg).Tools(context.Background(), plugin.Run{AgentID: "main", AgentDir: agentDir})
			res := run(t, rt, plugin.APITools, "send_env", `{}`, true)
			var sent string
			select {
			case sent = <-got:
			default:
			}
			if sent != tt.sent {
				t.Errorf("server received %q, want %q", sent, tt.sent)
			}
			if tt.err == "" {
				if res.IsError {
					t.Errorf("result %+v", res)
				}
				return
			}
			if !res.IsError || !strings.HasSuffix(res.Text, tt.err) {
				t.Errorf("result %q, want it to end %q", res.Text, tt.err)
			}
			for _, v := range []string{"admin-Q8XW2", "listed-R5TV7", "process-M3NB6"} {
				if strings.Contains(res.Text, v) {
					t.Errorf("result %q shows a value", res.Text)
				}
			}
		})
	}
}

// TestPluginProcessEnvConfig: processEnv holds names, for the default
// tenant only; a bad list stops the api-tools plugin with the key that
// is wrong, and the other plugins' YAML tools get no process variable.
func TestPluginProcessEnvConfig(t *testing.T) {
	t.Setenv("LISTED_TOKEN", "listed-R5TV7")
	tests := []struct {
		name, list string
		process    bool
		err        string
	}{
		{"a list for the default tenant", `["LISTED_TOKEN", "_X1"]`, true, ""},
		{"not a name", `["LISTED_TOKEN", "1ST"]`, true,
			`plugins.entries.api-tools.config: processEnv[1]: "1ST" is not an environment variable name (letters, digits and _, not starting with a digit)`},
		{"an expression", `["$(id)"]`, true, `processEnv[0]: "$(id)" is not an environment variable name`},
		{"listed twice", `["A", "A"]`, true, `processEnv[1]: "A" is listed twice`},
		{"not a list", `"LISTED_TOKEN"`, true, `plugins.entries.api-tools.config: json: cannot unmarshal string`},
		{"a tenant's list", `["LISTED_TOKEN"]`, false,
			"plugin api-tools: plugins.entries.api-tools.config.processEnv: only the operator's root config can pass the gateway's environment; a tenant's api tools read only its config's env"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := plugin.NewHost(plugin.Options{StateDir: t.TempDir(), ProcessEnv: tt.process})
			t.Cleanup(func() { h.Close() })
			agentDir := t.TempDir()
			writeFiles(t, agentDir, map[string]string{"api-tools/echo.yaml": yamlTool("echo")})
			cfg := mustConfig(t, `{plugins: {entries: {"api-tools": {enabled: true, config: {processEnv: `+tt.list+`}}}}}`)
			rt := h.Configure(cfg).Tools(context.Background(), plugin.Run{AgentID: "main", AgentDir: agentDir})
			var st *plugin.Status
			for i := range rt.Plugins {
				if rt.Plugins[i].ID == plugin.APITools {
					st = &rt.Plugins[i]
				}
			}
			if st == nil {
				t.Fatalf("api-tools not listed: %+v", rt.Plugins)
			}
			if tt.err == "" {
				if len(st.Errors) > 0 || len(st.Tools) != 1 {
					t.Errorf("status %+v, want the tool and no error", st)
				}
				return
			}
			if len(st.Errors) != 1 || !strings.Contains(st.Errors[0], tt.err) || len(st.Tools) != 0 {
				t.Errorf("status errors %q tools %v, want one error with %q and no tool", st.Errors, st.Tools, tt.err)
			}
		})
	}
}

// TestPluginDirectoryToolsEnv: an on-disk plugin's YAML tools get the
// same env as the agent workspace's: the api-tools entry's list, and
// nothing when the list does not decode.
func TestPluginDirectoryToolsEnv(t *testing.T) {
	t.Setenv("LISTED_TOKEN", "listed-R5TV7")
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Authorization")
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		plugin.ManifestFile:       manifest("ondisk"),
		"api-tools/send_env.yaml": envTool("LISTED_TOKEN", "http://127.0.0.1:"+loopbackPort(t, srv)+"/x", "127.0.0.1"),
	})
	for _, tt := range []struct{ name, list, sent string }{
		{"listed", `["LISTED_TOKEN"]`, "Bearer listed-R5TV7"},
		{"not listed", `[]`, ""},
		{"a list that does not decode", `["LISTED_TOKEN", "bad name"]`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := plugin.NewHost(plugin.Options{StateDir: t.TempDir(), ProcessEnv: true})
			t.Cleanup(func() { h.Close() })
			cfg := mustConfig(t, `{plugins: {load: {paths: ["`+dir+`"]}, entries: {"api-tools": {config: {processEnv: `+tt.list+`}}}}}`)
			rt := h.Configure(cfg).Tools(context.Background(), plugin.Run{AgentID: "main"})
			res := run(t, rt, "ondisk", "send_env", `{}`, true)
			var sent string
			select {
			case sent = <-got:
			default:
			}
			if sent != tt.sent || (tt.sent == "") != res.IsError {
				t.Errorf("server received %q (result %+v), want %q", sent, res, tt.sent)
			}
		})
	}
}

// TestPluginSecretNeverEchoed: whatever goes wrong with a call, the
// model never reads an env value the request carried — in the path, the
// query or a header — in any encoding: our messages show the url as the
// file writes it, and a server's echo is redacted too.
func TestPluginSecretNeverEchoed(t *testing.T) {
	// The core survives every encoding; the rest makes each encoding
	// differ from the raw value.
	const core = "K7QZ9pWv"
	const secret = "tok-" + core + "/é&x y+z\"q"
	forms := []string{core, secret, url.PathEscape(secret), url.QueryEscape(secret)}

	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		echo := r.URL.String() + " " + r.Header.Get("Authorization")
		switch {
		case strings.HasPrefix(r.URL.Path, "/404/"):
			http.Error(w, "no such thing: "+echo, http.StatusNotFound)
		case strings.HasPrefix(r.URL.Path, "/500/"):
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(`{"error": {"message": "upstream saw ` + strings.ReplaceAll(echo, `"`, `\"`) + `"}}`))
		case strings.HasPrefix(r.URL.Path, "/ok/"):
			w.Write([]byte("you sent " + echo))
		case strings.HasPrefix(r.URL.Path, "/to-private/"):
			http.Redirect(w, r, "http://10.1.2.3"+r.URL.RequestURI(), http.StatusFound)
		case strings.HasPrefix(r.URL.Path, "/to-ftp/"):
			http.Redirect(w, r, "ftp://127.0.0.1"+r.URL.RequestURI(), http.StatusFound)
		case strings.HasPrefix(r.URL.Path, "/hang/"):
			select {
			case <-hang:
			case <-r.Context().Done():
			}
		}
	}))
	t.Cleanup(srv.Close)
	port := loopbackPort(t, srv)
	closed := httptest.NewServer(http.NotFoundHandler())
	closedPort := loopbackPort(t, closed)
	closed.Close()

	tool := func(base, host, path string, extra string) string {
		return "name: leak\ndescription: Carry a secret\nrequest:\n  method: GET\n  url: \"" + base + path +
			"{{env.SECRET}}?api_key={{env.SECRET}}&q={{params.q}}\"\n  headers:\n    Authorization: \"Bearer {{env.SECRET}}\"\n" + extra +
			"parameters:\n  q: {type: string, description: a word}\nrequires_env: [SECRET]\nallowed_hosts: [\"" + host + "\"]\n"
	}
	local := "http://127.0.0.1:" + port
	tests := []struct {
		name, yaml string
		loopback   bool
		showsURL   bool // the message quotes the url, as written
	}{
		{"netguard refusal", tool(local, "127.0.0.1", "/ok/", ""), false, true},
		{"metadata address", tool("http://169.254.169.254", "169.254.169.254", "/", ""), true, true},
		{"redirect to a private address", tool(local, "127.0.0.1", "/to-private/", ""), true, true},
		{"redirect to another scheme", tool(local, "127.0.0.1", "/to-ftp/", ""), true, true},
		{"dns failure", tool("https://nowhere.example.com", "nowhere.example.com", "/", ""), true, true},
		{"connection refused", tool("http://127.0.0.1:"+closedPort, "127.0.0.1", "/", ""), true, true},
		{"4xx echoing the request", tool(local, "127.0.0.1", "/404/", ""), true, false},
		{"5xx through the error template", tool(local, "127.0.0.1", "/500/", "  timeout_ms: 5000\nresponse:\n  error_template: \"failed: {{response.error.message}}\"\n"), true, false},
		{"2xx echoing the request", tool(local, "127.0.0.1", "/ok/", ""), true, false},
		{"timeout", tool(local, "127.0.0.1", "/hang/", "  timeout_ms: 50\n"), true, false},
	}
	res := mapResolver{}
	h := plugin.NewHost(plugin.Options{StateDir: t.TempDir(), Resolver: res})
	t.Cleanup(func() { h.Close() })
	cfg := mustConfig(t, `{env: {SECRET: "`+strings.ReplaceAll(secret, `"`, `\"`)+`"}, plugins: {entries: {"api-tools": {enabled: true}}}}`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			agentDir := t.TempDir()
			writeFiles(t, agentDir, map[string]string{"api-tools/leak.yaml": tt.yaml})
			rt := h.Configure(cfg).Tools(context.Background(), plugin.Run{AgentID: "main", AgentDir: agentDir})
			r := run(t, rt, plugin.APITools, "leak", `{"q":"visible"}`, tt.loopback)
			t.Logf("%s", r.Text)
			if !r.IsError {
				if tt.name != "2xx echoing the request" {
					t.Errorf("not an error: %q", r.Text)
				}
			}
			for _, f := range forms {
				if strings.Contains(r.Text, f) {
					t.Errorf("result shows the secret as %q: %s", f, r.Text)
				}
			}
			if tt.showsURL && !strings.Contains(r.Text, "/{{env.SECRET}}?api_key={{env.SECRET}}&q={{params.q}}") {
				t.Errorf("result %q does not show the url as written", r.Text)
			}
		})
	}
}
