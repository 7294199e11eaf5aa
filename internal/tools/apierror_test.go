package tools

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestAPIError: each status class is worded for the model with the
// message of each body shape APIs use, and the key is never quoted.
func TestAPIError(t *testing.T) {
	tests := []struct {
		name   string
		code   int
		header string
		body   string
		want   string
	}{
		{"openai 401", 401, "", `{"error":{"message":"Incorrect API key provided: sk-secret."}}`, "svc: the API key was refused (HTTP 401): Incorrect API key provided: [redacted]."},
		{"403 without a body", 403, "", ``, "svc: the API key was refused (HTTP 403)"},
		{"429 seconds", 429, "7", `{"error":"slow down"}`, "svc: rate limited (HTTP 429): the account's request rate or quota is used up; retry after 7 seconds: slow down"},
		{"429 date", 429, "Wed, 21 Oct 2026 07:28:00 GMT", `{"message":"quota"}`, "svc: rate limited (HTTP 429): the account's request rate or quota is used up; retry after 07:28:00 UTC: quota"},
		{"429 nonsense header", 429, "soon", ``, "svc: rate limited (HTTP 429): the account's request rate or quota is used up; it gave no retry time, so wait before trying again"},
		{"validation list", 422, "", `{"detail":[{"loc":["body","text"],"msg":"field required","type":"value_error.missing"}]}`, "svc: the request was refused (HTTP 422): field required"},
		{"detail string", 400, "", `{"detail":"Not Found"}`, "svc: the request was refused (HTTP 400): Not Found"},
		{"plain text, one line", 500, "", "upstream\nbroke\x07", "svc: the service failed (HTTP 500); try again later: upstream broke"},
		{"html is not quoted", 502, "", "<html><body>Bad gateway</body></html>", "svc: the service failed (HTTP 502); try again later"},
		{"long message cut", 400, "", `{"error":{"message":"` + strings.Repeat("a", 400) + `"}}`, "svc: the request was refused (HTTP 400): " + strings.Repeat("a", 300) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := &http.Response{StatusCode: tt.code, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(tt.body))}
			if tt.header != "" {
				resp.Header.Set("Retry-After", tt.header)
			}
			if got := APIError("svc", resp, "sk-secret", "").Error(); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}
