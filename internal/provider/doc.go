// Package provider holds Talon's LLM clients: OpenAI-compatible Chat
// Completions (OpenAI, OpenRouter, ollama, llama-server, vLLM), Anthropic
// Messages, and the offline deterministic inspect model, behind one small
// Provider interface. The messages, tool calls and tool specs they carry
// are internal/llm's.
//
// Clients are thin and ours: they speak the wire formats directly, stream
// or not, retry 429 and 5xx with backoff, and honour context cancellation.
// All clients are safe for concurrent use.
//
// Resolve maps a model reference ("openai/gpt-4o", "inspect", a provider
// under models.providers; read by config.ParseModelRef) to a Provider and
// the model id to send; building a client does no I/O and all clients
// share one pooled http.Client, so resolving per run is cheap. Which
// reference an agent runs with is the config's answer
// (config.Config.AgentModel). The catalog (AllowedModels, ChooseModel,
// ChooseThinking) says which models a session may be switched to, as the
// config lists them, and refuses one that does not resolve.
//
// ModelChain is the models a run tries, in OpenClaw's order (the chosen
// model, then its fallbacks; a model a person pinned is strict), and a
// Chain calls them until one answers: onward after failures another
// model may fix (Classify, Reason.Advances), to the provider's next key
// (ResolveTargets: OpenClaw's auth profiles) after a key's own failure,
// skipping providers and keys in a tenant's Cooldowns; all failing is an
// *ExhaustedError listing every attempt. A Chain serves one run; a
// Cooldowns is safe for concurrent use.
//
// Embeddings is the client of an OpenAI-compatible /embeddings endpoint
// that memory_search ranks by meaning with: texts in batches, vectors
// checked and in input order, the chat clients' retries and errors.
// ResolveEmbeddings builds it from a memorySearch block with the key and
// network rules of ResolveWith; a key goes only to its own destination.
//
// A request's Thinking level reaches the models the catalog marks
// reasoning: true (reasoning.go): OpenAI's reasoning_effort, Anthropic's
// thinking budget. Reasoning comes back in Response.Reasoning, apart
// from the answer. Anthropic requests mark the system prompt and the
// tools as the cached prefix; Usage counts both APIs' cache reads and
// writes.
//
// Failures are *Error values (Provider, Status, Type, Message, RetryAfter)
// whose Temporary method says whether repeating the request may help. A
// call is retried (exponential backoff with jitter, or the server's
// Retry-After) only while no text has been passed to onDelta and the
// context is live; a stream that stalls past the idle timeout, or ends
// without its terminating event, is an error.
package provider
