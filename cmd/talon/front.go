package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"talon/internal/authlimit"
	"talon/internal/config"
	"talon/internal/gateway"
	"talon/internal/platform"
	"talon/internal/platform/api"
	"talon/internal/platform/node"
	"talon/internal/platform/relay"
	"talon/internal/store/catalog"
	"talon/internal/studio"
	"talon/protocol/client"
)

// defaultHealthEvery is how often the platform asks each node for its
// health.
const defaultHealthEvery = 5 * time.Second

// gatewayNode is one entry of --gateways.
type gatewayNode struct{ id, url string }

// parseGateways reads --gateways: comma-separated URL or ID=URL entries.
// A URL's id defaults to its host:port, which stays the node's name in
// the catalog, so a node keeps its tenants across restarts as long as
// its address (or the id given) is the same.
func parseGateways(s string) ([]gatewayNode, error) {
	var out []gatewayNode
	ids, urls := map[string]bool{}, map[string]bool{}
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		id, u, named := strings.Cut(e, "=")
		if !named {
			u = e
		}
		u = strings.TrimRight(strings.TrimSpace(u), "/")
		if err := catalog.CheckNodeURL(u); err != nil {
			return nil, fmt.Errorf("--gateways %q: %w", e, err)
		}
		if !named {
			p, _ := url.Parse(u)
			id = p.Host
		}
		id = strings.TrimSpace(id)
		if err := catalog.CheckNodeID(id); err != nil {
			return nil, fmt.Errorf("--gateways %q: %w", e, err)
		}
		if ids[id] || urls[u] {
			return nil, fmt.Errorf("--gateways: %q is listed twice", e)
		}
		ids[id], urls[u] = true, true
		out = append(out, gatewayNode{id: id, url: u})
	}
	if len(out) == 0 {
		return nil, errors.New("--gateways: name at least one gateway node, as URL or ID=URL")
	}
	return out, nil
}

// serveFront runs the platform and Studio in front of gateway nodes
// (talon serve --gateways): no gateway of its own, tenants placed on the
// nodes, reached through their node API and WebSocket.
func serveFront(cmd *cobra.Command, f serveFlags, stateDir, cfgPath, addr string, limit *authlimit.Guard, log *slog.Logger) error {
	token := os.Getenv(nodeTokenEnv)
	if token == "" {
		return fmt.Errorf("--gateways: set %s to the node token the gateways were started with", nodeTokenEnv)
	}
	gws, err := parseGateways(f.gateways)
	if err != nil {
		return err
	}
	if f.healthEvery < time.Second || f.healthEvery > time.Hour {
		return fmt.Errorf("--health-interval %s: want 1s up to 1h", f.healthEvery)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, err := platform.OpenStore(ctx, stateDir, f.database)
	if err != nil {
		return err
	}
	defer st.Close()
	nodes := make(map[string]platform.Node, len(gws))
	for _, g := range gws {
		nodes[g.id] = node.New(g.url, token)
	}
	var plat atomic.Pointer[platform.Platform]
	rl := relay.New(platformDial(&plat, "talon-platform", "backend"))
	defer rl.Close()
	ui := relay.New(frontStudioDial(&plat))
	defer ui.Close()
	p, err := platform.New(ctx, platform.Options{Templates: f.templates, Store: st, Relay: rl, Nodes: nodes,
		Moved: func(t string) { rl.Forget(t); ui.Forget(t) }, Log: log.With("component", "platform")})
	if err != nil {
		return err
	}
	plat.Store(p)
	p.CheckNodes(ctx) // placement and availability know the nodes from the start
	go p.WatchNodes(ctx, f.healthEvery)
	admin, generated, err := adminToken()
	if err != nil {
		return err
	}
	st2, err := studio.New(studio.Options{Relay: ui, AdminToken: admin, NoDefaultTenant: true, AuthLimit: limit,
		Platform: func() (*platform.Platform, error) { return p, nil },
		TenantToken: func(tenant string) (string, error) {
			if tenant == "" {
				return "", errNoDefaultTenant
			}
			ctx, cancel := context.WithTimeout(context.Background(), tokenTimeout)
			defer cancel()
			return p.Token(ctx, tenant)
		},
		Log: log.With("component", "studio")})
	if err != nil {
		return fmt.Errorf("%s: %w", adminTokenEnv, err)
	}
	mux := http.NewServeMux()
	ok := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, `{"ok":true}`)
	}
	mux.HandleFunc("GET /healthz", ok)
	mux.HandleFunc("GET /readyz", ok)
	mux.Handle("/api/", api.New(p, platformAPIOptions(p, limit, log)))
	mux.Handle("/", st2)
	host, _, _ := net.SplitHostPort(addr)
	handler := gateway.BrowserSafe(mux, net.ParseIP(host), func() []string {
		file, err := config.Load(cfgPath)
		if err != nil {
			return nil
		}
		return file.Config.Gateway.ControlUI.AllowedOrigins
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	base := "http://" + loopbackOf(ln.Addr())
	ids := make([]string, len(gws))
	for i, g := range gws {
		ids[i] = g.id + "=" + g.url
	}
	log.Info("talon serving the platform in front of gateway nodes", "url", base, "nodes", strings.Join(ids, ","), "state", stateDir)
	if generated {
		fmt.Fprintf(cmd.ErrOrStderr(), "Studio: %s/ — sign in with the admin token %s (made for this run; set %s to choose one)\n", base, admin, adminTokenEnv)
	}
	go startupSync(ctx, p, log)
	select {
	case err = <-errc:
		log.Error("the platform stopped serving", "err", err)
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// errNoDefaultTenant is Studio's default tenant in front of gateway
// nodes: there is none.
var errNoDefaultTenant = errors.New("there is no default tenant: this Studio runs in front of gateway nodes (--gateways); open a tenant")

// frontStudioDial is Studio's relay dial in front of gateway nodes.
func frontStudioDial(p *atomic.Pointer[platform.Platform]) relay.Dial {
	dial := platformDial(p, "talon-studio", "ui")
	return func(ctx context.Context, tenant string) (*client.Client, error) {
		if tenant == "" {
			return nil, errNoDefaultTenant
		}
		return dial(ctx, tenant)
	}
}
