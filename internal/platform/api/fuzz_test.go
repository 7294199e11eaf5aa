package api

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

// FuzzDecodeRequest feeds request bodies through the decoder and the
// checks: no panic, and every refusal is a client error (4xx).
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{`{"id":"acme","name":"A","env":{"K":"v"}}`, `{"user":"u","message":"hi"}`, `{"id":1}`, `[]`, `{"x":`, `{} {}`, `null`, ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var q createTenantReq
		err := decodeJSON(strings.NewReader(body), &q)
		if err == nil {
			err = q.check()
		}
		var c chatReq
		cerr := decodeJSON(strings.NewReader(body), &c)
		if cerr == nil {
			cerr = c.check()
		}
		for _, err := range []error{err, cerr} {
			var ae *apiError
			if err != nil && (!errors.As(err, &ae) || ae.status < 400 || ae.status >= 500 || ae.status == http.StatusUnsupportedMediaType) {
				t.Fatalf("body %q: %v is not a 4xx refusal", body, err)
			}
		}
	})
}
