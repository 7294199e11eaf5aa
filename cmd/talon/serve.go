package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"talon/internal/authlimit"
	"talon/internal/config"
	"talon/internal/gateway"
	"talon/internal/gatewaytoken"
	"talon/internal/platform/relay"
	"talon/internal/provider"
	"talon/internal/tools/core"
)

// defaultPort is OpenClaw's gateway port.
const defaultPort = 18789

// defaultFsyncWindow bounds what a power cut can take from the session
// stores; fsyncing every commit instead adds the disk's flush (≈ 0.1–0.2
// ms here) to every turn (BENCHMARKS.md).
const defaultFsyncWindow = 100 * time.Millisecond

// maxFsyncWindow keeps a typo from leaving commits unsynced for hours.
const maxFsyncWindow = time.Minute

// defaultTenantIdle is how long an unused tenant keeps its files open.
const defaultTenantIdle = 10 * time.Minute

type serveFlags struct {
	stateDir, configPath, bind, logLevel string
	port                                 int
	// fsyncWindow is how long an answered turn may wait for the disk.
	fsyncWindow time.Duration
	// model, when set, is every run's model (--model, $TALON_MODEL).
	model string
	// tenantIdle and maxWarm bound the tenants open at once
	// (gateway.Options.TenantIdle, MaxWarmTenants).
	tenantIdle time.Duration
	maxWarm    int
	// platform runs the workforce platform beside the gateway (serve).
	platform            bool
	templates, database string
	// gateways, when set, runs the platform in front of these gateway
	// nodes instead of beside a gateway of its own.
	gateways    string
	healthEvery time.Duration
	// wrapListener, when set, wraps the gateway's listener: the serve
	// tests close it underneath to make Serve fail.
	wrapListener func(net.Listener) net.Listener
}

func newServeCmd(use, short string) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long: `Starts the gateway: OpenClaw's WebSocket protocol, POST /v1/chat/completions,
GET /v1/models, /healthz and /readyz, on 127.0.0.1:18789 unless told otherwise.
The default tenant's config is STATE/talon.json (or an openclaw.json /
clawdbot.json there); tenants live in STATE/tenants/<id>/ and are selected
with the X-Tenant-ID header.

When neither the default tenant's config (gateway.auth.token or password) nor
$TALON_GATEWAY_TOKEN sets a secret, the first start makes a token, saves it in
STATE/gateway.token (mode 0600) and prints it once; later starts use it.
gateway.auth.mode "none" keeps a tokenless gateway on loopback instead.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return serve(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.stateDir, "state-dir", "", "state directory (default ~/.talon)")
	fl.StringVar(&f.configPath, "config", "", "config file (default STATE/talon.json)")
	fl.IntVar(&f.port, "port", 0, "port (default gateway.port, else 18789)")
	fl.StringVar(&f.bind, "bind", "", "address to bind: an IP, or loopback / lan (default gateway.bind, else 127.0.0.1)")
	fl.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fl.StringVar(&f.model, "model", os.Getenv(modelEnv), "run every agent of every tenant on this model, whatever configs, sessions and requests name: inspect (offline) or provider/model, resolved in each tenant's own config ($"+modelEnv+")")
	fl.DurationVar(&f.fsyncWindow, "fsync-window", defaultFsyncWindow,
		"how long an answered turn's transcript may wait for its fsync: a power cut can lose at most this much (a killed process loses nothing); 0 fsyncs every commit before answering")
	fl.DurationVar(&f.tenantIdle, "tenant-idle", defaultTenantIdle,
		"close a tenant's databases and handles after it has been unused this long (it opens again on its next use); 0 never closes an idle one")
	fl.IntVar(&f.maxWarm, "max-warm-tenants", 0,
		"most tenants open at once; the least recently used idle one closes for the next (default: what the process's open-file limit allows, keeping a reserve for connections)")
	if use == "serve" {
		cmd.Long += `

serve also runs, on the same address, the workforce platform (its REST API under
/api/: the employee library from --templates, tenants, installations) and Studio,
the web UI at /. talon gateway runs the gateway alone.`
		f.platform = true
		fl.StringVar(&f.templates, "templates", "templates", "the platform's employee templates, templates/<slug>/")
		fl.StringVar(&f.database, "database", os.Getenv("TALON_PLATFORM_DATABASE"), "platform database: sqlite:[PATH] (default STATE/platform.db) or a postgres:// URL ($TALON_PLATFORM_DATABASE)")
		cmd.Long += `

