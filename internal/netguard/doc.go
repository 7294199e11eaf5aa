// Package netguard keeps tools that fetch URLs chosen by a model (the
// api-tools plugin and the web_fetch tool) away from private networks: it
// classifies IP addresses (Blocked), refuses host names and literal IP forms
// that point inward (CheckHost), and checks at connect time the exact address
// it then dials, so a DNS answer cannot change between check and use (DNS
// rebinding), and again on every redirect (Dialer, NewClient).
//
// The api-tools plugin (internal/plugin) and web_fetch (internal/tools/web)
// take their *http.Client from NewClient; nothing else may send what a
// model chose.
//
// Concurrency: Blocked and CheckHost are pure functions; a Dialer and the
// client from NewClient hold no mutable state of their own and are safe for
// concurrent use by many goroutines.
package netguard
