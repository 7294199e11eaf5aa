// Package memory is the memory-core plugin: a full-text index of each
// agent's memory files and the two tools over it, memory_search and
// memory_get. It registers itself with the plugin host when imported
// (plugin.go; the binary imports it through internal/standard), and holds
// the memory slot by default.
//
// # Files
//
// An agent's memory is MEMORY.md (or memory.md) at the root of its own
// workspace directory (tools.Env.AgentDir, on the host, also when the
// session is sandboxed) and every *.md file under memory/, at any depth.
// The workspace is opened as an os.Root and symbolic links are skipped,
// so nothing outside it is ever read; files with more than one hard link
// are skipped for the same reason (tools.SingleLink). Files over MaxFileBytes
// and files beyond the first MaxFiles are not indexed, and the search
// result's warnings say so.
//
// # Index
//
// One SQLite database per tenant (Open with <tenantStateDir>/memory.sqlite)
// holds the chunks of every agent's files in an FTS5 table. Rows are keyed
// by agent id and every query filters on it, so one agent never sees
// another's memory. bm25's term statistics are computed over the whole
// table, so another agent's files of the same tenant do shift the scores
// (never the results' content): the tenant is the isolation boundary.
// The index is derived data: a database of another schema version is
// dropped and rebuilt.
//
// Before each search the agent's files are listed and compared with what
// was indexed: a file whose size and modification time are unchanged costs
// one stat; a changed one is read and hashed, and re-chunked only when its
// content differs; files that are gone are dropped. All changes of one
// search are applied in one transaction. Files are chunked by markdown
// headings and paragraphs into pieces of roughly 400 to 1200 characters,
// each with its first and last line number.
//
// memory_search turns the query into an FTS5 expression in which every
// word is a quoted term (so no user text is FTS5 syntax), joined with OR
// and ranked by bm25; a score of 0..1 is derived from the bm25 rank.
// Common English words (the, about, what, ...) are left out of the
// expression when the query has other words: bm25 gives them next to no
// weight, and ranking the chunks holding them cost most of a search.
// memory_get reads lines of one memory file through the os.Root.
//
// # Embeddings
//
// With an Embedder (Options; the plugin builds one from the agent's
// memorySearch config with provider.ResolveEmbeddings), memory_search
// also ranks by meaning. Each search first embeds the agent's chunk
// texts that have no vector of the embedder's model yet (at most
// maxEmbedPerSearch of them) and stores them in the vectors table beside
// the chunks, scaled to unit length and keyed by the text's SHA-256 and
// the model's identity: an edited file is re-chunked, but only the
// chunks whose text changed are embedded again, and a new model embeds
// everything once and replaces the old model's vectors. When nothing
// changed since all chunks had vectors, this costs no query at all. The
// query is embedded (one request) and compared by dot product with
// every vector of the agent, keeping the best limit×multiplier in a heap,
// and these are merged with as many bm25 results:
//
//	score = vectorWeight × max(0, cosine) + textWeight × bm25score
//
// with OpenClaw's default weights 0.7 and 0.3 (config.Ranking). An
// embeddings call that fails leaves the search ranking by keywords, with
// a note in the result and a log line, and the provider is not called
// again for retryAfterFailure, so that a provider that is down costs one
// search its retries rather than every search.
//
// The vectors of an agent are held in memory (vecBudget bytes per index,
// the least recently used dropped, read again after a write). An agent
// has at most maxSetBytes of vectors; its chunks beyond rank by keywords
// alone, so that memory files a model writes cannot make a search
// allocate without bound.
//
// # Concurrency
//
// An Index and its tools are safe for concurrent use by many runs. The
// synchronisation of one agent's files, and the embedding of its chunks,
// are serialised by a per-agent lock;
// writes go through a single connection, reads through a pool of
// read-only connections that run in parallel. Close after the last use.
package memory
