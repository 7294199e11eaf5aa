// Package imagegen is the bundled image-gen plugin (seed 000: "generate_image
// tool (OpenRouter Gemini)"): one optional tool, generate_image, that asks an
// image-capable chat model on OpenRouter for a picture and saves it in the
// workspace's canvas/ directory.
//
// It registers itself with the plugin host when imported (plugin.go; the
// binary imports it through internal/standard), and its instance uses the
// tool in two steps:
//
//	cfg, err := imagegen.Decode(raw) // plugins.entries.image-gen.config; nil or null: defaults
//	tool, err := imagegen.New(cfg, lookup)
//
// Decode is strict (an unknown key is an error naming it) and fills the
// defaults; New validates again, so a Config built in Go is held to the same
// rules. lookup finds the API key by the name in Config.APIKeyEnv: the tenant
// config's env first, then the process environment. The key is looked up on
// every call, and a missing one is the call's IsError result, not a
// construction error, so enabling the plugin before the key is set is fine.
//
// Wire format: POST {baseUrl}/chat/completions with the model, one user
// message holding the prompt, modalities ["image","text"] and, when asked,
// image_config.aspect_ratio; the images come back in
// choices[0].message.images[] as base64 data URLs. The request goes through
// provider.PostJSON, so 429, 5xx and early network failures are retried with
// backoff or the server's Retry-After, as for chat models. The endpoint is
// the operator's configuration, not a URL the model chose, so the HTTP
// client is a plain one (bounded by timeoutMs, redirects only to the same
// scheme and host), not the netguard client.
//
// An image is accepted only as a data URL whose declared MIME type is
// image/png, image/jpeg or image/webp, whose base64 is strict, whose bytes
// are at most 20 MiB and whose content (magic bytes) is the declared type. A
// remote https URL in the answer is not downloaded: it would be a
// model-supplied URL, and OpenRouter documents data URLs; the result says so
// and names it. At most four images of one answer are saved.
//
// Files are written through tools.Env.Workspace (an os.Root): canvas/ is
// created, the image is written to a hidden temporary file, synced, and
// hard-linked to its final name, which fails rather than replace an existing
// file, so an existing name (or one taken by a concurrent call) gets a
// numeric suffix (-2, -3, ...). A read-only workspace is refused before any
// request is made.
//
// Concurrency: a *Tool is immutable after New and safe for concurrent use.
package imagegen
