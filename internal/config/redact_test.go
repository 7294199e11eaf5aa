package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const redactSample = `{
	gateway: {auth: {mode: "token", token: "gw-token", password: ""}, remote: {token: "r"}},
	models: {providers: {p: {apiKey: "sk-1", baseUrl: "http://x", headers: {Authorization: "Bearer z", "X-Api-Key": "h"},
		models: [{id: "m", maxTokens: 4096, contextTokens: "words"}]}}},
	channels: {telegram: {botToken: "123:abc", tokenFile: "/t", allowFrom: ["me"]}, slack: {signing_secret: "s", "app-token": "xapp"}},
	env: {OPENAI_API_KEY: "sk-env", vars: {FOO: "bar", list: ["a", ""]}, shellEnv: {enabled: true, timeoutMs: 5}},
	plugins: {entries: {x: {env: {ANY_NAME: "v"}, config: {key: "k", sshPrivateKey: "pk", privateKeyPath: "/k", apiKeys: ["a", "b"]}}}},
	agents: {list: [{id: "a", sandbox: {docker: {env: {T: "t"}}}}], defaults: {compaction: {tokensBefore: "n", maxHistoryTokens: "n"}}},
	session: {keyPrefix: "visible"},
}`

func TestRedact(t *testing.T) {
	tree := mustJSON5(t, redactSample)
	orig := tree.Clone()
	got := Redact(tree)
	const R = RedactedSentinel
	want := mustJSON5(t, `{
	gateway: {auth: {mode: "token", token: "`+R+`", password: ""}, remote: {token: "`+R+`"}},
	models: {providers: {p: {apiKey: "`+R+`", baseUrl: "http://x", headers: {Authorization: "`+R+`", "X-Api-Key": "`+R+`"},
		models: [{id: "m", maxTokens: 4096, contextTokens: "words"}]}}},
	channels: {telegram: {botToken: "`+R+`", tokenFile: "`+R+`", allowFrom: ["me"]}, slack: {signing_secret: "`+R+`", "app-token": "`+R+`"}},
	env: {OPENAI_API_KEY: "`+R+`", vars: {FOO: "`+R+`", list: ["`+R+`", ""]}, shellEnv: {enabled: true, timeoutMs: 5}},
	plugins: {entries: {x: {env: {ANY_NAME: "`+R+`"}, config: {key: "`+R+`", sshPrivateKey: "`+R+`", privateKeyPath: "/k", apiKeys: ["`+R+`", "`+R+`"]}}}},
	agents: {list: [{id: "a", sandbox: {docker: {env: {T: "`+R+`"}}}}], defaults: {compaction: {tokensBefore: "n", maxHistoryTokens: "n"}}},
	session: {keyPrefix: "visible"},
}`)
	if diff := cmp.Diff(string(want.Indented()), string(got.Indented())); diff != "" {
		t.Errorf("Redact (-want +got):\n%s", diff)
	}
	if !Equal(tree, orig) {
		t.Error("Redact modified its input")
	}
}

func TestSecretKey(t *testing.T) {
	for key, want := range map[string]bool{
		"token": true, "botToken": true, "accessToken": true, "token_file": true, "TOKEN": true,
		"password": true, "secret": true, "clientSecret": true, "apiKey": true, "api_key": true, "api-key": true,
		"x-api-key": true, "key": true, "Key": true, "privateKey": true, "authorization": true,
		"maxTokens": false, "contextTokens": false, "tokensBefore": false, "keyPrefix": false,
		"keys": false, "privateKeyPath": false, "monkey": false, "name": false,
	} {
		if got := secretKey(key); got != want {
			t.Errorf("secretKey(%q) = %v, want %v", key, got, want)
		}
	}
}

func TestRestoreRoundTrip(t *testing.T) {
	disk := mustJSON5(t, redactSample)
	got, err := Restore(Redact(disk), disk)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(disk.Indented()), string(got.Indented())); diff != "" {
		t.Errorf("Restore(Redact(x), x) (-want +got):\n%s", diff)
	}
}

