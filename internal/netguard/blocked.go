package netguard

import (
	"fmt"
	"net/netip"
)

// rng is one address range with the reason given when an address falls in it.
type rng struct {
	prefix netip.Prefix
	reason string
}

func p(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// Specific entries come before the ranges that contain them (metadata
// addresses before CGNAT, link-local and ULA) so the reason names the most
// precise danger.
var v4Ranges = []rng{
	{p("169.254.169.254/32"), "cloud metadata endpoint"},
	{p("100.100.100.200/32"), "cloud metadata endpoint (Alibaba Cloud)"},
	{p("168.63.129.16/32"), "cloud platform endpoint (Azure WireServer)"},
	{p("255.255.255.255/32"), "broadcast address"},
	{p("0.0.0.0/8"), "unspecified address (\"this network\", RFC 1122)"},
	{p("10.0.0.0/8"), "private address, RFC 1918"},
	{p("100.64.0.0/10"), "shared address space (carrier-grade NAT), RFC 6598"},
	{p("127.0.0.0/8"), "loopback address"},
	{p("169.254.0.0/16"), "link-local address"},
	{p("172.16.0.0/12"), "private address, RFC 1918"},
	{p("192.0.0.0/24"), "IETF protocol assignment, RFC 6890"},
	{p("192.0.2.0/24"), "documentation address (TEST-NET-1), RFC 5737"},
	{p("192.88.99.0/24"), "6to4 relay anycast, RFC 7526"},
	{p("192.168.0.0/16"), "private address, RFC 1918"},
	{p("198.18.0.0/15"), "benchmarking address, RFC 2544"},
	{p("198.51.100.0/24"), "documentation address (TEST-NET-2), RFC 5737"},
	{p("203.0.113.0/24"), "documentation address (TEST-NET-3), RFC 5737"},
	{p("224.0.0.0/4"), "multicast address"},
	{p("240.0.0.0/4"), "reserved address (future use), RFC 1112"},
}

var v6Ranges = []rng{
	{p("::/128"), "unspecified address"},
	{p("::1/128"), "loopback address"},
	{p("fd00:ec2::254/128"), "cloud metadata endpoint (AWS IPv6)"},
	{p("64:ff9b:1::/48"), "local-use NAT64 address, RFC 8215"},
	{p("100::/64"), "discard-only address, RFC 6666"},
	{p("2001:2::/48"), "benchmarking address, RFC 5180"},
	{p("2001:10::/28"), "ORCHID address, RFC 4843"},
	{p("2001:20::/28"), "ORCHIDv2 address, RFC 7343"},
	{p("2001:db8::/32"), "documentation address, RFC 3849"},
	{p("3fff::/20"), "documentation address, RFC 9637"},
	{p("fc00::/7"), "unique local address (private IPv6), RFC 4193"},
	{p("fe80::/10"), "link-local address"},
	{p("fec0::/10"), "site-local address (deprecated), RFC 3879"},
	{p("ff00::/8"), "multicast address"},
}

var (
	mapped  = p("::ffff:0:0/96")
	compat  = p("::/96")
	nat64   = p("64:ff9b::/96")
	sixTo4  = p("2002::/16")
	teredo  = p("2001::/32")
	global6 = p("2000::/3")
)

// Blocked reports whether ip must not be contacted, and why. The zone of a
// scoped IPv6 address is ignored: the address alone decides. IPv6 forms that
// carry an IPv4 address (mapped, NAT64, 6to4, Teredo) are blocked when the
// IPv4 address inside is. Any IPv6 address outside 2000::/3 that no rule
// names is blocked too: nothing else is global unicast.
func Blocked(ip netip.Addr) (reason string, blocked bool) {
	if !ip.IsValid() {
		return "invalid address", true
	}
	ip = ip.WithZone("")
	if ip.Is4() {
		return blocked4(ip)
	}
	for _, r := range v6Ranges {
		if r.prefix.Contains(ip) {
			return r.reason, true
		}
	}
	b := ip.As16()
	switch {
	case mapped.Contains(ip):
		return embedded("IPv4-mapped IPv6 address", ip.Unmap())
	case nat64.Contains(ip):
		return embedded("NAT64 address", netip.AddrFrom4([4]byte(b[12:16])))
	case compat.Contains(ip):
		return "IPv4-compatible IPv6 address (deprecated, RFC 4291)", true
	case sixTo4.Contains(ip):
		return embedded("6to4 address", netip.AddrFrom4([4]byte(b[2:6])))
	case teredo.Contains(ip):
		if r, bad := embedded("Teredo address (server)", netip.AddrFrom4([4]byte(b[4:8]))); bad {
			return r, true
		}
		client := [4]byte{^b[12], ^b[13], ^b[14], ^b[15]}
		return embedded("Teredo address (client)", netip.AddrFrom4(client))
	case !global6.Contains(ip):
		return "reserved IPv6 address outside global unicast 2000::/3", true
	}
	return "", false
}

func blocked4(ip netip.Addr) (string, bool) {
	for _, r := range v4Ranges {
		if r.prefix.Contains(ip) {
			return r.reason, true
		}
	}
	return "", false
}

// embedded classifies the IPv4 address carried inside an IPv6 form.
func embedded(form string, v4 netip.Addr) (string, bool) {
	if r, bad := blocked4(v4); bad {
		return fmt.Sprintf("%s of %s: %s", form, v4, r), true
	}
	return "", false
}

// allowed applies Blocked with the loopback exception of opts: only
// 127.0.0.0/8 and ::1 (also in IPv4-mapped form, which Go's resolver returns
// for A records) are let through, and only when opts.AllowLoopback is set.
func allowed(ip netip.Addr, opts Options) (reason string, ok bool) {
	if opts.AllowLoopback {
		u := ip.WithZone("").Unmap()
		if (u.Is4() && u.IsLoopback()) || u == netip.IPv6Loopback() {
			return "", true
		}
	}
	r, bad := Blocked(ip)
	return r, !bad
}
