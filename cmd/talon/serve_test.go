package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"talon/internal/config"
	"talon/internal/gatewaytoken"
	"talon/internal/talonproc"
)

// TestKeptToken: a token is made only when nothing else sets a secret and
// the mode is not "none"; it is printed once, then only its place is
// logged; a file others may have read stops the start.
func TestKeptToken(t *testing.T) {
	cases := []struct {
		name, cfg, env string
		want           bool // a kept token is used
	}{
		{"nothing set", `{}`, "", true},
		{"mode token, no token", `{gateway:{auth:{mode:"token"}}}`, "", true},
		{"a config token", `{gateway:{auth:{token:"cfg-token"}}}`, "", false},
		{"a config password", `{gateway:{auth:{password:"cfg-pass"}}}`, "", false},
		{"the environment", `{}`, "env-token", false},
		{"mode none", `{gateway:{auth:{mode:"none"}}}`, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(envToken, c.env)
			dir := t.TempDir()
			f, err := config.Parse("talon.json", []byte(c.cfg))
			if err != nil {
				t.Fatal(err)
			}
			var stderr, logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			tok, err := keptToken(&stderr, log, dir, f.Config)
			if err != nil {
				t.Fatal(err)
			}
			_, statErr := os.Stat(gatewaytoken.Path(dir))
			if !c.want {
				if tok != "" || statErr == nil || stderr.Len() > 0 {
					t.Fatalf("token %q, file %v, printed %q; want none", tok, statErr, stderr.String())
				}
				return
			}
			if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(tok) {
				t.Fatalf("token %q", tok)
			}
			if want := "Gateway token: " + tok + " (made for this state dir; saved in " + gatewaytoken.Path(dir); !strings.Contains(stderr.String(), want) {
				t.Errorf("stderr %q lacks %q", stderr.String(), want)
			}
			stderr.Reset()
			logs.Reset()
			again, err := keptToken(&stderr, log, dir, f.Config)
			if err != nil || again != tok {
				t.Fatalf("second start: %q, %v; want %q", again, err, tok)
			}
			if stderr.Len() > 0 || strings.Contains(logs.String(), tok) || !strings.Contains(logs.String(), gatewaytoken.Path(dir)) {
				t.Errorf("second start printed %q and logged %q; want only the file's place logged", stderr.String(), logs.String())
			}
			if err := os.Chmod(gatewaytoken.Path(dir), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := keptToken(&stderr, log, dir, f.Config); err == nil || !strings.Contains(err.Error(), "others may have read it") {
				t.Errorf("a world-readable token file: %v, want a refusal", err)
			}
		})
	}
}

