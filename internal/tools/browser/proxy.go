package browser

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"talon/internal/netguard"
)

// maxRefusals bounds the refusals a proxy remembers for the results.
const maxRefusals = 32

// proxy is the forward proxy every request of one browser goes through
// (HTTP CONNECT for https and WebSockets, absolute-URI requests for plain
// http): it resolves and dials with netguard's Dialer under the tenant's
// rule, so no request of a page — navigation, redirect, subresource,
// fetch, WebSocket — reaches an address the rule refuses, and DNS
// rebinding cannot help, as the page never resolves a name itself.
type proxy struct {
	ln  net.Listener
	srv *http.Server
	rp  *httputil.ReverseProxy
	// dialer is the rule's Dialer; each call sets the rule of its run
	// (setRule), so a changed rule applies without a new browser.
	dialer atomic.Pointer[netguard.Dialer]

	mu      sync.Mutex
	refused []refusal
	seq     int // refusals seen in all, to tell the new ones of a call
}

// refusal is one request the rule refused: the host name and why.
type refusal struct{ host, text string }

func refusalTexts(rs []refusal) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.text
	}
	return out
}

// startProxy listens on a random port of 127.0.0.1 and serves until Close.
func startProxy(g netguard.Options) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("starting the network proxy: %w", err)
	}
	p := &proxy{ln: ln}
	p.setRule(g)
	p.rp = &httputil.ReverseProxy{
		// The browser follows redirects itself: each comes back through
		// the proxy and meets the rule again.
		Rewrite: func(pr *httputil.ProxyRequest) { pr.Out.URL, pr.Out.Host = pr.In.URL, pr.In.Host },
		Transport: &http.Transport{
			Proxy: nil, DialContext: p.dial,
			TLSHandshakeTimeout: 10 * time.Second, IdleConnTimeout: 30 * time.Second, MaxIdleConns: 16,
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			p.fail(w, r.URL.Host, err)
		},
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go p.srv.Serve(ln)
	return p, nil
}

// setRule makes g the rule of the connections dialled from now on.
func (p *proxy) setRule(g netguard.Options) { p.dialer.Store(netguard.NewDialer(g)) }

func (p *proxy) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return p.dialer.Load().DialContext(ctx, network, addr)
}

// addr is where the browser reaches the proxy.
func (p *proxy) addr() string { return p.ln.Addr().String() }

// Close stops the proxy and every connection through it.
func (p *proxy) Close() error { return p.srv.Close() }

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodConnect:
		p.tunnel(w, r)
	case r.URL.IsAbs() && r.URL.Scheme == "http":
		p.rp.ServeHTTP(w, r)
	default:
		http.Error(w, "talon browser proxy: only CONNECT and absolute http:// requests are served", http.StatusBadRequest)
	}
}

// tunnel serves CONNECT: the checked connection, then bytes both ways.
func (p *proxy) tunnel(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	up, err := p.dial(ctx, "tcp", r.Host)
	cancel()
	if err != nil {
		p.fail(w, r.Host, err)
		return
	}
	rc := http.NewResponseController(w)
	down, buf, err := rc.Hijack()
	if err != nil {
		up.Close()
		http.Error(w, "talon browser proxy: cannot take over the connection", http.StatusInternalServerError)
		return
	}
	if _, err := down.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		up.Close()
		down.Close()
		return
	}
	go func() {
		// Bytes the browser sent after its CONNECT are already buffered.
		if n := buf.Reader.Buffered(); n > 0 {
			b, _ := buf.Reader.Peek(n)
			up.Write(b)
		}
		io.Copy(up, down)
		up.Close()
	}()
	go func() {
		io.Copy(down, up)
		down.Close()
	}()
}

// fail answers a request the rule refused (403, remembered for the
// result) or that could not be served (502).
func (p *proxy) fail(w http.ResponseWriter, host string, err error) {
	var re *netguard.RefusedError
	if errors.As(err, &re) {
		p.mu.Lock()
		p.seq++
		name := host
		if h, _, err := net.SplitHostPort(host); err == nil {
			name = h
		}
		p.refused = append(p.refused, refusal{host: strings.Trim(name, "[]"), text: re.Error()})
		if len(p.refused) > maxRefusals {
			p.refused = p.refused[len(p.refused)-maxRefusals:]
		}
		p.mu.Unlock()
		http.Error(w, "blocked by Talon's network rule: "+re.Error(), http.StatusForbidden)
		return
	}
	http.Error(w, "talon browser proxy: "+err.Error(), http.StatusBadGateway)
}

// mark is the count of refusals so far; since(mark) are those after it.
func (p *proxy) mark() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seq
}

func (p *proxy) since(mark int) []refusal {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := min(p.seq-mark, len(p.refused))
	return append([]refusal(nil), p.refused[len(p.refused)-n:]...)
}
