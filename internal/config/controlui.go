package config

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// ControlUI is `gateway.controlUi`. Talon serves Studio, not OpenClaw's
// Control UI, so it reads one key: AllowedOrigins, the browser origins
// (scheme://host[:port]) besides the gateway's own that may open its
// WebSocket, and whose hosts the gateway answers to in a request's Host
// (a reverse proxy's public name, say). "*" allows any origin, as in
// OpenClaw, but names no host. Only the operator's (the default tenant's)
// config is read for it.
type ControlUI struct {
	AllowedOrigins []string `json:"allowedOrigins"`
}

// AnyOrigin is the allowedOrigins entry that allows every origin.
const AnyOrigin = "*"

// ParseOrigin reads a browser origin as a page's Origin header and
// allowedOrigins write it: http or https, a host, an optional port, and
// nothing else (no user info, path, query or fragment; a trailing "/" is
// tolerated). It returns the origin in lower case and its host[:port].
func ParseOrigin(s string) (origin, hostport string, err error) {
	u, err := url.Parse(strings.TrimSuffix(strings.TrimSpace(s), "/"))
	switch {
	case err != nil:
		return "", "", fmt.Errorf("not a URL: %w", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", "", errors.New("want an http:// or https:// origin")
	case u.Host == "" || u.Hostname() == "":
		return "", "", errors.New("the origin has no host")
	case u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "":
		return "", "", errors.New("an origin is scheme://host[:port] with nothing after it")
	}
	host := strings.ToLower(u.Host)
	return u.Scheme + "://" + host, host, nil
}

// origins checks allowedOrigins.
func (k *checker) origins(path string, list []string) {
	for i, o := range list {
		if o == AnyOrigin {
			continue
		}
		if _, _, err := ParseOrigin(o); err != nil {
			k.fail(joinIndex(path, i), fmt.Sprintf("%q: %v", o, err))
		}
	}
}
