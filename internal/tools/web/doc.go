// Package web holds the web_fetch tool: it GETs one http or https URL the
// model chose and returns the page's readable text (markdown or plain) as
// JSON, with the final URL after redirects, the HTTP status, the content
// type, the title and whether anything was cut.
//
// Every connection goes through the network guard (internal/netguard):
// private, loopback, link-local and cloud metadata addresses, local names
// (localhost, *.local, *.internal) and numeric IPv4 forms are refused at
// connect time and on every redirect. Loopback is reachable only when the
// run's tools.Env.AllowLoopback is set (config tools.network.allowLoopback,
// off by default). A fetch takes at most 30 s, follows at most 5
// redirects and reads at most 2 MiB of body (MaxBodyBytes).
//
// HTML is parsed with golang.org/x/net/html (the HTML5 algorithm) and
// rendered from <main>, else the <article>s, else <body>, without scripts,
// styles, navigation, headers, footers, asides and forms; non-UTF-8
// charsets declared by the page are decoded with x/net/html/charset.
// text/* and JSON are returned as they are; other types are refused.
//
// Use: New() returns the tool; internal/tools/core registers it. The tool
// keeps two HTTP clients (with and without loopback) so connections are
// reused across calls; it is safe for concurrent use.
package web
