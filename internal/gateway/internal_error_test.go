package gateway

import (
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"talon/internal/talonproc"
)

// TestInternalErrorsStayInTheLog: a tenant whose config cannot be loaded
// makes the HTTP endpoints answer 500 with a fixed message; the file's
// path and the parse error are in the log only.
func TestInternalErrorsStayInTheLog(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "talon.json"), []byte(`{}`))
	broken := filepath.Join(dir, "tenants", "acme", "talon.json")
	writeFile(t, broken, []byte(`{gateway: {auth: {token: "acme-token"}}, agents: [unclosed`))
	var log talonproc.Buffer
	ts := startServerWith(t, dir, nil, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&log, nil)) })

	cases := []struct{ method, path, body string }{
		{"POST", "/v1/chat/completions", `{"model":"openclaw","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"GET", "/v1/models", ""},
		{"GET", "/v1/models/openclaw", ""},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			before := len(log.String())
			req, err := http.NewRequest(c.method, ts.url+c.path, strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer acme-token")
			req.Header.Set("X-Tenant-ID", "acme")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if want := `{"error":{"message":"tenant configuration cannot be loaded","type":"api_error"}}` + "\n"; resp.StatusCode != 500 || string(body) != want {
				t.Fatalf("%d %q, want 500 %q", resp.StatusCode, body, want)
			}
			if logged := log.String()[before:]; !strings.Contains(logged, "tenant load") || !strings.Contains(logged, broken) {
				t.Errorf("the log does not say why, with %s:\n%s", broken, logged)
			}
		})
	}
}
