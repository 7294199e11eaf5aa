package netguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

func TestBlocked(t *testing.T) {
	for _, tc := range []struct{ addr, reason string }{
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "unspecified"},
		{"10.0.0.5", "private address, RFC 1918"},
		{"172.16.0.1", "RFC 1918"},
		{"172.31.255.255", "RFC 1918"},
		{"192.168.1.1", "RFC 1918"},
		{"100.64.0.1", "carrier-grade NAT"},
		{"100.127.255.255", "carrier-grade NAT"},
		{"127.0.0.1", "loopback"},
		{"127.255.0.9", "loopback"},
		{"169.254.1.1", "link-local"},
		{"169.254.169.254", "cloud metadata"},
		{"100.100.100.200", "cloud metadata"},
		{"168.63.129.16", "Azure"},
		{"192.0.0.192", "IETF protocol"},
		{"192.0.2.10", "documentation"},
		{"198.51.100.7", "documentation"},
		{"203.0.113.1", "documentation"},
		{"198.18.0.1", "benchmarking"},
		{"198.19.255.1", "benchmarking"},
		{"192.88.99.1", "6to4 relay"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"240.0.0.1", "reserved"},
		{"255.255.255.255", "broadcast"},
		{"::", "unspecified"},
		{"::1", "loopback"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"fc00::1", "unique local"},
		{"fd12:3456::1", "unique local"},
		{"fd00:ec2::254", "cloud metadata"},
		{"fec0::1", "site-local"},
		{"ff02::1", "multicast"},
		{"2001:db8::1", "documentation"},
		{"3fff::1", "documentation"},
		{"100::1", "discard"},
		{"2001:2::1", "benchmarking"},
		{"::ffff:127.0.0.1", "IPv4-mapped IPv6 address of 127.0.0.1: loopback"},
		{"::ffff:169.254.169.254", "IPv4-mapped IPv6 address of 169.254.169.254: cloud metadata"},
		{"::ffff:10.1.2.3", "IPv4-mapped IPv6 address of 10.1.2.3: private"},
		{"::7f00:1", "IPv4-compatible"},
		{"::10.0.0.1", "IPv4-compatible"},
		{"64:ff9b::7f00:1", "NAT64 address of 127.0.0.1: loopback"},
		{"64:ff9b::a9fe:a9fe", "NAT64 address of 169.254.169.254"},
		{"64:ff9b:1::1", "local-use NAT64"},
		{"2002:7f00:1::1", "6to4 address of 127.0.0.1: loopback"},
		{"2002:c0a8:101::1", "6to4 address of 192.168.1.1"},
		// Teredo: client 127.0.0.1 is stored inverted (80ff:fffe).
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", "Teredo address (client) of 127.0.0.1"},
		{"2001:0:a00:1::1", "Teredo address (server) of 10.0.0.1"},
		{"4000::1", "outside global unicast"},
	} {
		reason, blocked := Blocked(netip.MustParseAddr(tc.addr))
		if !blocked || !strings.Contains(reason, tc.reason) {
			t.Errorf("Blocked(%s) = %q, %v; want blocked with %q", tc.addr, reason, blocked, tc.reason)
		}
	}
	if _, blocked := Blocked(netip.Addr{}); !blocked {
		t.Error("Blocked(zero Addr) = false")
	}
}

func TestAllowedAddresses(t *testing.T) {
	for _, a := range []string{
		"8.8.8.8", "1.1.1.1", "93.184.216.34", "100.63.255.255", "100.128.0.0",
		"172.15.255.255", "172.32.0.1", "192.169.0.1", "223.255.255.255", "169.255.0.1",
		"2606:4700:4700::1111", "2001:4860:4860::8888", "::ffff:8.8.8.8",
		"64:ff9b::808:808", "2002:808:808::1", "2001:0:4136:e378:8000:63bf:f7f7:f7f7",
	} {
		if reason, blocked := Blocked(netip.MustParseAddr(a)); blocked {
			t.Errorf("Blocked(%s) = %q; want allowed", a, reason)
		}
	}
}

