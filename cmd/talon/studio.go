package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"

	"talon/internal/authlimit"
	"talon/internal/config"
	"talon/internal/platform"
	"talon/internal/platform/install"
	"talon/internal/platform/relay"
	"talon/internal/studio"
	"talon/protocol/client"
)

// studioFor builds Studio for `talon serve`. It reaches the gateway over
// loopback through its own relay (url is set once the gateway listens),
// each tenant with its own token: the default tenant's from
// TALON_GATEWAY_TOKEN, its config or kept (the token talon serve keeps
// for it), another's from its config. The admin token is
// TALON_ADMIN_TOKEN, else one made now, which the caller prints
// (generated says so). Failed sign-ins count in limit.
func studioFor(stateDir, cfgPath, kept string, limit *authlimit.Guard, url *atomic.Pointer[string], plat func() (*platform.Platform, error), log *slog.Logger) (s *studio.Server, rl *relay.Relay, admin string, generated bool, err error) {
	if admin, generated, err = adminToken(); err != nil {
		return nil, nil, "", false, err
	}
	token := func(tenant string) (string, error) {
		if tenant != "" {
			return install.Token(stateDir, tenant)
		}
		if t := os.Getenv("TALON_GATEWAY_TOKEN"); t != "" {
			return t, nil
		}
		f, err := config.Load(cfgPath)
		if err != nil {
			return "", err
		}
		return cmp.Or(f.Config.Gateway.Auth.Token, kept), nil
	}
	rl = relay.New(func(ctx context.Context, tenant string) (*client.Client, error) {
		u := url.Load()
		if u == nil {
			return nil, fmt.Errorf("the gateway is not listening yet")
		}
		o := client.Options{Tenant: tenant, ClientID: "talon-studio", Mode: "ui"}
		tok, err := token(tenant)
		if err != nil {
			return nil, err
		}
		o.Token = tok
		if tenant == "" && tok == "" {
			// A default tenant with a password instead of a token.
			if f, err := config.Load(cfgPath); err == nil {
				o.Password = f.Config.Gateway.Auth.Password
			}
		}
		return client.Dial(ctx, *u, o)
	})
	s, err = studio.New(studio.Options{Relay: rl, TenantToken: token, AdminToken: admin, Platform: plat, Log: log.With("component", "studio"), AuthLimit: limit})
	if err != nil {
		rl.Close()
		if !generated {
			err = fmt.Errorf("%s: %w", adminTokenEnv, err)
		}
		return nil, nil, "", false, err
	}
	return s, rl, admin, generated, nil
}

// adminToken is TALON_ADMIN_TOKEN, else one made now, which the caller
// prints (generated says so).
func adminToken() (admin string, generated bool, err error) {
	if admin = os.Getenv(adminTokenEnv); admin != "" {
		return admin, false, nil
	}
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", false, fmt.Errorf("making Studio's admin token: %w", err)
	}
	return hex.EncodeToString(b), true, nil
}
