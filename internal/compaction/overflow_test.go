package compaction

import "testing"

// TestParseOverflow: R5.3 over the error shapes providers send.
func TestParseOverflow(t *testing.T) {
	tests := []struct {
		name          string
		status        int
		code, message string
		overflow      bool
		want          Overflow
	}{
		{"OpenAI", 400, "context_length_exceeded",
			"This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.",
			true, Overflow{Tokens: 130_512}},
		{"OpenAI code alone", 400, "context_length_exceeded", "", true, Overflow{}},
		{"Anthropic prompt too long", 400, "invalid_request_error", "prompt is too long: 210345 tokens > 200000 maximum", true, Overflow{Tokens: 210_345}},
		{"Anthropic request too large", 413, "request_too_large", "Request exceeds the maximum size", true, Overflow{}},
		{"Anthropic in a stream", 0, "invalid_request_error", "input length and `max_tokens` exceed context limit: 190000 + 20000 > 200000", true, Overflow{Tokens: 210_000}},
		{"vLLM", 400, "BadRequestError",
			"This model's maximum context length is 32768 tokens. However, you requested 40000 tokens (39000 in the messages, 1000 in the completion).",
			true, Overflow{Tokens: 40_000}},
		{"llama-server", 400, "exceed_context_size_error", "the request exceeds the available context size, try increasing it", true, Overflow{}},
		{"ollama", 500, "", "ollama error: context length exceeded", true, Overflow{}},
		{"Gemini", 400, "INVALID_ARGUMENT", "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", true, Overflow{}},
		{"a 413 about tokens", 413, "", "too many input tokens for this deployment", true, Overflow{}},
		{"Groq's per-request TPM limit is terminal", 413, "rate_limit_exceeded",
			"Request too large for model `llama-3.3-70b-versatile` in organization `org_x` service tier `on_demand` on tokens per minute (TPM): Limit 12000, Requested 19543, please reduce your message size and try again.",
			true, Overflow{Tokens: 19_543, Terminal: true}},
		{"a TPM rate limit is not an overflow", 429, "rate_limit_exceeded", "Rate limit reached on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000.", false, Overflow{}},
		{"a 413 about bytes", 413, "", "Payload Too Large", false, Overflow{}},
		{"a bad key", 401, "invalid_api_key", "Incorrect API key provided", false, Overflow{}},
		{"the window guard's own message", 0, "", "Model context window too small (3000 tokens; source=default). Minimum is 4000.", false, Overflow{}},
		{"a server error", 500, "server_error", "The server had an error while processing your request.", false, Overflow{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseOverflow(tc.status, tc.code, tc.message)
			if ok != tc.overflow || got != tc.want {
				t.Errorf("ParseOverflow = %+v, %v; want %+v, %v", got, ok, tc.want, tc.overflow)
			}
		})
	}
}
