package mcp

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"talon/internal/config"
	"talon/internal/netguard"
)

// httpTransport is a streamable HTTP transport to cfg.URL that sends the
// config's headers and follows no redirect: a redirect would carry those
// headers (often credentials) somewhere the operator did not configure.
// The returned *http.Transport is closed (idle connections) when the
// session ends, so no connection goroutine outlives it. With a guard,
// every connection goes through netguard and no proxy is used.
func httpTransport(cfg config.MCPServer, guard *netguard.Options) (sdk.Transport, *http.Transport, error) {
	for k, v := range cfg.Headers {
		if k == "" || strings.ContainsAny(k, " :\r\n\x00") || strings.ContainsAny(v, "\r\n\x00") {
			return nil, nil, fmt.Errorf("header %q: names must be tokens, values a single line", k)
		}
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	if guard != nil {
		base.Proxy, base.DialContext = nil, netguard.NewDialer(*guard).DialContext
	}
	client := &http.Client{
		Transport: &headerRT{base: base, headers: cfg.Headers},
		CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			return errors.New("the MCP server redirected; redirects are not followed")
		},
	}
	return &sdk.StreamableClientTransport{Endpoint: strings.TrimSpace(cfg.URL), HTTPClient: client}, base, nil
}

// headerRT adds the configured headers to every request, never replacing
// one the SDK set itself (session id, protocol version, content type).
type headerRT struct {
	base    http.RoundTripper
	headers map[string]string
}

func (h *headerRT) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		req = req.Clone(req.Context())
		for k, v := range h.headers {
			if req.Header.Get(k) == "" {
				req.Header.Set(k, v)
			}
		}
	}
	return h.base.RoundTrip(req)
}
