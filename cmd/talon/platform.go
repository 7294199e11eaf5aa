package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"

	"talon/internal/authlimit"
	"talon/internal/platform"
	"talon/internal/platform/api"
	"talon/internal/platform/install"
	"talon/internal/platform/relay"
	"talon/protocol/client"
)

// adminTokenEnv holds the platform API's admin token in `talon serve`.
const adminTokenEnv = "TALON_ADMIN_TOKEN"

// errPlatformDown is what callers of the platform are told when it did
// not start: why (a database address, a path) is for the log, where
// serve wrote it.
var errPlatformDown = errors.New("the platform did not start; the server log says why")

// lateAPI is the /api/ handler of `talon serve`: the gateway serves at
// once and the platform joins when it has started (its catalog opened,
// templates loaded), so it adds nothing to the gateway's start-up.
type lateAPI struct {
	h atomic.Pointer[http.Handler]
	p atomic.Pointer[platform.Platform]
	// down says the platform did not start.
	down atomic.Bool
}

// platform is the platform once started, for Studio.
func (l *lateAPI) platform() (*platform.Platform, error) {
	if p := l.p.Load(); p != nil {
		return p, nil
	}
	if l.down.Load() {
		return nil, errPlatformDown
	}
	return nil, errors.New("the platform is starting; reload in a moment")
}

func (l *lateAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := l.h.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	msg := "the platform is starting"
	if l.down.Load() {
		msg = errPlatformDown.Error()
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusServiceUnavailable)
	fmt.Fprintf(w, `{"error":{"code":"platform_unavailable","message":%q}}`, msg)
}

// startPlatform opens the catalog, loads the templates, mounts the REST
// API on late, and syncs every installation, as `talon serve` does on
// start; wrong tokens count in limit, and drop is told of each tenant
// deleted. It returns what to close at shutdown.
func startPlatform(ctx context.Context, stateDir, templates, database string, gw net.Addr, drop func(string), late *lateAPI, limit *authlimit.Guard, log *slog.Logger) (func(), error) {
	st, err := platform.OpenStore(ctx, stateDir, database)
	if err != nil {
		return nil, err
	}
	url := "ws://" + loopbackOf(gw)
	rl := relay.New(func(ctx context.Context, tenant string) (*client.Client, error) {
		tok, err := tenantGatewayToken(stateDir, tenant)
		if err != nil {
			return nil, err
		}
		return client.Dial(ctx, url, client.Options{Token: tok, Tenant: tenant, ClientID: "talon-platform", Mode: "backend"})
	})
	p, err := platform.New(ctx, platform.Options{StateDir: stateDir, Templates: templates, Store: st, Relay: rl, CloseTenant: drop, Log: log.With("component", "platform")})
	if err != nil {
		rl.Close()
		st.Close()
		return nil, err
	}
	h := api.New(p, api.Options{
		AdminToken: os.Getenv(adminTokenEnv), AdminTokenHint: "set " + adminTokenEnv + " in talon serve's environment",
		TenantToken: func(id string) (string, error) { return tenantGatewayToken(stateDir, id) },
		Log:         log.With("component", "platform-api"),
		AuthLimit:   limit,
	})
	late.h.Store(&h)
	late.p.Store(p)
	res, err := p.SyncAll(ctx, false)
	if err != nil {
		log.Error("platform start-up sync", "err", err)
	}
	changed := 0
	for _, r := range res {
		if r.Error != "" {
			log.Error("platform start-up sync", "tenant", r.Tenant, "template", r.Slug, "err", r.Error)
		} else if len(r.Summary) > 0 {
			changed++
			log.Info("platform start-up sync", "tenant", r.Tenant, "template", r.Slug, "changes", len(r.Summary))
		}
	}
	log.Info("platform start-up sync done", "installations", len(res), "changed", changed)
	return func() { rl.Close(); st.Close() }, nil
}

// tenantGatewayToken is a tenant's gateway token, from its config.
func tenantGatewayToken(stateDir, id string) (string, error) {
	return install.Token(stateDir, id)
}

// loopbackOf is addr with an unspecified host (0.0.0.0, ::) made
// loopback: the platform talks to its own gateway over loopback.
func loopbackOf(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}
