package tools

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"io"
	"sync"
	"sync/atomic"

	"github.com/tiktoken-go/tokenizer/codec"

	"talon/internal/llm"
)

// TokenEncoding names the tokenizer SchemaTokens counts with: o200k_base,
// the encoding of GPT-4o, GPT-4.1, GPT-5 and the o-series models.
const TokenEncoding = "o200k_base"

// encoder is built on first use (the vocabulary takes a moment to load)
// and shared; codec.Codec is safe for concurrent counting. Importing the
// codec package rather than the tokenizer front end links only this one
// vocabulary into the binary.
var encoder = sync.OnceValue(codec.NewO200kBase)

// schemaTokenCache maps a digest of (name, description, parameters) to its
// count, so each distinct definition is tokenized once per process.
var schemaTokenCache sync.Map // [sha256.Size]byte -> int

// tokenizeCalls counts cache misses; tests read it.
var tokenizeCalls atomic.Int64

// SchemaTokens is the number of tokens a tool definition costs when sent
// to an OpenAI model: its name, description and parameters JSON (compacted
// first, so formatting does not count) in TokenEncoding. It leaves out the
// few tokens of framing the API adds per tool, which depend on the model.
// The first call loads the encoder; results are cached per definition.
// Safe for concurrent use.
func SchemaTokens(spec llm.ToolSpec) int {
	params := []byte(spec.Parameters)
	var compact bytes.Buffer
	if json.Compact(&compact, params) == nil {
		params = compact.Bytes()
	}
	h := sha256.New()
	writeField(h, []byte(spec.Name))
	writeField(h, []byte(spec.Description))
	writeField(h, params)
	var key [sha256.Size]byte
	h.Sum(key[:0])
	if n, ok := schemaTokenCache.Load(key); ok {
		return n.(int)
	}
	tokenizeCalls.Add(1)
	n := countTokens(spec.Name) + countTokens(spec.Description) + countTokens(string(params))
	schemaTokenCache.Store(key, n)
	return n
}

func writeField(h io.Writer, b []byte) {
	var n [8]byte
	l := uint64(len(b))
	for i := range n {
		n[i] = byte(l >> (8 * i))
	}
	h.Write(n[:])
	h.Write(b)
}

func countTokens(s string) int {
	if s == "" {
		return 0
	}
	n, err := encoder().Count(s)
	if err != nil {
		// Only a regexp engine failure gets here; estimate instead.
		return (len(s) + 3) / 4
	}
	return n
}