With --gateways URL,URL… (or ID=URL entries) it runs no gateway of its own: the
platform and Studio serve in front of those talon gateway nodes, started with
the same $` + nodeTokenEnv + `. New tenants go on the least loaded healthy node; the
catalog (use PostgreSQL to share it) records where each tenant is; a tenant on
a node that fails its health checks is reported unavailable, the others go on;
POST /api/tenants/{id}/move (or talon tenants move) moves one.`
		fl.StringVar(&f.gateways, "gateways", "", "run in front of these gateway nodes (URL or ID=URL, comma-separated; needs $"+nodeTokenEnv+") instead of a gateway of its own")
		fl.DurationVar(&f.healthEvery, "health-interval", defaultHealthEvery, "with --gateways: how often each node's health is checked")
	}
	return cmd
}

func serve(cmd *cobra.Command, f serveFlags) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", f.logLevel)
	}
	if f.fsyncWindow < 0 || f.fsyncWindow > maxFsyncWindow {
		return fmt.Errorf("--fsync-window %s: want 0 (fsync every commit) up to %s", f.fsyncWindow, maxFsyncWindow)
	}
	if f.tenantIdle < 0 {
		return fmt.Errorf("--tenant-idle %s: want 0 (never close an idle tenant) or a positive duration", f.tenantIdle)
	}
	if f.maxWarm < 0 {
		return fmt.Errorf("--max-warm-tenants %d: want 0 (from the open-file limit) or a positive count", f.maxWarm)
	}
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
	stateDir, err := resolveStateDir(f.stateDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return fmt.Errorf("creating state dir: %w", err)
	}
	cfgPath := configIn(stateDir, f.configPath)
	file, err := config.Load(cfgPath)
	if err != nil {
		return err
	}
	addr, err := listenAddr(file.Config, f)
	if err != nil {
		return err
	}
	if f.gateways != "" {
		return serveFront(cmd, f, stateDir, cfgPath, addr, authlimit.NewGuard(), log)
	}
	kept, err := keptToken(cmd.ErrOrStderr(), log, stateDir, file.Config)
	if err != nil {
		return err
	}
	reg, err := core.Registry()
	if err != nil {
		return err
	}
	// One failed-auth throttle for every way in: the gateway's bearer and
	// WebSocket auth, the platform API and Studio's sign-in.
	limit := authlimit.NewGuard()
	model, err := overrideModel(file, f.model)
	if err != nil {
		return err
	}
	if model != "" {
		log.Info("every agent of every tenant runs on one model (--model)", "model", model)
	}
	opts := gateway.Options{StateDir: stateDir, ConfigPath: cfgPath, Addr: addr, Tools: reg, Logger: log, SyncWindow: f.fsyncWindow,
		DefaultToken: kept, AuthLimit: limit, Model: model, TenantIdle: f.tenantIdle, MaxWarmTenants: f.maxWarm}
	var (
		late      *lateAPI
		studioURL atomic.Pointer[string]
		ui        *relay.Relay
		admin     string
		generated bool
	)
	if f.platform {
		late = &lateAPI{}
		opts.API = late
		var st http.Handler
		st, ui, admin, generated, err = studioFor(stateDir, cfgPath, kept, limit, &studioURL, late.platform, log)
		if err != nil {
			return err
		}
		defer ui.Close()
		opts.UI = st
	}
	nodeH, err := nodeAPI(stateDir, limit, log)
	if err != nil {
		return err
	}
	if nodeH != nil {
		opts.Node = nodeH
	}
	srv, err := gateway.New(opts)
	if err != nil {
		return err
	}
	if nodeH != nil {
		nodeH.Attach(srv)
	}
	ln, err := srv.Listen()
	if err != nil {
		// Listen has opened the default tenant (its stores) to check its
		// auth.
		shutdownGateway(srv, log)
		return err
	}
	if f.wrapListener != nil {
		ln = f.wrapListener(ln)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("talon serving", "url", "http://"+ln.Addr().String(), "state", stateDir, "config", cfgPath, "config_exists", file.Exists)
	if f.platform {
		u := "ws://" + loopbackOf(ln.Addr())
		studioURL.Store(&u)
		if generated {
			// Printed once, for the person who started Talon: without
			// TALON_ADMIN_TOKEN this is the only way into Studio.
			fmt.Fprintf(cmd.ErrOrStderr(), "Studio: http://%s/ — sign in with the admin token %s (made for this run; set %s to choose one)\n", loopbackOf(ln.Addr()), admin, adminTokenEnv)
		} else {
			log.Info("studio", "url", "http://"+loopbackOf(ln.Addr())+"/", "sign_in", "the admin token in "+adminTokenEnv)
		}
	}
	var closePlatform func()
	platformDone := make(chan struct{})
	if f.platform {
		go func() {
			defer close(platformDone)
			c, err := startPlatform(ctx, stateDir, f.templates, f.database, ln.Addr(), srv.DropTenant, late, limit, log)
			if err != nil {
				log.Error("the platform did not start; the gateway goes on", "err", err)
				late.down.Store(true)
				return
			}
			closePlatform = c
		}()
	} else {
		close(platformDone)
	}
	var serveErr error
	served := false
	select {
	case serveErr = <-errc:
		served = true
		log.Error("the gateway stopped serving", "err", serveErr)
	case <-ctx.Done():
	}
	// Whatever ended it, everything closes: a platform still starting
	// gives up (its context ends), the gateway finishes or aborts its
	// runs and closes its stores, then the platform closes its relay and
	// catalog (the API handlers that used them have returned by then);
	// Studio's relay closes on return.
	stop()
	log.Info("shutting down: finishing runs in flight")
	shutErr := shutdownGateway(srv, log)
	<-platformDone
	if closePlatform != nil {
		closePlatform()
	}
	switch {
	case served && serveErr != nil:
		return fmt.Errorf("serving: %w", serveErr)
	case served:
		return errors.New("serving: the gateway stopped before it was told to")
	case shutErr != nil:
		return shutErr
	}
	return <-errc
}

// shutdownGateway shuts srv down, waiting for its runs up to its shutdown
// timeout (those still going are aborted, which is no error).
func shutdownGateway(srv *gateway.Server, log *slog.Logger) error {
	err := srv.Shutdown(context.Background())
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		log.Error("shutting down the gateway", "err", err)
		return err
	}
	return nil
}

// keptToken is the default tenant's secret that talon serve keeps in
// STATE/gateway.token, made at the first start, when neither its config
// nor TALON_GATEWAY_TOKEN sets one and gateway.auth.mode is not "none";
// "" otherwise. A token made now is printed once on stderr, as Studio's
// admin token is; later starts log where it is, never its value.
func keptToken(stderr io.Writer, log *slog.Logger, stateDir string, cfg *config.Config) (string, error) {
	a := cfg.Gateway.Auth
	switch {
	case os.Getenv(envToken) != "", strings.TrimSpace(a.Token) != "", strings.TrimSpace(a.Password) != "":
		return "", nil
	case a.Mode == "none":
		log.Info("gateway.auth.mode is none: the default tenant takes no secret on loopback, so every local process and program may use it")
		return "", nil
	}
	tok, created, err := gatewaytoken.Ensure(stateDir)
	if err != nil {
		return "", err
	}
	path := gatewaytoken.Path(stateDir)
	if created {
		fmt.Fprintf(stderr, "Gateway token: %s (made for this state dir; saved in %s; send it as Authorization: Bearer)\n", tok, path)
	} else {
		log.Info("gateway token", "file", path)
	}
	return tok, nil
}

// listenAddr combines --bind/--port with gateway.bind/gateway.port.
func listenAddr(cfg *config.Config, f serveFlags) (string, error) {
	port := defaultPort
	if cfg.Gateway.Port != nil {
		port = *cfg.Gateway.Port
	}
	if f.port != 0 {
		port = f.port
	}
	if port < 1 || port > 65535 {
		return "", fmt.Errorf("--port %d: want 1..65535", port)
	}
	bind := strings.TrimSpace(f.bind)
	if bind == "" {
		bind = strings.TrimSpace(cfg.Gateway.Bind)
	}
	var host string
	switch strings.ToLower(bind) {
	case "", "loopback", "localhost":
		host = "127.0.0.1"
	case "lan", "all":
		host = "0.0.0.0"
	default:
		if net.ParseIP(bind) == nil {
			return "", fmt.Errorf("bind %q: want an IP address, loopback or lan", bind)
		}
		host = bind
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}

// modelEnv sets --model's default.
const modelEnv = "TALON_MODEL"

// overrideModel checks --model against the default tenant's config, so a
// reference that cannot resolve (no such provider, no API key) stops the
// start rather than every turn; a tenant resolves it in its own config.
func overrideModel(root *config.File, ref string) (string, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return "", nil
	}
	if _, _, err := provider.Resolve(root.Config, ref, nil); err != nil {
		return "", fmt.Errorf("--model %q: %w", ref, err)
	}
	return ref, nil
}
