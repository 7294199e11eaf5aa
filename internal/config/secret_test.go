package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// R is the sentinel, short for the tables below.
const R = RedactedSentinel

// TestRedactForms: each form of secret config.get hides (issue 17, item
// 8), what stays readable around it, and that Restore undoes it.
func TestRedactForms(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"url password",
			`{models: {providers: {p: {baseUrl: "https://user:pa55@llm.example.com:8443/v1?x=1"}}}}`,
			`{models: {providers: {p: {baseUrl: "https://user:` + R + `@llm.example.com:8443/v1?x=1"}}}}`},
		{"url user alone is a token",
			`{plugins: {load: {source: "https://ghp_abc123@github.com/o/r.git"}}}`,
			`{plugins: {load: {source: "https://` + R + `@github.com/o/r.git"}}}`},
		{"url with an empty password and no userinfo",
			`{a: "https://user:@h.example.com/", b: "https://h.example.com/p@q", c: "postgres://db.example.com/x"}`,
			`{a: "https://user:@h.example.com/", b: "https://h.example.com/p@q", c: "postgres://db.example.com/x"}`},
		{"secret query parameters",
			`{tools: {web: {search: {endpoint: "https://s.example.com/q?api_key=K1&lang=en&apiKey=K2&token=&sig=S&X-Amz-Signature=A&auth=B&pat=P&access_token=T&maxTokens=5&key=K3&a%5Fkey=x"}}}}`,
			`{tools: {web: {search: {endpoint: "https://s.example.com/q?api_key=` + R + `&lang=en&apiKey=` + R + `&token=&sig=` + R + `&X-Amz-Signature=` + R + `&auth=` + R + `&pat=` + R + `&access_token=` + R + `&maxTokens=5&key=` + R + `&a%5Fkey=x"}}}}`},
		{"fragment parameters",
			`{cb: "https://app.example.com/cb#access_token=T&state=s"}`,
			`{cb: "https://app.example.com/cb#access_token=` + R + `&state=s"}`},
		{"telegram bot token in a path",
			`{channels: {telegram: {apiRoot: "https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/sendMessage"}}}`,
			`{channels: {telegram: {apiRoot: "https://api.telegram.org/bot` + R + `/sendMessage"}}}`},
		{"only whole strings that are URLs",
			`{a: "user:pass@host", b: "see https://u:p@h.example.com", c: "no scheme ?token=x"}`,
			`{a: "user:pass@host", b: "see https://u:p@h.example.com", c: "no scheme ?token=x"}`},
		{"secret headers",
			`{mcp: {servers: {x: {url: "https://m.example.com/mcp", headers: {Authorization: "Bearer a", Cookie: "c=1", "Set-Cookie": "s=2", "X-Auth-User": "u", "X-Custom-Token": "t", "X-Session-Id": "si", "Proxy-Authorization": "Basic x", "X-Api-Key": "k", "X-Signature": "g", Accept: "application/json", "X-Request-Source": "talon"}}}}}`,
			`{mcp: {servers: {x: {url: "https://m.example.com/mcp", headers: {Authorization: "` + R + `", Cookie: "` + R + `", "Set-Cookie": "` + R + `", "X-Auth-User": "` + R + `", "X-Custom-Token": "` + R + `", "X-Session-Id": "` + R + `", "Proxy-Authorization": "` + R + `", "X-Api-Key": "` + R + `", "X-Signature": "` + R + `", Accept: "application/json", "X-Request-Source": "talon"}}}}}`},
		{"signing, private and client keys; credentials",
			`{channels: {slack: {signingSecret: "s", signingKey: "k", appToken: "xapp"}}, hooks: {webhookSecret: "w", privateKey: "p", clientSecret: "c", encryptionKey: "e", masterKey: "m", passphrase: "pp", credentials: {type: "service_account", client_email: "a@b", private_key: "pk", nested: ["x"]}, credentialsPath: "/etc/c.json", privateKeyPath: "/k", sessionKey: "agent:main", mainKey: "main", keyPrefix: "kp"}}`,
			`{channels: {slack: {signingSecret: "` + R + `", signingKey: "` + R + `", appToken: "` + R + `"}}, hooks: {webhookSecret: "` + R + `", privateKey: "` + R + `", clientSecret: "` + R + `", encryptionKey: "` + R + `", masterKey: "` + R + `", passphrase: "` + R + `", credentials: {type: "` + R + `", client_email: "` + R + `", private_key: "` + R + `", nested: ["` + R + `"]}, credentialsPath: "/etc/c.json", privateKeyPath: "/k", sessionKey: "agent:main", mainKey: "main", keyPrefix: "kp"}}`},
		{"webhook URLs whole",
			`{channels: {slack: {webhookUrl: "https://hooks.slack.com/services/T0/B0/XX"}, discord: {webhook: "https://discord.com/api/webhooks/1/abc"}, teams: {incomingWebhook: "https://x.example.com/hook/abc"}, telegram: {webhookPath: "/telegram", webhookUrl: "https://gw.example.com/tg"}}, notify: {url: "https://hooks.slack.com/services/T1/B1/YY", also: ["https://acme.webhook.office.com/webhookb2/x"]}}`,
			`{channels: {slack: {webhookUrl: "` + R + `"}, discord: {webhook: "` + R + `"}, teams: {incomingWebhook: "` + R + `"}, telegram: {webhookPath: "/telegram", webhookUrl: "` + R + `"}}, notify: {url: "` + R + `", also: ["` + R + `"]}}`},
		{"mcp args, env and url",
			`{mcp: {servers: {gh: {command: "npx", args: ["-y", "@mcp/server", "--token", "T1", "--api-key=K1", "--password", "--odd", "GITHUB_TOKEN=G1", "LOG_LEVEL=debug", "--verbose", "--url", "https://u:p@h.example.com/x?key=k", "--max-tokens", "100", "-token", "T2", "--token=", "--client-secret", "", "--auth", "A", "-", "--"], env: {GITHUB_TOKEN: "g", DEBUG: "1"}}}}}`,
			`{mcp: {servers: {gh: {command: "npx", args: ["-y", "@mcp/server", "--token", "` + R + `", "--api-key=` + R + `", "--password", "` + R + `", "GITHUB_TOKEN=` + R + `", "LOG_LEVEL=debug", "--verbose", "--url", "https://u:` + R + `@h.example.com/x?key=` + R + `", "--max-tokens", "100", "-token", "` + R + `", "--token=", "--client-secret", "", "--auth", "` + R + `", "-", "--"], env: {GITHUB_TOKEN: "` + R + `", DEBUG: "` + R + `"}}}}}`},
		{"a flag at the end of args",
			`{x: {args: ["--token"]}}`,
			`{x: {args: ["--token"]}}`},
		{"args words that are not strings part a flag from its value",
			`{x: {args: ["--token", 5, "plain", {k: "https://u:p@h.example.com"}]}}`,
			`{x: {args: ["--token", 5, "plain", {k: "https://u:` + R + `@h.example.com"}]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := mustJSON5(t, tt.in)
			got := Redact(in)
			if diff := cmp.Diff(compact(t, mustJSON5(t, tt.want)), compact(t, got)); diff != "" {
				t.Errorf("Redact (-want +got):\n%s", diff)
			}
			back, err := Restore(got, in)
			if err != nil {
				t.Fatalf("Restore(Redact(x), x): %v", err)
			}
			if !Equal(back, in) {
				t.Errorf("Restore(Redact(x), x) = %s, want %s", compact(t, back), compact(t, in))
			}
		})
	}
}

// TestRedactRestoreParts: a string or args array with a redacted part comes
// back from disk only as config.get showed it; an edit must send the
// value whole.
func TestRedactRestoreParts(t *testing.T) {
	const disk = `{p: {baseUrl: "https://u:pw@llm.example.com/v1?api_key=K&x=1"}, mcp: {servers: {gh: {command: "gh", args: ["--token", "T", "--api-key=K"]}}}}`
	tests := []struct{ name, next, want, err string }{
		{"a URL as shown",
			`{p: {baseUrl: "https://u:` + R + `@llm.example.com/v1?api_key=` + R + `&x=1"}}`,
			`{"p":{"baseUrl":"https://u:pw@llm.example.com/v1?api_key=K&x=1"}}`, ""},
		{"a URL moved to another host keeps no password",
			`{p: {baseUrl: "https://u:` + R + `@evil.example.com/v1?api_key=` + R + `&x=1"}}`, "",
			"p.baseUrl: a value with a redacted part was changed or has none stored; send it whole"},
		{"a URL with an edited query",
			`{p: {baseUrl: "https://u:` + R + `@llm.example.com/v1?api_key=` + R + `&x=2"}}`, "",
			"p.baseUrl: a value with a redacted part was changed or has none stored; send it whole"},
		{"a URL with a redacted part where none is stored",
			`{q: {baseUrl: "https://u:` + R + `@llm.example.com/"}}`, "",
			"q.baseUrl: a value with a redacted part was changed or has none stored; send it whole"},
		{"a URL sent whole",
			`{p: {baseUrl: "https://u:new@llm.example.com/v2"}}`,
			`{"p":{"baseUrl":"https://u:new@llm.example.com/v2"}}`, ""},
		{"args as shown",
			`{mcp: {servers: {gh: {command: "gh", args: ["--token", "` + R + `", "--api-key=` + R + `"]}}}}`,
			`{"mcp":{"servers":{"gh":{"command":"gh","args":["--token","T","--api-key=K"]}}}}`, ""},
		{"args edited around a placeholder",
			`{mcp: {servers: {gh: {command: "gh", args: ["--verbose", "--token", "` + R + `", "--api-key=` + R + `"]}}}}`, "",
			"mcp.servers.gh.args: redacted placeholders in args that differ from the stored args cannot be restored; send every redacted value again to change args"},
		{"args with flags swapped",
			`{mcp: {servers: {gh: {command: "gh", args: ["--api-key=` + R + `", "--token", "` + R + `"]}}}}`, "",
			"mcp.servers.gh.args: redacted placeholders in args that differ from the stored args cannot be restored; send every redacted value again to change args"},
		{"args sent whole",
			`{mcp: {servers: {gh: {command: "gh", args: ["--verbose", "--token", "T2"]}}}}`,
			`{"mcp":{"servers":{"gh":{"command":"gh","args":["--verbose","--token","T2"]}}}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Restore(mustJSON5(t, tt.next), mustJSON5(t, disk))
			if tt.err != "" {
				if got := restoreErrText(err); got != tt.err {
					t.Fatalf("error = %s, want %q", got, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, compact(t, got)); diff != "" {
				t.Errorf("Restore (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRedactSecretNames: the one list of rules, by the kind of name.
func TestRedactSecretNames(t *testing.T) {
	tests := []struct {
		fn   func(string) bool
		kind string
		yes  []string
		no   []string
	}{
		{secretKey, "config key",
			[]string{"token", "signingKey", "signingSecret", "webhookSecret", "clientSecret", "privateKey", "encryptionKey",
				"credentials", "gcpCredential", "passphrase", "cookie", "jwt", "sig", "signature", "x-amz-signature", "pwd"},
			[]string{"auth", "sessionKey", "mainKey", "keyPrefix", "credentialsPath", "privateKeyPath", "tokenCount",
				"maxOutputTokens", "webhookPath", "publicKey", "mode"}},
		{secretParam, "query parameter or flag",
			[]string{"api_key", "apikey", "key", "token", "access_token", "secret", "sig", "signature", "password", "auth",
				"pat", "X-Amz-Security-Token", "client-secret", "id_token"},
			[]string{"lang", "q", "maxTokens", "page", "verbose", "session"}},
		{secretHeader, "header",
			[]string{"Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie", "X-Auth-User", "X-Api-Key", "X-Custom-Token",
				"X-Session-Id", "X-Hub-Signature-256", "Private-Key"},
			[]string{"Accept", "Content-Type", "User-Agent", "X-Request-Id", "Keep-Alive"}},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			for _, n := range tt.yes {
				if !tt.fn(n) {
					t.Errorf("%q is not a secret %s", n, tt.kind)
				}
			}
			for _, n := range tt.no {
				if tt.fn(n) {
					t.Errorf("%q is a secret %s", n, tt.kind)
				}
			}
		})
	}
}

// TestRedactURLText: redactURL keeps everything it does not hide byte
// for byte.
func TestRedactURLText(t *testing.T) {
	for _, s := range []string{
		"https://h.example.com/a%2Fb?q=a+b&x=%41#frag",
		"HTTP://H.EXAMPLE.COM:80/../x",
		"https://[::1]:8080/p?",
		"ftp://a@b@c.example.com/",
	} {
		got := redactURL(s)
		if strings.Count(got, R) == 0 && got != s {
			t.Errorf("redactURL(%q) = %q changed text it did not hide", s, got)
		}
	}
	if got := redactURL("ftp://a@b@c.example.com/"); got != "ftp://"+R+"@c.example.com/" {
		t.Errorf("userinfo up to the last @: %q", got)
	}
}
