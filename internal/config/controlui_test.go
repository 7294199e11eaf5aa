package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseOrigin(t *testing.T) {
	cases := []struct {
		in, origin, host, err string
	}{
		{"https://talon.example.com", "https://talon.example.com", "talon.example.com", ""},
		{"HTTP://Talon.Example.COM:8443/", "http://talon.example.com:8443", "talon.example.com:8443", ""},
		{"http://[::1]:18789", "http://[::1]:18789", "[::1]:18789", ""},
		{"http://127.0.0.1:18789", "http://127.0.0.1:18789", "127.0.0.1:18789", ""},
		{"talon.example.com", "", "", "want an http:// or https:// origin"},
		{"ws://talon.example.com", "", "", "want an http:// or https:// origin"},
		{"null", "", "", "want an http:// or https:// origin"},
		{"https://", "", "", "no host"},
		{"https://:443", "", "", "no host"},
		{"https://talon.example.com/app", "", "", "nothing after it"},
		{"https://u:p@talon.example.com", "", "", "nothing after it"},
		{"https://talon.example.com?x=1", "", "", "nothing after it"},
		{"https://talon.example.com#x", "", "", "nothing after it"},
		{"https://talon example.com", "", "", "not a URL"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			origin, host, err := ParseOrigin(c.in)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("ParseOrigin = %q, %q, %v; want an error with %q", origin, host, err, c.err)
				}
				return
			}
			if err != nil || origin != c.origin || host != c.host {
				t.Errorf("ParseOrigin = %q, %q, %v; want %q, %q", origin, host, err, c.origin, c.host)
			}
		})
	}
}

// TestControlUI: allowedOrigins is read and each entry checked, naming
// its index; the rest of OpenClaw's controlUi is reported unused.
func TestControlUI(t *testing.T) {
	c, warns, err := decodeJSON5(t, `{gateway: {controlUi: {
		allowedOrigins: ["https://talon.example.com", "*", "talon.example.com", "https://x.example/path"],
		basePath: "/openclaw",
	}}}`)
	want := []Issue{
		{"gateway.controlUi.allowedOrigins[2]", `"talon.example.com": want an http:// or https:// origin`},
		{"gateway.controlUi.allowedOrigins[3]", `"https://x.example/path": an origin is scheme://host[:port] with nothing after it`},
	}
	if diff := cmp.Diff(want, issuesOf(t, err)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Issue{{"gateway.controlUi.basePath", MsgUnused}}, warns); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if len(c.Gateway.ControlUI.AllowedOrigins) != 4 {
		t.Errorf("allowedOrigins = %q", c.Gateway.ControlUI.AllowedOrigins)
	}
}
