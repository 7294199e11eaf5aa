package tools

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"talon/internal/config"
	"talon/internal/netguard"
)

// TestOutboundKey: a configured key wins (a variable it names read from
// the tenant's env only); without one the fallback variable comes from
// the tenant's env, and the operator's only for the provider's own host.
func TestOutboundKey(t *testing.T) {
	tenant := func(k string) string {
		return map[string]string{"MY_KEY": "tenant-var", "BRAVE_API_KEY": "tenant-brave"}[k]
	}
	operator := func(k string) string { return map[string]string{"BRAVE_API_KEY": "operator-brave", "OTHER": "op"}[k] }
	tests := []struct {
		name        string
		o           Outbound
		key         *config.Secret
		defaultHost bool
		want, err   string
	}{
		{"literal", Outbound{Env: tenant}, &config.Secret{Text: "lit"}, false, "lit", ""},
		{"variable", Outbound{Env: tenant, Builtin: operator}, &config.Secret{Text: "${MY_KEY}"}, false, "tenant-var", ""},
		{"reference", Outbound{Env: tenant}, &config.Secret{Env: "MY_KEY"}, false, "tenant-var", ""},
		{"unset variable is an error, never the operator's", Outbound{Env: tenant, Builtin: operator}, &config.Secret{Text: "${OTHER}"}, true, "",
			"reading secret: environment variable OTHER is not set"},
		{"fallback from the tenant", Outbound{Env: tenant, Builtin: operator}, nil, true, "tenant-brave", ""},
		{"operator's only for the own host", Outbound{Builtin: operator}, nil, true, "operator-brave", ""},
		{"operator's never elsewhere", Outbound{Builtin: operator}, nil, false, "", ""},
		{"nothing", Outbound{}, nil, true, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.o.Key(tt.key, "BRAVE_API_KEY", tt.defaultHost)
			if msg := errText(err); got != tt.want || msg != tt.err {
				t.Errorf("Key = %q, %q; want %q, %q", got, msg, tt.want, tt.err)
			}
		})
	}
}

// TestOutboundClient: the client dials what the rule allows and nothing
// else, and a redirect is an error.
func TestOutboundClient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "/", http.StatusFound)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	open := netguard.Options{AllowLoopback: true}
	tests := []struct {
		name     string
		o        Outbound
		loopback bool
		path     string
		want     int // status, 0 for a refused dial
	}{
		{"loopback refused by default", Outbound{}, false, "/", 0},
		{"loopback when the run allows it", Outbound{}, true, "/", 200},
		{"the guard decides over the run", Outbound{Guard: &netguard.Options{}}, true, "/", 0},
		{"a guard that opens loopback", Outbound{Guard: &open}, false, "/", 200},
		{"a redirect is an error", Outbound{Guard: &open}, false, "/moved", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := tt.o.Client(tt.loopback, 5*time.Second).Get(srv.URL + tt.path)
			got := 0
			if err == nil {
				got = resp.StatusCode
				resp.Body.Close()
			}
			if got != tt.want {
				t.Errorf("status %d (err %v), want %d", got, err, tt.want)
			}
		})
	}
}