func TestCheckHostRefused(t *testing.T) {
	for _, tc := range []struct{ host, want string }{
		{"", "empty host"},
		{"localhost", `refusing host "localhost" (localhost)`},
		{"localhost.", "localhost"},
		{"LOCALHOST", "localhost"},
		{"app.localhost", ".localhost names"},
		{"metadata.google.internal", ".internal names"},
		{"printer.local", ".local names"},
		{"printer.local.", ".local names"},
		{"box.localdomain", ".localdomain names"},
		{"127.0.0.1", "refusing 127.0.0.1 (loopback address)"},
		{"127.0.0.1.", "refusing 127.0.0.1"},
		{"127.1", "refusing 127.0.0.1"},
		{"2130706433", "refusing 127.0.0.1"},
		{"0x7f.1", "refusing 127.0.0.1"},
		{"0X7F.0.0.1", "refusing 127.0.0.1"},
		{"0x7f000001", "refusing 127.0.0.1"},
		{"017700000001", "refusing 127.0.0.1"},
		{"0177.0.0.1", "refusing 127.0.0.1"},
		{"0177.0.1", "refusing 127.0.0.1"},
		{"0", "refusing 0.0.0.0"},
		{"0x", "refusing 0.0.0.0"},
		{"169.254.169.254", "refusing 169.254.169.254 (cloud metadata endpoint)"},
		{"0xa9fea9fe", "refusing 169.254.169.254"},
		{"2852039166", "refusing 169.254.169.254"},
		{"0251.0376.0251.0376", "refusing 169.254.169.254"},
		{"10.0.0.5", "private address, RFC 1918"},
		{"10.5", "refusing 10.0.0.5"},
		{"192.168.257", "refusing 192.168.1.1"},
		{"[::1]", "refusing ::1 (loopback address)"},
		{"::1", "loopback"},
		{"[::ffff:127.0.0.1]", "IPv4-mapped IPv6 address of 127.0.0.1"},
		{"[::ffff:7f00:1]", "IPv4-mapped"},
		{"[fe80::1%eth0]", "link-local"},
		{"[fe80::1%25eth0]", "link-local"},
		{"[fd00:ec2::254]", "cloud metadata"},
		{"[64:ff9b::a9fe:a9fe]", "NAT64"},
		// Malformed literals are refused, never looked up as names.
		{"256.0.0.1", `part "256" above 255`},
		{"1.2.3.256", `part "256" too large`},
		{"4294967296", "too large"},
		{"1.2.3.4.5", "more than four parts"},
		{"08.0.0.1", `malformed IPv4 part "08"`},
		{"127..1", "empty IPv4 part"},
		{"example.123", "malformed"},
		{"[::1", "unclosed ["},
		{"[not-ip]", "malformed IPv6"},
		{"[127.0.0.1]", "malformed IPv6"},
		{"a:b", "malformed IPv6"},
		{"１２７.0.0.1", "not allowed in a host name"},
		{"exa mple.com", "not allowed"},
		{"example%2ecom", "not allowed"},
		{"a..b", "empty label"},
		{".example.com", "empty label"},
		{strings.Repeat("a.", 128) + "com", "longer than 253"},
	} {
		err := CheckHost(tc.host)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckHost(%q) = %v; want an error containing %q", tc.host, err, tc.want)
		}
	}
}

func TestCheckHostAllowed(t *testing.T) {
	for _, h := range []string{
		"example.com", "EXAMPLE.COM.", "api.linkedin.com", "internal.example", "local.example.com",
		"localhost.example.com", "my_host.example", "xn--bcher-kva.example", "8.8.8.8",
		"0x8.0x8.0x8.0x8", "134744072", "[2606:4700:4700::1111]", "2001:4860:4860::8888",
		"[::ffff:8.8.8.8]",
	} {
		if err := CheckHost(h); err != nil {
			t.Errorf("CheckHost(%q) = %v; want nil", h, err)
		}
	}
}

