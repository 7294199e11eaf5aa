package provider

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"talon/internal/netguard"
)

// This file reads a failed model call as OpenClaw's failover does: which
// kind of failure it is, whether another model (or another key of the
// same provider) may succeed where this one failed, and whether the
// provider is to be left alone for a while.

// Reason is the kind of a failed model call.
type Reason string

// The reasons, named as OpenClaw's failover names them where it has one.
const (
	ReasonTimeout Reason = "timeout"
	// ReasonNetwork is a failure to reach the provider or to read its
	// answer whole: a refused or cut connection, a malformed body.
	ReasonNetwork       Reason = "network"
	ReasonServer        Reason = "server_error"
	ReasonOverloaded    Reason = "overloaded"
	ReasonRateLimit     Reason = "rate_limit"
	ReasonAuth          Reason = "auth"
	ReasonBilling       Reason = "billing"
	ReasonModelNotFound Reason = "model_not_found"
	ReasonOverflow      Reason = "context_overflow"
	// ReasonUnresolved is a model reference that does not resolve (an
	// unknown provider, a key that is not set); ReasonBlocked an address
	// the network guard refuses. Both are that candidate's own fault.
	ReasonUnresolved Reason = "unresolved"
	ReasonBlocked    Reason = "blocked"
	ReasonBadRequest Reason = "bad_request"
	ReasonCanceled   Reason = "canceled"
	ReasonOther      Reason = "error"
)

// rateLimitText are words of a rate limit that some providers send with
// another status than 429 (OpenClaw's rate-limit bucket).
var rateLimitText = []string{"rate limit", "rate_limit", "too many requests", "quota exceeded", "quota_exceeded",
	"resource exhausted", "resource_exhausted", "too many concurrent requests", "throttl", "concurrency limit reached"}

// billingText are words of an exhausted balance.
var billingText = []string{"insufficient credits", "insufficient_quota", "credit balance", "billing", "payment required"}

// Classify reads err, the failure of a model call made with ctx. overflow
// says whether a provider error is a context overflow (the compaction's
// rule, which the caller owns); nil means none is.
func Classify(ctx context.Context, err error, overflow func(error) bool) Reason {
	if ctx.Err() != nil {
		return ReasonCanceled
	}
	var re *ResolveError
	if errors.As(err, &re) {
		return ReasonUnresolved
	}
	var refused *netguard.RefusedError
	if errors.As(err, &refused) {
		return ReasonBlocked
	}
	var e *Error
	if !errors.As(err, &e) {
		return ReasonOther
	}
	if overflow != nil && overflow(err) {
		return ReasonOverflow
	}
	text := strings.ToLower(e.Type + " " + e.Message)
	has := func(words []string) bool {
		for _, w := range words {
			if strings.Contains(text, w) {
				return true
			}
		}
		return false
	}
	switch s := e.Status; {
	case s == http.StatusTooManyRequests:
		return ReasonRateLimit
	case s == http.StatusPaymentRequired && has(rateLimitText):
		return ReasonRateLimit
	case s == http.StatusPaymentRequired || (s == 401 || s == 403) && has(billingText):
		return ReasonBilling
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		return ReasonAuth
	case s == http.StatusNotFound:
		return ReasonModelNotFound
	case s == http.StatusRequestTimeout || s == 499 || s == http.StatusGatewayTimeout || s == 522 || s == 524:
		return ReasonTimeout
	case s == 529:
		return ReasonOverloaded
	case s >= 500 && s <= 599:
		if has([]string{"overloaded"}) {
			return ReasonOverloaded
		}
		return ReasonServer
	case s == 0 && has(rateLimitText):
		return ReasonRateLimit
	case s == 0 && (strings.Contains(text, errAttemptTimeout.Error()) || strings.Contains(text, "stream idle")):
		return ReasonTimeout
	case s == 0:
		// A refused or cut connection, a malformed answer, or an error
		// the API reported inside a stream without a status.
		return ReasonNetwork
	case has(rateLimitText):
		return ReasonRateLimit
	}
	return ReasonBadRequest
}

// Advances reports whether another model may succeed after a failure of
// this kind. A bad request would fail the same way anywhere, a cancelled
// call is over, and an overflow advances only to a larger window (the
// chain decides that).
func (r Reason) Advances() bool {
	switch r {
	case ReasonBadRequest, ReasonCanceled, ReasonOther, ReasonOverflow:
		return false
	}
	return true
}

// rotates reports whether the next key of the same provider may succeed:
// the failure is the key's (its rate limit, its balance, its rights), not
// the model's or the server's.
func (r Reason) rotates() bool {
	return r == ReasonRateLimit || r == ReasonAuth || r == ReasonBilling
}

// cools reports whether the failure puts its credential (rotates) or its
// whole provider (the server's failures) in a cool-down. A missing model,
// an overflow, a bad request and a candidate that does not resolve say
// nothing of the provider's health.
func (r Reason) cools() bool {
	switch r {
	case ReasonTimeout, ReasonNetwork, ReasonServer, ReasonOverloaded, ReasonRateLimit, ReasonAuth, ReasonBilling:
		return true
	}
	return false
}
