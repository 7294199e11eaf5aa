package netguard

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// RefusedError says which host was refused and why. Addr is the address
// that was refused, or the zero Addr when the host name itself was refused.
type RefusedError struct {
	Host   string
	Addr   netip.Addr
	Reason string
}

func (e *RefusedError) Error() string {
	if e.Addr.IsValid() {
		return fmt.Sprintf("netguard: refusing %s (%s) for host %q", e.Addr, e.Reason, e.Host)
	}
	return fmt.Sprintf("netguard: refusing host %q (%s)", e.Host, e.Reason)
}

// localSuffixes are names that resolve inside the local network or machine
// whatever public DNS says.
var localSuffixes = []string{".localhost", ".internal", ".local", ".localdomain"}

// CheckHost refuses a host (as in a URL, with or without IPv6 brackets) that
// is empty, a local-only name, or an IP literal in any form a URL parser or
// inet_aton accepts (dotted, decimal, hex, octal, short forms, IPv6 with
// zone) whose address is blocked. A DNS name that passes still has to pass
// the connect-time check of a Dialer: only that check sees its addresses.
func CheckHost(host string) error {
	_, _, err := checkHost(host, Options{})
	return err
}

// checkHost returns the literal address of host when it is one (isIP true).
func checkHost(host string, opts Options) (addr netip.Addr, isIP bool, err error) {
	refuse := func(reason string) error { return &RefusedError{Host: host, Reason: reason} }
	if host == "" {
		return netip.Addr{}, false, refuse("empty host")
	}
	if strings.HasPrefix(host, "[") || strings.Contains(host, ":") {
		addr, err := parseIPv6(host)
		if err != nil {
			return netip.Addr{}, false, refuse(err.Error())
		}
		return addr, true, checkAddr(host, addr, opts)
	}
	for i := 0; i < len(host); i++ {
		// Non-ASCII is refused because URL parsers map some of it to ASCII
		// (fullwidth digits become an IPv4 literal under IDNA); a caller with
		// an international name passes its punycode (xn--) form.
		c := host[i]
		if c >= 0x80 || !(isAlnum(c) || c == '.' || c == '-' || c == '_') {
			return netip.Addr{}, false, refuse(fmt.Sprintf("character %q not allowed in a host name", rune(c)))
		}
	}
	if len(host) > 254 {
		return netip.Addr{}, false, refuse("host name longer than 253 characters")
	}
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	if name == "localhost" {
		return netip.Addr{}, false, refuse("localhost")
	}
	for _, s := range localSuffixes {
		if strings.HasSuffix(name, s) {
			return netip.Addr{}, false, refuse(fmt.Sprintf("%s names are local-network names", s))
		}
	}
	labels := strings.Split(name, ".")
	if isNumber(labels[len(labels)-1]) {
		// As in the WHATWG URL parser: a host whose last label is a number
		// is an IPv4 address, or else invalid — never a name to look up.
		addr, err := parseIPv4(labels)
		if err != nil {
			return netip.Addr{}, false, refuse(err.Error())
		}
		return addr, true, checkAddr(host, addr, opts)
	}
	for _, l := range labels {
		if l == "" {
			return netip.Addr{}, false, refuse("empty label in host name")
		}
	}
	return netip.Addr{}, false, nil
}

func checkAddr(host string, addr netip.Addr, opts Options) error {
	if reason, ok := allowed(addr, opts); !ok {
		return &RefusedError{Host: host, Addr: addr, Reason: reason}
	}
	return nil
}

// parseIPv6 parses "[addr]", "[addr%zone]", "[addr%25zone]" or a bare
// IPv6 address.
func parseIPv6(host string) (netip.Addr, error) {
	s := host
	if strings.HasPrefix(s, "[") {
		if !strings.HasSuffix(s, "]") {
			return netip.Addr{}, fmt.Errorf("unclosed [ in IPv6 host")
		}
		s = s[1 : len(s)-1]
	}
	s = strings.Replace(s, "%25", "%", 1)
	addr, err := netip.ParseAddr(s)
	if err != nil || !addr.Is6() {
		return netip.Addr{}, fmt.Errorf("malformed IPv6 address")
	}
	return addr, nil
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// isNumber reports whether a label is an IPv4 number in the URL parser's
// sense: decimal digits, or 0x followed by hex digits (possibly none).
func isNumber(l string) bool {
	if l == "" {
		return false
	}
	digits, hex := l, false
	if len(l) >= 2 && l[0] == '0' && (l[1] == 'x' || l[1] == 'X') {
		digits, hex = l[2:], true
	}
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if !(c >= '0' && c <= '9' || hex && (c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F')) {
			return false
		}
	}
	return true
}

// parseIPv4 reads one to four numbers (decimal, 0x hex, 0 octal) the way
// inet_aton does: the last number fills all the bytes left.
func parseIPv4(labels []string) (netip.Addr, error) {
	if len(labels) > 4 {
		return netip.Addr{}, fmt.Errorf("numeric host with more than four parts")
	}
	var v uint64
	for i, l := range labels {
		n, err := parseIPv4Number(l)
		if err != nil {
			return netip.Addr{}, err
		}
		if i < len(labels)-1 {
			if n > 255 {
				return netip.Addr{}, fmt.Errorf("IPv4 part %q above 255", l)
			}
			v |= n << (8 * (3 - i))
			continue
		}
		if n >= 1<<(8*(4-i)) {
			return netip.Addr{}, fmt.Errorf("IPv4 part %q too large", l)
		}
		v |= n
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), nil
}

func parseIPv4Number(l string) (uint64, error) {
	s, base := l, 10
	switch {
	case len(l) >= 2 && (l[:2] == "0x" || l[:2] == "0X"):
		s, base = l[2:], 16
		if s == "" {
			return 0, nil
		}
	case len(l) >= 2 && l[0] == '0':
		s, base = l[1:], 8
	}
	if s == "" {
		return 0, fmt.Errorf("empty IPv4 part")
	}
	n, err := strconv.ParseUint(s, base, 32)
	if errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("IPv4 part %q too large", l)
	}
	if err != nil {
		return 0, fmt.Errorf("malformed IPv4 part %q", l)
	}
	return n, nil
}