// fakeResolver answers from a table and counts lookups; a second answer,
// when set, is what a rebinding DNS server would give on the next lookup.
type fakeResolver struct {
	answers map[string][]string
	rebind  map[string][]string
	calls   atomic.Int32
}

func (f *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	n := f.calls.Add(1)
	answer, ok := f.answers[host]
	if n > 1 && f.rebind[host] != nil {
		answer = f.rebind[host]
	}
	if !ok {
		return nil, fmt.Errorf("no such host %q", host)
	}
	var out []netip.Addr
	for _, a := range answer {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

func TestDialRefusesResolvedAddresses(t *testing.T) {
	r := &fakeResolver{answers: map[string][]string{
		"internal.example": {"10.0.0.5"},
		"mapped.example":   {"::ffff:192.168.0.9"},
		"mixed.example":    {"8.8.8.8", "169.254.169.254"},
		"v6.example":       {"fd00::1"},
		"loop.example":     {"127.0.0.1"},
		"empty.example":    {},
	}}
	d := NewDialer(Options{Resolver: r})
	for _, tc := range []struct{ addr, want string }{
		{"internal.example:80", `netguard: refusing 10.0.0.5 (private address, RFC 1918) for host "internal.example"`},
		{"mapped.example:443", `netguard: refusing 192.168.0.9 (private address, RFC 1918) for host "mapped.example"`},
		{"mixed.example:80", `netguard: refusing 169.254.169.254 (cloud metadata endpoint) for host "mixed.example"`},
		{"v6.example:80", `netguard: refusing fd00::1 (unique local address (private IPv6), RFC 4193) for host "v6.example"`},
		{"loop.example:80", `netguard: refusing 127.0.0.1 (loopback address) for host "loop.example"`},
		{"empty.example:80", `netguard: resolving "empty.example": no addresses`},
		{"missing.example:80", `netguard: resolving "missing.example": no such host`},
		{"0x7f.1:80", `netguard: refusing 127.0.0.1 (loopback address) for host "0x7f.1"`},
		{"[::1]:80", `netguard: refusing ::1 (loopback address) for host "::1"`},
		{"localhost:80", `netguard: refusing host "localhost" (localhost)`},
		{"example.com", "missing port"},
		{"example.com:http", `port "http" is not a number`},
		{"example.com:70000", `port "70000" is not a number`},
	} {
		c, err := d.DialContext(context.Background(), "tcp", tc.addr)
		if c != nil {
			c.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("DialContext(%q) = %v; want an error containing %q", tc.addr, err, tc.want)
		}
	}
	var re *RefusedError
	_, err := d.DialContext(context.Background(), "tcp", "internal.example:80")
	if !errors.As(err, &re) || re.Addr != netip.MustParseAddr("10.0.0.5") {
		t.Errorf("error %v is not a *RefusedError for 10.0.0.5", err)
	}
	if _, err := d.DialContext(context.Background(), "udp", "8.8.8.8:53"); err == nil || !strings.Contains(err.Error(), `network "udp" not supported`) {
		t.Errorf("udp dial = %v; want refused", err)
	}
}

// A rebinding resolver answers loopback (allowed here) first and a private
// address afterwards; the dialer must connect to what it checked, with one
// lookup.
func TestDialUsesCheckedAddress(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	r := &fakeResolver{
		answers: map[string][]string{"rebind.example": {"::ffff:127.0.0.1"}},
		rebind:  map[string][]string{"rebind.example": {"10.0.0.5"}},
	}
	c := NewClient(Options{AllowLoopback: true, Resolver: r})
	resp, err := c.Get("http://rebind.example:" + port + "/")
	if err != nil {
		t.Fatalf("GET through the loopback answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "ok" || r.calls.Load() != 1 {
		t.Errorf("body %q after %d lookups; want \"ok\" after 1", body, r.calls.Load())
	}
	// A second connection looks up again and gets the private answer.
	c.CloseIdleConnections()
	_, err = c.Get("http://rebind.example:" + port + "/")
	if err == nil || !strings.Contains(err.Error(), `refusing 10.0.0.5 (private address, RFC 1918) for host "rebind.example"`) {
		t.Errorf("GET after rebinding = %v; want refused", err)
	}
}

func TestClientRedirects(t *testing.T) {
	mux := http.NewServeMux()
	redirect := func(path, to string) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, to, http.StatusFound) })
	}
	redirect("/to-private", "http://10.0.0.5/")
	redirect("/to-metadata", "http://169.254.169.254/latest/meta-data/")
	mux.HandleFunc("/to-octal", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://0177.0.0.1:"+r.Host[strings.LastIndex(r.Host, ":")+1:]+"/ok", http.StatusFound)
	})
	redirect("/to-name", "http://db.example/")
	redirect("/to-local", "http://printer.local/")
	redirect("/to-file", "file:///etc/passwd")
	redirect("/to-ok", "/ok")
	mux.HandleFunc("/hop/", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/hop/"))
		if n == 0 {
			io.WriteString(w, "ok")
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/hop/%d", n-1), http.StatusFound)
	})
	mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	r := &fakeResolver{answers: map[string][]string{"db.example": {"192.168.10.20"}}}
	c := NewClient(Options{AllowLoopback: true, Resolver: r})
	for _, tc := range []struct{ path, want string }{
		{"/to-private", "netguard: refusing 10.0.0.5 (private address, RFC 1918) for host \"10.0.0.5\""},
		{"/to-metadata", "refusing 169.254.169.254 (cloud metadata endpoint)"},
		{"/to-name", `refusing 192.168.10.20 (private address, RFC 1918) for host "db.example"`},
		{"/to-local", `refusing host "printer.local"`},
		{"/to-file", `refusing redirect to scheme "file"`},
		{"/hop/6", "refusing redirect 6 to " + srv.URL + "/hop/0: limit is 5 redirects"},
		{"/to-ok", ""},
		{"/hop/5", ""},
	} {
		resp, err := c.Get(srv.URL + tc.path)
		if resp != nil {
			resp.Body.Close()
		}
		if tc.want == "" {
			if err != nil {
				t.Errorf("GET %s: %v; want success", tc.path, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("GET %s = %v; want an error containing %q", tc.path, err, tc.want)
		}
	}
	// With AllowLoopback only loopback opens: 0177.0.0.1 is 127.0.0.1.
	if resp, err := c.Get(srv.URL + "/to-octal"); err != nil {
		t.Errorf("GET /to-octal with AllowLoopback: %v", err)
	} else {
		resp.Body.Close()
	}
}

func TestLoopbackRefusedByDefault(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		t.Error("the loopback server was reached")
	}))
	defer srv.Close()
	_, err := NewClient(Options{}).Get(srv.URL)
	var re *RefusedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "refusing 127.0.0.1 (loopback address)") {
		t.Errorf("GET %s = %v; want a *RefusedError for loopback", srv.URL, err)
	}
	// The switch opens loopback only, not the rest.
	if err := checkAddr("x", netip.MustParseAddr("10.0.0.1"), Options{AllowLoopback: true}); err == nil {
		t.Error("AllowLoopback let 10.0.0.1 through")
	}
	if err := checkAddr("x", netip.MustParseAddr("::1"), Options{AllowLoopback: true}); err != nil {
		t.Errorf("AllowLoopback refused ::1: %v", err)
	}
}

