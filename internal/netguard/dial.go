package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Resolver looks up the addresses of a host name; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

var _ Resolver = net.DefaultResolver

// Options configure a Dialer and the client from NewClient. The zero value
// is the strict guard.
type Options struct {
	// AllowLoopback lets 127.0.0.0/8 and ::1 through (nothing else). It is
	// for tests against loopback servers and for local development only;
	// never turn it on where a model chooses the URLs in production. Local
	// names (localhost, *.local, ...) stay refused: tests use 127.0.0.1.
	AllowLoopback bool
	// Allow are exact address and port pairs let through although their
	// address is blocked: services the operator names on purpose (a model
	// server on 127.0.0.1:11434), never a range. Only a literal address
	// or a resolved one that equals an entry passes; the port must match.
	Allow []netip.AddrPort
	// Resolver looks up host names; nil means net.DefaultResolver.
	Resolver Resolver
	// DialTimeout bounds one TCP connect; 0 means 10 s.
	DialTimeout time.Duration
	// Timeout bounds a whole request including reading the body; 0 means 30 s.
	Timeout time.Duration
	// MaxRedirects is how many redirects a client follows; 0 means 5, a
	// negative value follows none.
	MaxRedirects int
}

// Dialer connects only to addresses the guard allows, checking the exact
// address it dials.
type Dialer struct {
	opts Options
}

// NewDialer returns a Dialer with opts.
func NewDialer(opts Options) *Dialer {
	return &Dialer{opts: opts}
}

// DialContext resolves the host of addr once, refuses the connection if any
// of its addresses is blocked (a name that mixes public and private
// addresses is treated as hostile rather than filtered), and dials the
// checked addresses in order. Only TCP is supported.
func (d *Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	lookup := map[string]string{"tcp": "ip", "tcp4": "ip4", "tcp6": "ip6"}[network]
	if lookup == "" {
		return nil, fmt.Errorf("netguard: dial %s: network %q not supported, only tcp", addr, network)
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("netguard: dial %s: %w", addr, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("netguard: dial %s: port %q is not a number from 0 to 65535", addr, portStr)
	}
	literal, isIP, err := checkHost(host, d.opts)
	if err != nil && !d.opts.excepted(err, uint16(port)) {
		return nil, err
	}
	addrs := []netip.Addr{literal}
	if !isIP {
		if addrs, err = d.resolve(ctx, lookup, host, uint16(port)); err != nil {
			return nil, err
		}
	}
	nd := net.Dialer{Timeout: d.opts.DialTimeout}
	if nd.Timeout == 0 {
		nd.Timeout = 10 * time.Second
	}
	var errs []error
	for _, a := range addrs {
		// The string is the checked address itself, so the standard dialer
		// has nothing left to resolve.
		c, err := nd.DialContext(ctx, network, netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("netguard: dial %s: %w", addr, errors.Join(errs...))
}

func (d *Dialer) resolve(ctx context.Context, network, host string, port uint16) ([]netip.Addr, error) {
	r := d.opts.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, network, host)
	if err != nil {
		return nil, fmt.Errorf("netguard: resolving %q: %w", host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("netguard: resolving %q: no addresses", host)
	}
	for i, a := range addrs {
		// Go's resolver returns A records in IPv4-mapped form; dial them as
		// IPv4 so the network "tcp4" still works.
		addrs[i] = a.Unmap()
		if err := checkAddr(host, addrs[i], d.opts); err != nil && !d.opts.excepted(err, port) {
			return nil, err
		}
	}
	return addrs, nil
}

// CheckRedirect is an http.Client CheckRedirect: it refuses a redirect to a
// scheme other than http or https, to a host CheckHost refuses, and past
// MaxRedirects. Names are checked again by DialContext at connect time.
func (d *Dialer) CheckRedirect(req *http.Request, via []*http.Request) error {
	limit := d.opts.MaxRedirects
	if limit == 0 {
		limit = 5
	}
	limit = max(limit, 0)
	if len(via) > limit {
		return fmt.Errorf("netguard: refusing redirect %d to %s: limit is %d redirects", len(via), req.URL.Redacted(), limit)
	}
	if s := req.URL.Scheme; s != "http" && s != "https" {
		return fmt.Errorf("netguard: refusing redirect to scheme %q, only http and https", s)
	}
	_, _, err := checkHost(req.URL.Hostname(), d.opts)
	if err != nil && d.opts.excepted(err, urlPort(req.URL)) {
		return nil
	}
	return err
}

// excepted reports whether err refuses an address that opts.Allow lets
// through on port.
func (o *Options) excepted(err error, port uint16) bool {
	var re *RefusedError
	if len(o.Allow) == 0 || !errors.As(err, &re) || !re.Addr.IsValid() {
		return false
	}
	return slices.Contains(o.Allow, netip.AddrPortFrom(re.Addr.Unmap(), port))
}

// urlPort is u's port, or its scheme's default (0 when unknown).
func urlPort(u *url.URL) uint16 {
	if p, err := strconv.ParseUint(u.Port(), 10, 16); err == nil {
		return uint16(p)
	}
	switch u.Scheme {
	case "http":
		return 80
	case "https":
		return 443
	}
	return 0
}

// CheckURL is what can be known of a URL before it is dialled: an http or
// https URL without credentials whose host CheckHost accepts, or whose
// literal address and port opts.Allow names. A name still meets the
// connect-time check of a Dialer built with the same opts.
func CheckURL(raw string, opts Options) error {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return fmt.Errorf("netguard: malformed URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("netguard: scheme %q refused, only http and https", u.Scheme)
	}
	if u.User != nil {
		return errors.New("netguard: credentials in the URL are refused")
	}
	_, _, err = checkHost(u.Hostname(), opts)
	if err != nil && opts.excepted(err, urlPort(u)) {
		return nil
	}
	return err
}

// NewClient returns an *http.Client whose connections all go through a
// Dialer with opts, that ignores proxy settings from the environment (a
// proxy would make the connect-time check meaningless) and has timeouts.
func NewClient(opts Options) *http.Client {
	d := NewDialer(opts)
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           d.DialContext,
			ForceAttemptHTTP2:     true,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: timeout,
			IdleConnTimeout:       90 * time.Second,
			MaxIdleConns:          16,
		},
		CheckRedirect: d.CheckRedirect,
		Timeout:       timeout,
	}
}
