package provider

import (
	"context"
	"errors"
	"net/http"
	"testing"
)

func TestPostJSON(t *testing.T) {
	tests := []struct {
		name       string
		handlers   []http.HandlerFunc
		retries    int
		wantBody   string
		wantStatus int // of the *Error; 0 for success
		wantReqs   int
	}{
		{"ok", []http.HandlerFunc{jsonReply(200, `{"ok":true}`)}, 0, `{"ok":true}`, 0, 1},
		{"retries a 500 then succeeds", []http.HandlerFunc{jsonReply(500, `{"error":{"message":"boom"}}`), jsonReply(200, `{"ok":1}`)}, 0, `{"ok":1}`, 0, 2},
		{"401 is final", []http.HandlerFunc{jsonReply(401, `{"error":{"message":"bad key","code":401}}`)}, 0, "", 401, 1},
		{"no retries asked", []http.HandlerFunc{jsonReply(429, `{"error":{"message":"slow down"}}`, "Retry-After", "3")}, -1, "", 429, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeServer(t, tc.handlers...)
			h := http.Header{}
			h.Set("Authorization", "Bearer k")
			got, err := PostJSON(context.Background(), PostOptions{Name: "openrouter", Header: h, MaxRetries: tc.retries, Client: srv.Client()}, srv.URL+"/x", []byte(`{"a":1}`))
			reqs := srv.requests()
			if len(reqs) != tc.wantReqs {
				t.Fatalf("%d requests, want %d", len(reqs), tc.wantReqs)
			}
			if a := reqs[0].Header.Get("Authorization"); a != "Bearer k" {
				t.Errorf("Authorization = %q", a)
			}
			if reqs[0].Body["a"] != float64(1) {
				t.Errorf("body = %v", reqs[0].Body)
			}
			if tc.wantStatus == 0 {
				if err != nil || string(got) != tc.wantBody {
					t.Fatalf("PostJSON = %q, %v; want %q", got, err, tc.wantBody)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Status != tc.wantStatus || e.Provider != "openrouter" {
				t.Fatalf("error = %#v, want *Error with status %d", err, tc.wantStatus)
			}
		})
	}
}
