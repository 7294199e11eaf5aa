// Package yamltool holds the YAML-declared HTTP API tools the plugin host
// loads (the bundled api-tools plugin's and on-disk plugins'): parsing and
// validating one YAML tool file (Parse), the single-pass {{env.X}} /
// {{params.X}} / {{response.X}} template engine, building the exact HTTP
// request for a call (Tool.Request, which returns a Call), rendering the
// response summary or error template (Tool.Summarize) and the tool's JSON
// schema for the model (Tool.Schema).
//
// No message shows an env value: Request's errors quote the url as the
// file writes it (Tool.URL, tags unexpanded), and a caller passes every
// transport error and response text through Call.Error or Call.Redact,
// which turn each value, in every encoding it was sent in, back into its
// {{env.X}} tag — values of any length, so a short non-secret value (a
// region) shows as its tag too.
//
// The package sends nothing: internal/plugin sends what Request builds,
// through internal/netguard's client only, with allowed_hosts checked
// again on every redirect (AllowsHost).
//
// Choices where the seed is silent:
//   - timeout_ms above 60000 is an error, not clamped, so an author sees
//     that the file does not do what it says; the default is 30000.
//   - every env var a template uses must be listed in requires_env, and
//     response templates may use only {{response.X}} (never env: a secret
//     must not reach the model through a summary).
//   - a JSON body string that is exactly one tag takes the value's type
//     (an integer param becomes a JSON number); an absent optional param
//     without default drops that JSON key or form field and renders as ""
//     elsewhere. A missing response field renders as "(none)".
//   - allowed_hosts match the URL's host name, any port; "*.example.com"
//     matches a.example.com and a.b.example.com but not example.com.
//
// A Tool is immutable after Parse and safe for concurrent use.
package yamltool