func TestRestore(t *testing.T) {
	const R = RedactedSentinel
	tests := []struct {
		name, next, disk, want, err string
	}{
		{
			name: "edited config keeps stored secrets",
			next: `{gateway: {auth: {token: "` + R + `"}, port: 1}}`,
			disk: `{gateway: {auth: {token: "secret"}, port: 2}}`,
			want: `{"gateway":{"auth":{"token":"secret"},"port":1}}`,
		},
		{
			name: "a new value replaces the stored one",
			next: `{gateway: {auth: {token: "new"}}}`,
			disk: `{gateway: {auth: {token: "old"}}}`,
			want: `{"gateway":{"auth":{"token":"new"}}}`,
		},
		{
			name: "id arrays match by id after reordering",
			next: `{agents: {list: [{id: "b", k: "` + R + `"}, {id: "a", k: "` + R + `"}]}}`,
			disk: `{agents: {list: [{id: "a", k: "ka"}, {id: "b", k: "kb"}]}}`,
			want: `{"agents":{"list":[{"id":"b","k":"kb"},{"id":"a","k":"ka"}]}}`,
		},
		{
			name: "other arrays match by index",
			next: `{keys: ["` + R + `", "new"]}`,
			disk: `{keys: ["k0", "k1"]}`,
			want: `{"keys":["k0","new"]}`,
		},
		{
			name: "repeated ids on disk fall back to index",
			next: `{l: [{id: "a", k: "` + R + `"}, {id: "a", k: "` + R + `"}]}`,
			disk: `{l: [{id: "a", k: "first"}, {id: "a", k: "second"}]}`,
			want: `{"l":[{"id":"a","k":"first"},{"id":"a","k":"second"}]}`,
		},
		{
			name: "no stored value",
			next: `{models: {providers: {"openai/x": {apiKey: "` + R + `"}}}}`,
			disk: `{models: {providers: {}}}`,
			err:  `models.providers["openai/x"].apiKey: redacted placeholder has no stored value to restore`,
		},
		{
			name: "new agent id has nothing stored",
			next: `{agents: {list: [{id: "new", k: "` + R + `"}]}}`,
			disk: `{agents: {list: [{id: "old", k: "x"}]}}`,
			err:  `agents.list[0].k: redacted placeholder has no stored value to restore`,
		},
		{
			name: "index past the stored array",
			next: `{keys: ["a", "` + R + `"]}`,
			disk: `{keys: ["a"]}`,
			err:  `keys[1]: redacted placeholder has no stored value to restore`,
		},
		{
			name: "null is not a stored value",
			next: `{a: "` + R + `"}`,
			disk: `{a: null}`,
			err:  `a: redacted placeholder has no stored value to restore`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := mustJSON5(t, tt.next)
			next0 := next.Clone()
			got, err := Restore(next, mustJSON5(t, tt.disk))
			if !Equal(next, next0) {
				t.Error("Restore modified next")
			}
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
	if _, err := Restore(NewString(RedactedSentinel), nil); restoreErrText(err) != "(root): redacted placeholder has no stored value to restore" {
		t.Errorf("Restore at root with nothing on disk: %v", err)
	}
}

// restoreErrText is a Restore error as the gateway shows it, from the
// fields of its *RestoreError.
func restoreErrText(err error) string {
	var re *RestoreError
	if !errors.As(err, &re) {
		return fmt.Sprintf("not a *RestoreError: %v", err)
	}
	return re.Path + ": " + re.Reason
}

// TestRedactText: the file's text with its secrets replaced when that
// reads back as the redacted tree, else the redacted tree as JSON.
func TestRedactText(t *testing.T) {
	const R = RedactedSentinel
	tests := []struct{ name, raw, want string }{
		{"comments and layout kept",
			"// the gateway\n{gateway: {auth: {token: 'gw-secret'}}, port: 1}\n",
			"// the gateway\n{gateway: {auth: {token: '" + R + "'}}, port: 1}\n"},
		{"no secrets: the text as it is",
			"{a: 1, /* note */ b: 'x'}",
			"{a: 1, /* note */ b: 'x'}"},
		{"a secret that contains another is replaced whole",
			"{gateway: {auth: {token: 'abc', password: 'abcdef'}}}",
			"{gateway: {auth: {token: '" + R + "', password: '" + R + "'}}}"},
		{"a secret equal to other text: the redacted tree instead",
			"{gateway: {auth: {token: 'visible'}}, session: {keyPrefix: 'visible'}}",
			"{\n  \"gateway\": {\n    \"auth\": {\n      \"token\": \"" + R + "\"\n    }\n  },\n  \"session\": {\n    \"keyPrefix\": \"visible\"\n  }\n}\n"},
		{"a secret written with escapes: the redacted tree instead",
			"{gateway: {auth: {token: 's\\u0065cret'}}}",
			"{\n  \"gateway\": {\n    \"auth\": {\n      \"token\": \"" + R + "\"\n    }\n  }\n}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RedactText([]byte(tt.raw), mustJSON5(t, tt.raw))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("RedactText (-want +got):\n%s", diff)
			}
			if strings.Contains(got, "secret") || strings.Contains(got, "abcdef") {
				t.Errorf("RedactText leaked a secret: %s", got)
			}
		})
	}
}

// TestRedactedJSON: compact JSON of the redacted tree, and JSON with null
// for the numbers JSON cannot carry rather than nothing.
func TestRedactedJSON(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"compact", `{gateway: {auth: {token: "t"}}, n: 1}`, `{"gateway":{"auth":{"token":"` + RedactedSentinel + `"}},"n":1}`},
		{"Infinity as null", `{token: "t", n: Infinity}`, "{\n  \"token\": \"" + RedactedSentinel + "\",\n  \"n\": null\n}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, string(RedactedJSON(mustJSON5(t, tt.in)))); diff != "" {
				t.Errorf("RedactedJSON (-want +got):\n%s", diff)
			}
		})
	}
}