// startGatewayIn runs `talon gateway --state-dir state` (this test binary
// standing in) with cfg, a format taking the port, and no secret in the
// environment.
func startGatewayIn(t *testing.T, state, cfg string) *talonproc.Proc {
	t.Helper()
	var writeErr error
	p, err := talonproc.Start(talonproc.Options{
		Bin: os.Args[0],
		Env: append(os.Environ(), "TALON_TEST_MAIN=1", envToken+"=", envPassword+"="),
		Args: func(port int) []string {
			writeErr = os.WriteFile(filepath.Join(state, "talon.json"), fmt.Appendf(nil, cfg, port), 0o600)
			return []string{"gateway", "--state-dir", state, "--log-level", "info"}
		},
	})
	if writeErr != nil {
		t.Fatal(writeErr)
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func stopGateway(t *testing.T, p *talonproc.Proc) {
	t.Helper()
	if err := p.Stop(10 * time.Second); err != nil {
		t.Errorf("stopping talon gateway: %v\n%s", err, p.Log)
	}
}

// modelsStatus is GET /v1/models's status with token ("" none).
func modelsStatus(t *testing.T, base, token string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/v1/models", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestServeKeepsToken: a fresh state dir with no secret gets a token at
// the first start, in a 0600 file, printed once; the gateway then wants
// it, gateway call finds it by itself, and the next start reuses it
// without printing it.
func TestServeKeepsToken(t *testing.T) {
	t.Setenv(envToken, "")
	t.Setenv(envPassword, "")
	state := t.TempDir()
	const cfg = `{gateway: {port: %d}}`
	p := startGatewayIn(t, state, cfg)
	tok, err := gatewaytoken.Load(state)
	if err != nil {
		t.Fatalf("after the first start: %v\n%s", err, p.Log)
	}
	if fi, err := os.Stat(gatewaytoken.Path(state)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file: %v %v, want mode 0600", fi, err)
	}
	if !strings.Contains(p.Log.String(), "Gateway token: "+tok+" (made for this state dir") {
		t.Errorf("the first start did not print the token:\n%s", p.Log)
	}
	if got := modelsStatus(t, p.URL, ""); got != 401 {
		t.Errorf("without the token: %d, want 401", got)
	}
	if got := modelsStatus(t, p.URL, tok); got != 200 {
		t.Errorf("with the token: %d, want 200", got)
	}
	if out, errOut, code := talon(t, "", "gateway", "call", "health", "--state-dir", state); code != 0 || !strings.Contains(out, `"ok": true`) {
		t.Errorf("gateway call from the state dir: exit %d, %s %s", code, out, errOut)
	}
	stopGateway(t, p)

	p = startGatewayIn(t, state, cfg)
	defer stopGateway(t, p)
	if again, err := gatewaytoken.Load(state); err != nil || again != tok {
		t.Fatalf("after the second start: %q, %v; want %q", again, err, tok)
	}
	if strings.Contains(p.Log.String(), tok) {
		t.Errorf("the second start printed the token:\n%s", p.Log)
	}
	if !strings.Contains(p.Log.String(), gatewaytoken.Path(state)) {
		t.Errorf("the second start did not say where the token is:\n%s", p.Log)
	}
	if got := modelsStatus(t, p.URL, tok); got != 200 {
		t.Errorf("with the token after a restart: %d, want 200", got)
	}
}

// TestServeAuthModeNone: gateway.auth.mode "none" keeps the tokenless
// gateway on loopback and makes no token; beyond loopback it still does
// not start.
func TestServeAuthModeNone(t *testing.T) {
	t.Setenv(envToken, "")
	state := t.TempDir()
	const cfg = `{gateway: {port: %d, auth: {mode: "none"}}}`
	p := startGatewayIn(t, state, cfg)
	defer stopGateway(t, p)
	if got := modelsStatus(t, p.URL, ""); got != 200 {
		t.Errorf("tokenless on loopback: %d, want 200", got)
	}
	if _, err := os.Stat(gatewaytoken.Path(state)); err == nil {
		t.Error("a token file was made under mode none")
	}

	lan := t.TempDir()
	if err := os.WriteFile(filepath.Join(lan, "talon.json"), []byte(`{gateway: {auth: {mode: "none"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "gateway", "--state-dir", lan, "--bind", "lan", "--port", strconv.Itoa(freePortT(t)))
	cmd.Env = append(os.Environ(), "TALON_TEST_MAIN=1", envToken+"=")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "refusing to listen") {
		t.Errorf("mode none bound to all interfaces: %v\n%s\nwant a refusal to listen", err, out)
	}
}

// freePortT is a loopback port nothing listens on at the moment.
func freePortT(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func TestOverrideModel(t *testing.T) {
	root, err := config.Parse("talon.json", []byte(`{models: {providers: {local: {baseUrl: "http://127.0.0.1:11434/v1"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("OPENAI_API_KEY", "")
	for _, tc := range []struct{ ref, want, err string }{
		{"", "", ""},
		{"  inspect ", "inspect", ""},
		{"local/llama3", "local/llama3", ""},
		{"nosuch/model", "", `--model "nosuch/model": resolving model "nosuch/model": unknown provider "nosuch"`},
		{"openai/gpt-4o", "", `--model "openai/gpt-4o": openai: no API key: set OPENAI_API_KEY`},
		{"justaname", "", "no provider"},
	} {
		got, err := overrideModel(root, tc.ref)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("overrideModel(%q) = %q, %v; want %q, %q", tc.ref, got, err, tc.want, tc.err)
		}
	}
}

// TestServeClosesEverything: however serve ends (Serve failing on a
// listener closed underneath, a signal, after the platform did not
// start, or the address already taken) it returns with no file of its
// state dir open in this process: the gateway's stores and the
// platform's catalog are closed.
func TestServeClosesEverything(t *testing.T) {
	t.Setenv(envToken, "")
	t.Setenv(envPassword, "")
	t.Setenv(adminTokenEnv, "serve-test-admin-token-0123")
	templates, err := filepath.Abs(filepath.Join("..", "..", "templates"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		// database is --database: one that does not open stops the
		// platform, and the gateway goes on.
		database string
		// platform is the /api/tenants status to wait for: 200 once the
		// platform serves, 503 when it did not start.
		platform int
		// end ends serve once it serves: "close" closes its listener,
		// "signal" sends this process SIGINT.
		end     string
		taken   bool // the port is taken: serve never serves
		wantErr string
	}{
		{"serve fails", "", 200, "close", false, "serving: "},
		{"signal", "", 200, "signal", false, ""},
		{"platform did not start, then a signal", "mysql://db.internal/talon", 503, "signal", false, ""},
		{"address taken", "", 0, "", true, "listening on"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			state := t.TempDir()
			if err := os.WriteFile(filepath.Join(state, "talon.json"), []byte(`{gateway: {auth: {token: "serve-test-token"}}}`), 0o600); err != nil {
				t.Fatal(err)
			}
			port := freePortT(t)
			if c.taken {
				ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
			}
			listening := make(chan net.Listener, 1)
			f := serveFlags{stateDir: state, logLevel: "info", port: port, fsyncWindow: defaultFsyncWindow,
				platform: true, templates: templates, database: c.database,
				wrapListener: func(ln net.Listener) net.Listener { listening <- ln; return ln }}
			var stderr talonproc.Buffer
			cmd := &cobra.Command{}
			cmd.SetContext(context.Background())
			cmd.SetErr(&stderr)
			done := make(chan error, 1)
			go func() { done <- serve(cmd, f) }()

			if !c.taken {
				ln := <-listening
				body := waitForAPI(t, "http://"+ln.Addr().String(), c.platform, &stderr)
				if c.database != "" && (strings.Contains(body, c.database) || !strings.Contains(stderr.String(), c.database)) {
					t.Errorf("the API says %q; the database's address belongs in the log only:\n%s", body, stderr.String())
				}
				if open := openFilesUnder(t, state); len(open) == 0 {
					t.Fatalf("serving, yet no file of the state dir is open:\n%s", stderr.String())
				}
				switch c.end {
				case "close":
					ln.Close()
				case "signal":
					if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
						t.Fatal(err)
					}
				}
			}
			err := <-done
			switch {
			case c.wantErr == "" && err != nil:
				t.Errorf("serve: %v, want nil", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Errorf("serve: %v, want an error with %q", err, c.wantErr)
			}
			if open := openFilesUnder(t, state); len(open) > 0 {
				t.Errorf("serve returned with these still open: %v\n%s", open, stderr.String())
			}
		})
	}
}

// waitForAPI waits until GET /api/tenants with the admin token answers
// want, 200 once the platform serves or 503 when it did not start, and
// returns the body.
func waitForAPI(t *testing.T, base string, want int, log *talonproc.Buffer) string {
	t.Helper()
	for start := time.Now(); time.Since(start) < time.Minute; time.Sleep(10 * time.Millisecond) {
		req, _ := http.NewRequest("GET", base+"/api/tenants", nil)
		req.Header.Set("Authorization", "Bearer "+os.Getenv(adminTokenEnv))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		starting := resp.StatusCode == 503 && strings.Contains(string(body), "is starting")
		if resp.StatusCode == want && !starting {
			return string(body)
		}
		if !starting {
			t.Fatalf("/api/tenants: %d %s, want %d\n%s", resp.StatusCode, body, want, log)
		}
	}
	t.Fatalf("the platform was still starting after a minute:\n%s", log)
	return ""
}

// openFilesUnder lists what this process's file descriptors point to
// inside dir.
func openFilesUnder(t *testing.T, dir string) []string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var open []string
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) {
			open = append(open, target)
		}
	}
	return open
}