func FuzzCheckHost(f *testing.F) {
	for _, s := range []string{"example.com", "127.0.0.1", "0x7f.1", "017700000001", "[::ffff:127.0.0.1]",
		"localhost.", "2130706433", "[fe80::1%25eth0]", "8.8.8.8", "0x", "1.2.3.4.", "a..b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		if CheckHost(host) != nil {
			return
		}
		// Independent readings of the host as an address: none may be blocked.
		if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
			if reason, blocked := Blocked(a); blocked {
				t.Fatalf("CheckHost(%q) allowed %s (%s)", host, a, reason)
			}
		}
		num, base := strings.TrimSuffix(host, "."), 10
		switch {
		case strings.HasPrefix(num, "0x"), strings.HasPrefix(num, "0X"):
			num, base = num[2:], 16
		case strings.HasPrefix(num, "0"):
			base = 8
		}
		if n, err := strconv.ParseUint(num, base, 32); err == nil {
			a := netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
			if reason, blocked := Blocked(a); blocked {
				t.Fatalf("CheckHost(%q) allowed %s (%s)", host, a, reason)
			}
		}
		name := strings.TrimSuffix(strings.ToLower(host), ".")
		if name == "localhost" || strings.HasSuffix(name, ".local") || strings.HasSuffix(name, ".internal") {
			t.Fatalf("CheckHost(%q) allowed a local name", host)
		}
	})
}

