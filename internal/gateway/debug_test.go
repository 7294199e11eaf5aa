package gateway

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
)

// TestDebugRuntime: the goroutine count needs the default tenant's token;
// without it the route is an ordinary 404.
func TestDebugRuntime(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "talon.json"), []byte(`{gateway:{auth:{token:"k"}}}`))
	ts := startServer(t, dir, nil)
	tests := []struct {
		name, token string
		want        int
	}{
		{"the token", "k", 200},
		{"a wrong token", "nope", 404},
		{"no token", "", 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, ts.url+"/debug/runtime", nil)
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var got struct {
				Goroutines *int
				HeapBytes  int64
				OpenFiles  int
				Tenants    *struct{ Known, Warm int }
				Error      *struct{ Type string }
			}
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.want)
			}
			if tt.want == 200 && (got.Goroutines == nil || *got.Goroutines < 1 || got.HeapBytes <= 0 || got.OpenFiles < 1 || got.Tenants == nil) {
				t.Errorf("figures %+v: want goroutines, heapBytes, openFiles and tenants", got)
			}
			if tt.want == 404 && (got.Goroutines != nil || got.Error == nil || got.Error.Type != errNotFound) {
				t.Errorf("refusal leaks the figure or is not the usual 404: %+v", got)
			}
		})
	}
	// Over a non-loopback connection even the right token gets the 404.
	req := httptest.NewRequest(http.MethodGet, "/debug/runtime", nil)
	req.RemoteAddr = "192.0.2.7:40000"
	req.Host = "127.0.0.1"
	req.Header.Set("Authorization", "Bearer k")
	rec := httptest.NewRecorder()
	ts.srv.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusNotFound {
		t.Errorf("from 192.0.2.7: status %d, want 404", rec.Code)
	}
}
