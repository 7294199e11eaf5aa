package provider

import (
	"strings"

	"talon/internal/llm"
)

// This file is what a thinking level becomes on each API, and which
// reasoning a request carries back.
//
//   - Only a model whose catalog entry says reasoning: true is sent a
//     level: sending one to a model that does not reason is a 400 on
//     both APIs, and Talon has no catalog of its own to know better.
//   - OpenAI-compatible: reasoning_effort, the level's own name
//     (minimal, low, medium, high, xhigh); off sends nothing, so the
//     server's default applies (not every server takes "none").
//   - Anthropic: thinking {type: enabled, budget_tokens} with OpenClaw's
//     budgets, max_tokens raised by the budget within the model's
//     maxTokens; a budget that cannot fit the API's minimum under it
//     sends no thinking. Temperature is not sent with thinking (the API
//     takes only its default then).
//   - Reasoning text comes back apart from the answer. It is sent back
//     only to Anthropic, only with thinking on and only for the current
//     tool loop, whose signed blocks the API requires; a loop with a
//     tool call that has none (answered by another provider, or with
//     thinking off) is sent without thinking, which the API would refuse.

// ModelInfo is what the config's catalog (models.providers.<id>.models[])
// says of one model a client serves.
type ModelInfo struct {
	// Reasoning says the model takes a thinking level.
	Reasoning bool
	// MaxTokens is its output limit; 0 when the catalog does not say.
	MaxTokens int
}

// modelInfos are a client's ModelInfo by lower-case model id (the catalog
// compares ids case-insensitively).
type modelInfos map[string]ModelInfo

func newModelInfos(in map[string]ModelInfo) modelInfos {
	out := make(modelInfos, len(in))
	for id, m := range in {
		out[strings.ToLower(id)] = m
	}
	return out
}

// level is the thinking level req asks of its model: "" when it asks
// for none or the model does not reason.
func (m modelInfos) level(req *Request) string {
	if req.Thinking == "" || req.Thinking == "off" || !m[strings.ToLower(req.Model)].Reasoning {
		return ""
	}
	return req.Thinking
}

// reasoningEfforts maps a level to OpenAI's reasoning_effort.
var reasoningEfforts = map[string]string{
	"minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": "xhigh",
}

// thinkingBudgets are Anthropic budget_tokens per level, OpenClaw's;
// xhigh has no larger budget than high.
var thinkingBudgets = map[string]int{
	"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 16384,
}

// minThinkingBudget is the smallest budget_tokens Anthropic accepts, and
// the least room left for the answer when a budget is cut to fit.
const minThinkingBudget = 1024

// thinkingBudget is the max_tokens and budget_tokens of a request at
// level whose answer may be base tokens, for a model whose output limit
// is limit (0: unknown). budget 0 means no thinking, with base as is.
func thinkingBudget(level string, base, limit int) (maxTokens, budget int) {
	budget = thinkingBudgets[level]
	if budget == 0 {
		return base, 0
	}
	maxTokens = base + budget
	if limit > 0 && maxTokens > limit {
		maxTokens = limit
	}
	if maxTokens <= budget {
		budget = maxTokens - minThinkingBudget
	}
	if budget < minThinkingBudget {
		return base, 0
	}
	return maxTokens, budget
}

// loopStart is the index of the first message of the current tool loop:
// the one after the last user message.
func loopStart(msgs []llm.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleUser {
			return i + 1
		}
	}
	return 0
}

// signed reports whether a message carries reasoning Anthropic can take
// back: a signed or a redacted block.
func signed(m *llm.Message) bool {
	for _, r := range m.Reasoning {
		if r.Signature != "" || r.Redacted != "" {
			return true
		}
	}
	return false
}

// replayable reports whether every tool call of the current loop (from
// start on) comes with signed reasoning, as Anthropic requires of a
// request with thinking on.
func replayable(msgs []llm.Message, start int) bool {
	for i := start; i < len(msgs); i++ {
		if m := &msgs[i]; m.Role == llm.RoleAssistant && len(m.ToolCalls) > 0 && !signed(m) {
			return false
		}
	}
	return true
}
