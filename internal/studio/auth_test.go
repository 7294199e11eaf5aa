package studio

import (
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// badNexts are post-sign-in targets that lead, or might lead in some
// browser, off the site.
var badNexts = []string{
	"",
	"//evil.example",
	"//evil.example/",
	"/\\evil.example",
	"\\/evil.example",
	"/%09/evil.example",
	"/%0a/evil.example",
	"/%0d%0a/evil.example",
	"/%5cevil.example",
	"/%2f/evil.example",
	"/%252f/evil.example",
	"/%25252f/evil.example",
	"%2f%2fevil.example",
	"%2F%2Fevil.example",
	"https://evil.example",
	"http:evil.example",
	"//user@evil.example",
	"/\t/evil.example",
	"/\n/evil.example",
	"/\r/evil.example",
	"/ /evil.example",
	"/\x00/evil.example",
	"/\x7f/evil.example",
	"javascript:alert(1)",
	"JavaScript:alert(1)",
	"data:text/html,x",
	"/./..//evil.example",
	"/..//evil.example",
	"/a/../../evil.example",
	"/%2e%2e/%2e%2e//evil.example",
	"/a//evil.example",
	"/\u2215evil.example",
	"/\uff0fevil.example",
	"/\u2044evil.example",
	"/%e2%88%95evil.example",
	"/\u00a0/evil.example",
	"/\u3000/evil.example",
	"/a\r\nSet-Cookie: x=1",
	"/a%0d%0aSet-Cookie:%20x=1",
	"/%zz",
	"evil.example",
	"./x",
	"/" + strings.Repeat("a", maxNext),
}

// goodNexts are Studio's own pages, as signedIn sends them.
var goodNexts = []string{
	"/",
	"/agents",
	"/agents/main",
	"/tenants/acme",
	"/tenants/acme?x=1",
	"/tenants/acme/",
	"/tenants/acme?x=1&y=a-b_c#top",
	"/agents/main?session=agent%3Amain%3Amain",
	"/javascript:alert(1)",
}

func TestSafeNext(t *testing.T) {
	for _, in := range badNexts {
		t.Run("bad "+url.PathEscape(in[:min(len(in), 40)]), func(t *testing.T) {
			if got := safeNext(in); got != "/" {
				t.Errorf("safeNext(%q) = %q, want /", in, got)
			}
		})
	}
	for _, in := range goodNexts {
		t.Run("good "+in, func(t *testing.T) {
			if got := safeNext(in); got != in {
				t.Errorf("safeNext(%q) = %q, want it kept", in, got)
			}
		})
	}
}

// TestSignInNext signs in with each target: an off-site one sends the
// person to /, and the sign-in page does not carry it either.
func TestSignInNext(t *testing.T) {
	e := newEnv(t, "")
	b := &browser{e: e, c: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	cases := map[string]string{}
	for _, n := range badNexts {
		cases[n] = "/"
	}
	for _, n := range goodNexts {
		cases[n] = n
	}
	for next, want := range cases {
		t.Run(url.PathEscape(next[:min(len(next), 40)]), func(t *testing.T) {
			res, body := b.postRaw("/signin", url.Values{"token": {adminToken}, "next": {next}}, "")
			if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != want {
				t.Fatalf("next %q: %d to %q, want %q\n%s", next, res.StatusCode, res.Header.Get("Location"), want, body)
			}
			res, body = b.get("/signin?" + url.Values{"next": {next}}.Encode())
			if res.StatusCode != http.StatusOK || !strings.Contains(body, `name="next" value="`+template.HTMLEscapeString(want)+`"`) {
				t.Fatalf("the sign-in page for next %q: %d, want it to carry %q\n%s", next, res.StatusCode, want, body)
			}
		})
	}
}
