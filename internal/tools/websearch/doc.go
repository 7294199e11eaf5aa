// Package websearch holds the web_search tool: it searches the web through
// a provider and returns OpenClaw's result JSON, one of
//
//	{kind: "results", provider, query, count, results: [{title, url, snippet, published, siteName}], externalContent, cached}
//	{kind: "answer", provider, query, content, citations: [{url, title}], externalContent, cached}
//	{kind: "error", provider, error: "provider_error", message}
//
// Providers (tools.web.search.provider; unset picks the first whose key is
// found, in OpenClaw's order):
//   - brave: Brave Search's web endpoint, GET <baseUrl>/res/v1/web/search
//     with the key in X-Subscription-Token; "results".
//   - perplexity: Sonar through OpenAI-style chat completions, POST
//     <baseUrl>/chat/completions, directly (https://api.perplexity.ai,
//     model sonar-pro) or through OpenRouter (an sk-or- key or
//     OPENROUTER_API_KEY: https://openrouter.ai/api/v1, model
//     perplexity/sonar-pro); "answer" with the citations. Perplexity's
//     native Search API and Brave's llm-context mode are not built.
//
// Keys come only through tools.Outbound.Key: the provider block's apiKey
// (plugins.entries.<id>.config.webSearch), else the tenant's
// BRAVE_API_KEY / PERPLEXITY_API_KEY / OPENROUTER_API_KEY, else the
// operator's, which goes only to the provider's own default host, never to
// a baseUrl the config set. Every request dials through tools.Outbound's
// guarded client (internal/netguard), follows no redirect, and is bounded
// by tools.web.search.timeoutSeconds and MaxResponseBytes.
//
// Provider prose (titles, snippets, answers, citation titles) is wrapped
// as untrusted external content (internal/untrusted), as OpenClaw does.
// Results are cached in the tool, per agent workspace, key, provider,
// endpoint and argument, for tools.web.search.cacheTtlMinutes (15 by
// default, 0 for none), in a bounded LRU (CacheEntries).
//
// Use: New(Options{}) returns the tool; internal/tools/core registers it.
// It is safe for concurrent use.
package websearch
