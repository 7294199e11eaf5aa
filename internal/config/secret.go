package config

import (
	"net/url"
	"regexp"
	"strings"
)

// The one list of rules that say which names hold a credential: config
// keys, HTTP header names, URL query parameters, command-line flags and
// KEY=value words. Redact, Restore and the messages of this package use
// them; nothing else keeps its own list.

var nameSeparators = strings.NewReplacer("-", "", "_", "", ".", "", " ", "")

// normName lower-cases a name and drops '-', '_', '.' and spaces, so
// api_key, api-key, apiKey and X-Api-Key compare alike.
func normName(name string) string { return nameSeparators.Replace(strings.ToLower(name)) }

var (
	// secretExact are names that are a credential by themselves.
	secretExact = []string{"key", "authorization", "sig", "pwd", "pass", "jwt", "bearer"}
	// secretWords anywhere in a name make it a credential.
	secretWords = []string{"password", "passwd", "passphrase", "secret", "apikey", "cookie"}
	// secretSuffixes end names of credentials; as suffixes, so that
	// privateKeyPath and credentialsFile (paths) stay visible.
	secretSuffixes = []string{"privatekey", "signingkey", "encryptionkey", "encryptkey", "masterkey",
		"hmackey", "licensekey", "recoverykey", "clientkey", "consumerkey", "accountkey", "subscriptionkey",
		"signature", "credential", "credentials"}
	// tokenCounts are names with "token" that count tokens.
	tokenCounts = []string{"tokencount", "tokenlimit", "tokenbudget"}
	// headerWords anywhere in a header name make its value a credential
	// (X-Auth-User, X-Session-Id): a header is a place for them.
	headerWords = []string{"auth", "key", "token", "secret", "session", "signature", "cookie", "password"}
)

// secretKey reports whether a config key (or the name in a KEY=value
// word) names a credential: token (not as "tokens", which count, as in
// maxTokens), password, secret, API key, cookie, a signing, private or
// similar key, a signature or credentials. auth alone is not one: it is
// a mode in OpenClaw's config (models.providers.*.auth: "oauth").
func secretKey(name string) bool {
	k := normName(name)
	for _, w := range secretExact {
		if k == w {
			return true
		}
	}
	for _, w := range secretWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	for _, w := range secretSuffixes {
		if strings.HasSuffix(k, w) {
			return true
		}
	}
	for _, w := range tokenCounts {
		if strings.HasSuffix(k, w) {
			return false
		}
	}
	return strings.Contains(strings.ReplaceAll(k, "tokens", ""), "token")
}

// secretParam reports whether a URL query parameter or a command-line
// flag names a credential: a secret key, or auth or pat (a personal
// access token), which are credentials there.
func secretParam(name string) bool {
	k := normName(name)
	return secretKey(k) || k == "auth" || k == "pat"
}

// secretHeader reports whether an HTTP header's value is a credential:
// Authorization, Proxy-Authorization, Cookie, Set-Cookie, X-Api-Key,
// X-Auth-*, and any name containing auth, key, token, secret, session,
// signature or password.
func secretHeader(name string) bool {
	k := normName(name)
	if secretKey(k) {
		return true
	}
	for _, w := range headerWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// credentialKey reports keys whose whole value, object or string, is a
// credential (a service account's JSON, inlined).
func credentialKey(name string) bool {
	k := normName(name)
	return strings.HasSuffix(k, "credential") || strings.HasSuffix(k, "credentials")
}

// webhookKey reports keys whose URL value is itself the credential
// (webhookUrl, webhook, incomingWebhook): whoever has it can post.
func webhookKey(name string) bool { return strings.Contains(normName(name), "webhook") }

var (
	urlScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://`)
	// telegramBot is a bot token in a Bot API path (/bot123:AA…/send).
	telegramBot = regexp.MustCompile(`/bot[0-9]{5,}(:|%3[aA])[A-Za-z0-9_-]{20,}`)
	envWord     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// isURL reports whether s is written as an absolute URL with an
// authority (scheme://…).
func isURL(s string) bool { return urlScheme.MatchString(s) }

// webhookURL reports URLs that are credentials whole: Slack and Discord
// incoming webhooks, Microsoft Teams connectors.
func webhookURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return false
	}
	host := strings.ToLower(u.Hostname())
	switch {
	case host == "hooks.slack.com":
		return true
	case host == "discord.com" || host == "discordapp.com" || strings.HasSuffix(host, ".discord.com"):
		return strings.HasPrefix(u.Path, "/api/webhooks/") || strings.Contains(u.Path, "/webhooks/")
	case strings.HasSuffix(host, ".webhook.office.com"):
		return true
	case host == "outlook.office.com" || host == "outlook.office365.com":
		return strings.HasPrefix(u.Path, "/webhook")
	}
	return false
}

// redactURL hides the credentials of a URL written as text and keeps the
// rest as written (no re-encoding): the password of the userinfo (or the
// user, when it is alone: a token used as a user name), the values of
// query and fragment parameters with secret names, and a Telegram bot
// token in the path. A webhook URL is hidden whole. Text that is not a
// URL comes back unchanged.
func redactURL(s string) string {
	loc := urlScheme.FindStringIndex(s)
	if loc == nil {
		return s
	}
	if webhookURL(s) {
		return RedactedSentinel
	}
	head, rest := s[:loc[1]], s[loc[1]:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		user, pass, hasPass := strings.Cut(authority[:at], ":")
		switch {
		case hasPass && pass != "":
			authority = user + ":" + RedactedSentinel + authority[at:]
		case !hasPass && user != "":
			authority = RedactedSentinel + authority[at:]
		}
	}
	tail, frag, hasFrag := strings.Cut(tail, "#")
	p, query, hasQuery := strings.Cut(tail, "?")
	p = telegramBot.ReplaceAllString(p, "/bot"+RedactedSentinel)
	out := head + authority + p
	if hasQuery {
		out += "?" + redactParams(query)
	}
	if hasFrag {
		out += "#" + redactParams(frag)
	}
	return out
}

// redactParams hides the values of secret-named parameters of a query
// or fragment (a=1&api_key=…).
func redactParams(q string) string {
	parts := strings.Split(q, "&")
	for i, part := range parts {
		name, value, ok := strings.Cut(part, "=")
		if !ok || value == "" {
			continue
		}
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if secretParam(name) {
			parts[i] = part[:len(part)-len(value)] + RedactedSentinel
		}
	}
	return strings.Join(parts, "&")
}

// redactArgs hides the secrets of a command line: the word after a
// secret flag (--token X, -password X), the value of --token=X, the value
// of a KEY=value word with a secret key, and credentials in URLs. The
// number of words stays the same.
func redactArgs(args []string) []string {
	out := make([]string, len(args))
	next := false
	for i, a := range args {
		out[i] = a
		switch {
		case next:
			next = false
			if a != "" {
				out[i] = RedactedSentinel
			}
			continue
		case strings.HasPrefix(a, "-") && a != "-" && a != "--":
			name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if !secretParam(name) {
				break
			}
			if !hasValue {
				next = true
			} else if value != "" {
				out[i] = a[:len(a)-len(value)] + RedactedSentinel
			}
			continue
		}
		if name, value, ok := strings.Cut(a, "="); ok && value != "" && envWord.MatchString(name) && secretKey(name) {
			out[i] = name + "=" + RedactedSentinel
			continue
		}
		out[i] = redactURL(a)
	}
	return out
}