// Options.Allow lets through exactly the address and port it names: a
// literal, a resolved name, a redirect; another port of the same address,
// or a neighbour, stays refused.
func TestAllowExactAddrPort(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hop" {
			http.Redirect(w, r, "http://"+r.Host+"/", http.StatusFound)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	ap := netip.MustParseAddrPort(strings.TrimPrefix(srv.URL, "http://"))
	r := &fakeResolver{answers: map[string][]string{"model.example": {ap.Addr().String()}}}
	c := NewClient(Options{Allow: []netip.AddrPort{ap}, Resolver: r})
	for _, u := range []string{srv.URL + "/", srv.URL + "/hop", fmt.Sprintf("http://model.example:%d/", ap.Port())} {
		resp, err := c.Get(u)
		if err != nil {
			t.Errorf("GET %s: %v", u, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "ok" {
			t.Errorf("GET %s = %q", u, body)
		}
	}
	d := NewDialer(Options{Allow: []netip.AddrPort{ap}})
	for _, addr := range []string{
		netip.AddrPortFrom(ap.Addr(), ap.Port()+1).String(),
		fmt.Sprintf("127.0.0.2:%d", ap.Port()),
		fmt.Sprintf("[::1]:%d", ap.Port()),
		fmt.Sprintf("localhost:%d", ap.Port()),
	} {
		conn, err := d.DialContext(context.Background(), "tcp", addr)
		if conn != nil {
			conn.Close()
		}
		if err == nil {
			t.Errorf("DialContext(%s) connected; want refused", addr)
		}
	}
}

func TestCheckURL(t *testing.T) {
	allow := Options{Allow: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:11434")}}
	for _, tc := range []struct {
		url  string
		opts Options
		want string // "" for accepted
	}{
		{"https://api.example.com/v1", Options{}, ""},
		{"http://127.0.0.1:11434/v1", allow, ""},
		{"http://127.0.0.1:11435/v1", allow, "loopback address"},
		{"http://127.0.0.1:11434/v1", Options{}, "loopback address"},
		{"http://0x7f.1:11434/", Options{}, "loopback address"},
		{"http://[::1]:8080/", Options{}, "loopback address"},
		{"http://169.254.169.254/latest", Options{}, "cloud metadata"},
		{"http://10.1.2.3/", Options{}, "private address"},
		{"http://localhost:11434/", allow, "localhost"},
		{"http://svc.internal/", Options{}, "local-network names"},
		{"https://user:pw@api.example.com/", Options{}, "credentials in the URL"},
		{"ftp://api.example.com/", Options{}, `scheme "ftp"`},
		{"file:///etc/passwd", Options{}, `scheme "file"`},
		{"http://%zz/", Options{}, "malformed URL"},
		{"http:///nohost", Options{}, "empty host"},
	} {
		err := CheckURL(tc.url, tc.opts)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckURL(%q) = %v; want accepted", tc.url, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("CheckURL(%q) = %v; want an error containing %q", tc.url, err, tc.want)
		}
	}
}
