package gateway

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"strings"

	"talon/internal/config"
)

// Browser safety. A web page the person has open can make their browser
// send requests to the gateway: a cross-site "simple" POST (text/plain, a
// form) goes without a preflight, and a page whose name the attacker
// re-points at 127.0.0.1 (DNS rebinding) is same-origin with what it
// reaches, so it reads the answers and opens WebSockets. Three rules stop
// both, with or without a token:
//
//   - every request's Host must be the gateway's: a loopback name or
//     address, any IP address when the gateway is bound beyond loopback
//     (an address cannot be rebound; a name can), or a host of the
//     operator's gateway.controlUi.allowedOrigins (a proxy's public name);
//     else 421;
//   - a POST, PUT, PATCH or DELETE to /v1/ or /api/ must say
//     Content-Type: application/json (or another JSON type), which no
//     page can send cross-site without a preflight the gateway never
//     grants; else 415. Studio's forms carry CSRF tokens instead;
//   - a WebSocket upgrade with an Origin (browsers always send one;
//     openclaw-node, the Go client and OpenClaw's CLI send none) must be
//     same-origin with its Host or listed in allowedOrigins; else 403
//     before any frame. This replaces coder/websocket's own check, which
//     compares the Origin's host with the Host alone.
//
// Only the default tenant's config (the operator's) is read for
// allowedOrigins: a tenant cannot widen what browsers may reach.

// browserSafe applies the Host and Content-Type rules to every request.
func (s *Server) browserSafe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuseUnsafe(w, r, s.bindIP, s.hostOK) {
			s.log.Debug("request refused by the browser-safety rules", "host", r.Host, "remote", r.RemoteAddr, "path", r.URL.Path)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// BrowserSafe applies the Host and Content-Type rules to a handler that
// serves without a gateway (talon serve --gateways: the platform API and
// Studio in front of gateway nodes). bind is the address it listens on;
// origins, called only for a Host that is not plainly its own, is the
// operator's gateway.controlUi.allowedOrigins.
func BrowserSafe(next http.Handler, bind net.IP, origins func() []string) http.Handler {
	ok := func(host string) bool {
		return hostAllowed(host, bind, nil) || hostAllowed(host, bind, origins())
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !refuseUnsafe(w, r, bind, ok) {
			next.ServeHTTP(w, r)
		}
	})
}

// refuseUnsafe answers a request the Host or Content-Type rule refuses
// and says so.
func refuseUnsafe(w http.ResponseWriter, r *http.Request, bind net.IP, hostOK func(string) bool) bool {
	if !hostOK(r.Host) {
		writeJSON(w, http.StatusMisdirectedRequest, map[string]any{"error": map[string]string{
			"message": hostRefusal(r.Host, bind), "type": "misdirected_request", "code": "host_not_allowed",
		}})
		return true
	}
	if needsJSON(r.Method, r.URL.Path) {
		if ct := r.Header.Get("Content-Type"); !isJSON(ct) {
			refuseMediaType(w, r.URL.Path, ct)
			return true
		}
	}
	return false
}

// hostOK asks for the config only for a Host that is not plainly ours.
func (s *Server) hostOK(host string) bool {
	return hostAllowed(host, s.bindIP, nil) || hostAllowed(host, s.bindIP, s.allowedOrigins())
}

// originOK is the WebSocket Origin rule for r.
func (s *Server) originOK(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	return originAllowed(origin, r.Host, nil) || originAllowed(origin, r.Host, s.allowedOrigins())
}

// allowedOrigins is the operator's gateway.controlUi.allowedOrigins; none
// while the default tenant's config cannot be loaded.
func (s *Server) allowedOrigins() []string {
	rt, err := s.defaultTenant.current(s)
	if err != nil {
		return nil
	}
	return rt.file.Config.Gateway.ControlUI.AllowedOrigins
}

// hostAllowed reports whether a request's Host (port or not) names a
// gateway bound to bind (nil: not listening yet, judged as loopback):
// localhost, a loopback address, any address when bind is not loopback,
// or the host of an origin in origins.
func hostAllowed(host string, bind net.IP, origins []string) bool {
	name := hostName(host)
	if name == "" {
		return false
	}
	if name == "localhost" {
		return true
	}
	if ip := net.ParseIP(name); ip != nil {
		return ip.IsLoopback() || bind != nil && !bind.IsLoopback()
	}
	for _, o := range origins {
		if _, hp, err := config.ParseOrigin(o); err == nil && hostName(hp) == name {
			return true
		}
	}
	return false
}

// hostName is the lower-case host of a Host header, without its port and
// an IPv6 address without its brackets.
func hostName(host string) string {
	host = strings.ToLower(strings.TrimSpace(host))
	if strings.HasPrefix(host, "[") {
		end := strings.IndexByte(host, ']')
		if end < 0 {
			return ""
		}
		return host[1:end]
	}
	if strings.Count(host, ":") == 1 {
		host, _, _ = strings.Cut(host, ":")
	}
	return host
}

// hostRefusal says which Host was refused and what would admit it.
func hostRefusal(host string, bind net.IP) string {
	ips := ""
	if bind != nil && !bind.IsLoopback() {
		ips = ", IP addresses"
	}
	return fmt.Sprintf("Host %q is not this gateway's name: it answers to localhost, loopback addresses%s "+
		"and the hosts of gateway.controlUi.allowedOrigins in the operator's config; "+
		"to reach it through another name (a reverse proxy's), add that origin there, such as \"https://talon.example.com\"", host, ips)
}

// originAllowed reports whether a WebSocket upgrade's Origin may connect
// to a gateway reached as host: no Origin (not a browser), the same
// origin as host, or one of origins ("*" for any).
func originAllowed(origin, host string, origins []string) bool {
	if origin == "" {
		return true
	}
	o, hp, err := config.ParseOrigin(origin)
	if err != nil {
		return false // "null", a file: or extension page, a malformed header
	}
	if hp == strings.ToLower(host) {
		return true
	}
	for _, a := range origins {
		if a == config.AnyOrigin {
			return true
		}
		if allowed, _, err := config.ParseOrigin(a); err == nil && allowed == o {
			return true
		}
	}
	return false
}

// needsJSON reports whether a request must carry a JSON body type: one
// that changes state, on the APIs.
func needsJSON(method, path string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return false
	}
	return onPrefix(path, "/v1") || onPrefix(path, "/api")
}

func onPrefix(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// isJSON reports whether a Content-Type is application/json or
// application/*+json, parameters allowed.
func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

// refuseMediaType answers 415 in the error shape of the API asked: the
// OpenAI one on /v1, the platform's on /api.
func refuseMediaType(w http.ResponseWriter, path, ct string) {
	msg := fmt.Sprintf("Content-Type is %q; send application/json", ct)
	if onPrefix(path, "/api") {
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusUnsupportedMediaType, map[string]any{"error": map[string]string{"code": "unsupported_media_type", "message": msg}})
		return
	}
	writeError(w, http.StatusUnsupportedMediaType, errInvalidRequest, msg)
}
