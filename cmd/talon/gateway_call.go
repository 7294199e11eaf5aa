package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"talon/internal/config"
	"talon/internal/gatewaytoken"
	"talon/protocol"
	"talon/protocol/client"
)

// Environment variables `talon gateway call` reads when no flag gives the
// secret; TALON_GATEWAY_TOKEN is also what `talon serve` accepts.
const (
	envToken    = "TALON_GATEWAY_TOKEN"
	envPassword = "TALON_GATEWAY_PASSWORD"
)

// maxCallTimeout bounds --timeout: a call that has not answered in a day
// is not coming back.
const maxCallTimeout = 24 * time.Hour

type callFlags struct {
	params, url, token, password, tenant, timeout string
	stateDir, configPath                          string
	asJSON                                        bool
}

func newGatewayCallCmd() *cobra.Command {
	var f callFlags
	cmd := &cobra.Command{
		Use:   "call METHOD",
		Short: "Call one gateway WebSocket method and print its result as JSON",
		Long: `Connects to a running gateway over WebSocket (the OpenClaw protocol), calls METHOD
with --params, and prints the response's payload as indented JSON. A two-phase
method (agent) is waited for until its final response. A refused call prints
CODE: message (and its details) on standard error and exits 1; so does a gateway
that cannot be reached or refuses the connection. Bad flags exit 2.

Where it connects and with which secret, first match wins:
  URL:    --url; else ws://HOST:PORT of the local gateway as talon serve would
          listen with the same --state-dir/--config (gateway.port, else 18789;
          gateway.bind, a lan bind being reached on 127.0.0.1).
  secret: --token; --password; $TALON_GATEWAY_TOKEN; $TALON_GATEWAY_PASSWORD;
          else gateway.auth.token or gateway.auth.password of the config: the
          default tenant's, or with --tenant ID that of STATE/tenants/ID/;
          else, for the default tenant, the token talon serve keeps in
          STATE/gateway.token.
The config's secret is sent only to the URL derived from the same config: with
--url, pass the secret by flag or environment, so that a local token never goes
to a gateway someone else named.

--timeout bounds the connection and the call together: a Go duration (30s, 2m)
or, as OpenClaw's CLI takes it, a number of milliseconds.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return gatewayCall(cmd, args[0], f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.params, "params", "", "params as a JSON object (default: none)")
	connFlags(cmd, &f)
	fl.StringVar(&f.stateDir, "state-dir", "", "state directory whose config gives the default URL and secret (default ~/.talon)")
	fl.BoolVar(&f.asJSON, "json", false, "print a refusal as its JSON error shape on standard error instead of CODE: message")
	return cmd
}

// connFlags registers the flags saying where a call goes and with which
// secret, but --state-dir, which a command may already have; other
// commands that call the gateway (talon approvals pending, resolve) take
// the same.
func connFlags(cmd *cobra.Command, f *callFlags) {
	fl := cmd.Flags()
	fl.StringVar(&f.url, "url", "", "gateway URL, ws:// or wss:// (default: the local gateway of the config)")
	fl.StringVar(&f.token, "token", "", "gateway token (default: $"+envToken+", else the config's, else STATE/"+gatewaytoken.File+")")
	fl.StringVar(&f.password, "password", "", "gateway password, for gateways with password auth")
	fl.StringVar(&f.tenant, "tenant", "", "tenant id, sent as X-Tenant-ID (default: the default tenant)")
	fl.StringVar(&f.timeout, "timeout", "30s", "time allowed to connect and answer: a duration, or milliseconds")
	fl.StringVar(&f.configPath, "config", "", "config file giving the default URL and secret (default STATE/talon.json)")
}

// callTarget is where a call goes and with what.
type callTarget struct {
	url             string
	token, password string
}

func gatewayCall(cmd *cobra.Command, method string, f callFlags) error {
	if err := checkMethodName(method); err != nil {
		return err
	}
	params, err := parseCallParams(f.params)
	if err != nil {
		return err
	}
	ctx, cancel, timeout, c, err := dialGateway(cmd, f)
	if err != nil {
		return err
	}
	defer cancel()
	defer c.Close()
	var p any
	if params != nil {
		p = params
	}
	payload, err := c.CallRaw(ctx, method, p)
	if err != nil {
		return callFailure(cmd.ErrOrStderr(), f.asJSON, timeoutErr(ctx, timeout, err))
	}
	return printPayload(cmd.OutOrStdout(), payload)
}

// dialGateway checks the connection flags and connects; the context ends
// after --timeout. A bad flag is an error (exit 2); a gateway that cannot
// be reached or refuses the connection is a callFailure (exit 1).
func dialGateway(cmd *cobra.Command, f callFlags) (context.Context, context.CancelFunc, time.Duration, *client.Client, error) {
	timeout, err := parseCallTimeout(f.timeout)
	if err != nil {
		return nil, nil, 0, nil, err
	}
	if f.tenant != "" && !validTenantID(f.tenant) {
		return nil, nil, 0, nil, fmt.Errorf("--tenant %q: want letters, digits, _ and -, starting with a letter or digit (at most 128)", f.tenant)
	}
	target, err := resolveCallTarget(f)
	if err != nil {
		return nil, nil, 0, nil, err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
	c, err := client.Dial(ctx, target.url, client.Options{Token: target.token, Password: target.password, Tenant: f.tenant})
	if err != nil {
		cancel()
		return nil, nil, 0, nil, callFailure(cmd.ErrOrStderr(), f.asJSON, fmt.Errorf("connecting to %s: %w", target.url, timeoutErr(ctx, timeout, err)))
	}
	return ctx, cancel, timeout, c, nil
}

// checkMethodName rejects what no method is called: a gateway would
// answer "unknown method", but a stray space is likelier a quoting slip.
func checkMethodName(m string) error {
	if m == "" || len(m) > 256 || strings.IndexFunc(m, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return fmt.Errorf("gateway call: method %q: want a name such as health or sessions.list", m)
	}
	return nil
}

// parseCallParams checks that --params is one JSON object (or null, which
// is none).
func parseCallParams(s string) (json.RawMessage, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("--params: not JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("--params: more than one JSON value")
	}
	switch v.(type) {
	case map[string]any:
		return json.RawMessage(s), nil
	case nil:
		return nil, nil
	}
	return nil, errors.New("--params: must be a JSON object, such as {\"agentId\":\"main\"}")
}

// parseCallTimeout reads a Go duration or, as OpenClaw's CLI, milliseconds.
func parseCallTimeout(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		ms, merr := strconv.ParseInt(s, 10, 64)
		if merr != nil {
			return 0, fmt.Errorf("--timeout %q: want a duration such as 30s or a number of milliseconds", s)
		}
		if ms <= 0 || ms > maxCallTimeout.Milliseconds() {
			return 0, fmt.Errorf("--timeout %q: want more than 0 and at most %v", s, maxCallTimeout)
		}
		d = time.Duration(ms) * time.Millisecond
	}
	if d <= 0 || d > maxCallTimeout {
		return 0, fmt.Errorf("--timeout %q: want more than 0 and at most %v", s, maxCallTimeout)
	}
	return d, nil
}

// validTenantID is the gateway's rule for X-Tenant-ID: one safe path
// segment, as the tenant's directory is named after it.
func validTenantID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i, r := range id {
		alnum := r < 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r))
		if !alnum && (i == 0 || r != '_' && r != '-') {
			return false
		}
	}
	return true
}

// resolveCallTarget applies the order the help of gateway call gives.
func resolveCallTarget(f callFlags) (callTarget, error) {
	t := callTarget{url: f.url, token: f.token, password: f.password}
	if t.token == "" && t.password == "" {
		t.token, t.password = os.Getenv(envToken), os.Getenv(envPassword)
	}
	if t.url != "" {
		u, err := url.Parse(t.url)
		if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
			return t, fmt.Errorf("--url %q: want ws://HOST:PORT or wss://HOST:PORT", t.url)
		}
		return t, nil
	}
	stateDir, err := resolveStateDir(f.stateDir)
	if err != nil {
		return t, err
	}
	file, err := loadGatewayConfig(configIn(stateDir, f.configPath), f.configPath != "")
	if err != nil {
		return t, err
	}
	addr, err := listenAddr(file.Config, serveFlags{})
	if err != nil {
		return t, fmt.Errorf("the gateway address of %s: %w", file.Path, err)
	}
	host, port, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1" // a lan bind listens on loopback too
	}
	t.url = "ws://" + net.JoinHostPort(host, port)
	if t.token != "" || t.password != "" {
		return t, nil
	}
	auth := file.Config.Gateway.Auth
	if f.tenant != "" {
		tf, err := loadGatewayConfig(configIn(filepath.Join(stateDir, "tenants", f.tenant), ""), false)
		if err != nil {
			return t, err
		}
		auth = tf.Config.Gateway.Auth
	}
	t.token, t.password = auth.Token, auth.Password
	if f.tenant == "" && t.token == "" && t.password == "" {
		tok, err := gatewaytoken.Load(stateDir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return t, err
		}
		t.token = tok
	}
	return t, nil
}

// loadGatewayConfig loads the config the defaults come from. A missing
// file gives the defaults, unless it was named with --config.
func loadGatewayConfig(path string, named bool) (*config.File, error) {
	f, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	if named && !f.Exists {
		return nil, fmt.Errorf("config %s does not exist", path)
	}
	return f, nil
}

// timeoutErr names the timeout when it is what ended the call.
func timeoutErr(ctx context.Context, timeout time.Duration, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no answer within %v (--timeout): %w", timeout, err)
	}
	return err
}

// callFailure prints a refused call as CODE: message and its details (or,
// with --json, the error shape), and any other failure as it is; the exit
// status is 1 either way.
func callFailure(w io.Writer, asJSON bool, err error) error {
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		return exitError{code: 1, msg: "gateway call: " + err.Error()}
	}
	if asJSON {
		b, jerr := json.MarshalIndent(pe, "", "  ")
		if jerr != nil {
			return exitError{code: 1, msg: "gateway call: " + err.Error()}
		}
		fmt.Fprintf(w, "%s\n", b)
		return exitError{code: 1}
	}
	fmt.Fprintln(w, err.Error())
	if pe.Details != nil {
		if b, jerr := json.Marshal(pe.Details); jerr == nil {
			fmt.Fprintf(w, "details: %s\n", b)
		}
	}
	if pe.Retryable {
		fmt.Fprintf(w, "retryable: after %d ms\n", pe.RetryAfterMs)
	}
	return exitError{code: 1}
}

// printPayload writes the payload as indented JSON, keys in the order the
// gateway sent them; no payload prints null.
func printPayload(w io.Writer, payload json.RawMessage) error {
	if len(bytes.TrimSpace(payload)) == 0 {
		payload = json.RawMessage("null")
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, payload, "", "  "); err != nil {
		return exitError{code: 1, msg: fmt.Sprintf("gateway call: the payload is not JSON: %v", err)}
	}
	buf.WriteByte('\n')
	_, err := buf.WriteTo(w)
	return err
}
