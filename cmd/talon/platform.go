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
	"time"

	"talon/internal/authlimit"
	"talon/internal/platform"
	"talon/internal/platform/api"
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
	local := &platform.Local{StateDir: stateDir, Addr: "http://" + loopbackOf(gw), Dropped: drop, Version: version()}
	var plat atomic.Pointer[platform.Platform]
	rl := relay.New(platformDial(&plat, "talon-platform", "backend"))
	p, err := platform.New(ctx, platform.Options{Local: local, Templates: templates, Store: st, Relay: rl, Log: log.With("component", "platform")})
	if err != nil {
		rl.Close()
		st.Close()
		return nil, err
	}
	plat.Store(p)
	h := api.New(p, platformAPIOptions(p, limit, log))
	late.h.Store(&h)
	late.p.Store(p)
	startupSync(ctx, p, log)
	return func() { rl.Close(); st.Close() }, nil
}

// platformDial dials the gateway serving a tenant, as the platform's
// relays do: its node's address and the tenant's token there. The
// platform is set before the relay's first use.
func platformDial(p *atomic.Pointer[platform.Platform], clientID, mode string) relay.Dial {
	return func(ctx context.Context, tenant string) (*client.Client, error) {
		pl := p.Load()
		if pl == nil {
			return nil, errors.New("the platform is starting")
		}
		url, tok, err := pl.Gateway(ctx, tenant)
		if err != nil {
			return nil, err
		}
		c, err := client.Dial(ctx, url, client.Options{Token: tok, Tenant: tenant, ClientID: clientID, Mode: mode})
		if err != nil {
			return nil, pl.Unreachable(ctx, tenant, err)
		}
		return c, nil
	}
}

// tokenTimeout bounds asking a tenant's node for its token.
const tokenTimeout = 10 * time.Second

// platformAPIOptions are the REST API's options: a tenant's own token,
// read from its node, opens its chat and usage.
func platformAPIOptions(p *platform.Platform, limit *authlimit.Guard, log *slog.Logger) api.Options {
	return api.Options{
		AdminToken: os.Getenv(adminTokenEnv), AdminTokenHint: "set " + adminTokenEnv + " in talon serve's environment",
		TenantToken: func(id string) (string, error) {
			ctx, cancel := context.WithTimeout(context.Background(), tokenTimeout)
			defer cancel()
			return p.Token(ctx, id)
		},
		Log:       log.With("component", "platform-api"),
		AuthLimit: limit,
	}
}

// startupSync syncs every installation, as the platform does on start,
// and logs what it did.
func startupSync(ctx context.Context, p *platform.Platform, log *slog.Logger) {
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
