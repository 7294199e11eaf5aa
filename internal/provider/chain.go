package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"talon/internal/config"
)

// MaxChain bounds the models one run may try: the chain comes from a
// tenant's config, and every candidate may cost a round of retries.
const MaxChain = 16

// Choice is how a run's model was chosen, which decides its fallbacks.
type Choice struct {
	// Pinned is a model a person chose for this run or session (the
	// operator's --model, a caller's model, a session's override): it is
	// strict, tried alone unless Fallbacks is set.
	Pinned string
	// Job is a job's own model (a cron payload's model): it takes the
	// configured fallbacks (not the configured primary: OpenClaw's cron
	// passes its fallbacks as the chain's whole rest).
	Job string
	// Fallbacks, when non-nil, replace the configured fallbacks (a cron
	// payload's fallbacks; empty for none).
	Fallbacks []string
}

// ModelChain is the models a run of agentID tries, in order, as OpenClaw
// builds its candidate chain: the chosen model first (Choice.Pinned, else
// Choice.Job, else the agent's primary, config.Config.AgentModel), then
// Choice.Fallbacks or else, but for a pinned model, the configured ones
// (config.Config.AgentFallbacks). A reference is tried once (compared as written, provider
// case-insensitively), and at most MaxChain are.
func ModelChain(cfg *config.Config, agentID string, c Choice) []string {
	var refs []string
	configured := func() []string {
		if c.Fallbacks != nil {
			return c.Fallbacks
		}
		return cfg.AgentFallbacks(agentID)
	}
	switch {
	case strings.TrimSpace(c.Pinned) != "":
		refs = append([]string{c.Pinned}, c.Fallbacks...)
	case strings.TrimSpace(c.Job) != "":
		refs = append([]string{c.Job}, configured()...)
	default:
		refs = append([]string{cfg.AgentModel(agentID)}, configured()...)
	}
	out := make([]string, 0, len(refs))
	seen := map[string]bool{}
	for _, r := range refs {
		r = strings.TrimSpace(r)
		k := refKey(r)
		if r == "" || seen[k] {
			continue
		}
		seen[k] = true
		if out = append(out, r); len(out) == MaxChain {
			break
		}
	}
	return out
}

// refKey is a reference as compared for duplicates.
func refKey(ref string) string {
	m, err := config.ParseModelRef(ref)
	if err != nil {
		return ref
	}
	return strings.ToLower(m.Provider) + "/" + m.Model
}

// Failover is what a Chain needs besides its models. The zero value
// resolves nothing; set Resolve.
type Failover struct {
	// Resolve gives the targets of a reference (Memo.Targets).
	Resolve func(ref string) ([]Target, error)
	// Cooldowns, when set, is where failing providers and keys are
	// remembered across runs.
	Cooldowns *Cooldowns
	// Overflow says whether an error is a context overflow; nil: none is.
	Overflow func(error) bool
	// Window is the context window of a reference in tokens, 0 when
	// unknown: an overflow moves on only to a larger window.
	Window func(ref string) int64
}

// Chain calls a run's models in order until one answers. It remembers
// the model that answered last, so that the run's next call starts there
// (a fallback serves the rest of its turn; the next turn starts from the
// primary again). A Chain serves one run: it is not safe for concurrent
// use.
type Chain struct {
	f    Failover
	refs []string
	cur  int
}

// NewChain returns the chain of refs (not empty) with f.
func NewChain(f Failover, refs []string) *Chain {
	return &Chain{f: f, refs: refs}
}

// Ref is the reference that answered the chain's last call, or the first
// one before any answered.
func (c *Chain) Ref() string { return c.refs[c.cur] }

// Refs are the chain's references.
func (c *Chain) Refs() []string { return c.refs }

// Attempt is one try of a chain, or one candidate it skipped.
type Attempt struct {
	Ref, Profile string
	Reason       Reason
	Err          error
	// Until is the end of the cool-down a skipped candidate is in.
	Until time.Time
}

func (a Attempt) String() string {
	who := a.Ref
	if a.Profile != "" {
		who += " (auth profile " + a.Profile + ")"
	}
	if !a.Until.IsZero() {
		return fmt.Sprintf("%s: skipped, cooling down after %s until %s", who, a.Reason, a.Until.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("%s: %s: %v", who, a.Reason, a.Err)
}

// ExhaustedError is a chain that found no model to answer: every
// attempt, in order, including the candidates it skipped.
type ExhaustedError struct{ Attempts []Attempt }

func (e *ExhaustedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "no model answered (%d tried):", len(e.Attempts))
	for i, a := range e.Attempts {
		if i > 0 {
			b.WriteString(";")
		}
		b.WriteString(" ")
		b.WriteString(a.String())
	}
	return b.String()
}

// Unwrap returns the attempts' errors, the last first, so that errors.As
// finds the failure that ended the chain.
func (e *ExhaustedError) Unwrap() []error {
	var out []error
	for i := len(e.Attempts) - 1; i >= 0; i-- {
		if e.Attempts[i].Err != nil {
			out = append(out, e.Attempts[i].Err)
		}
	}
	return out
}

// Chat sends req (its Model is set per target) to the chain's models,
// from the one that answered last, and returns the first answer with the
// reference that gave it. A failure moves on when another model may
// succeed (Reason.Advances): to the provider's next key after a rate
// limit or a key's failure, else to the next model; an overflow only to a
// model with a larger window. It stops at once when text has already
// been streamed to onDelta (it cannot be taken back), on a failure no
// other model can fix and when ctx ends. Candidates cooling down are
// skipped; when all are, the one whose cool-down ends first is tried.
// A lone failure comes back as it was; several as an *ExhaustedError.
func (c *Chain) Chat(ctx context.Context, req *Request, onDelta func(string)) (*Response, string, error) {
	var attempts []Attempt
	tried := false
	for i := c.cur; i < len(c.refs); i++ {
		ref := c.refs[i]
		ts, err := c.f.Resolve(ref)
		if err != nil {
			attempts = append(attempts, Attempt{Ref: ref, Reason: ReasonUnresolved, Err: err})
			continue
		}
		res, next, err := c.try(ctx, ref, ts, req, onDelta, &attempts, &tried)
		if err == nil {
			c.cur = i
			return res, ref, nil
		}
		if next < 0 {
			return nil, "", c.fail(attempts)
		}
		i = next - 1
	}
	if !tried {
		if res, ref, ok := c.probe(ctx, req, onDelta, &attempts); ok {
			return res, ref, nil
		}
	}
	return nil, "", c.fail(attempts)
}

// errNext is try's verdict that the chain goes on.
var errNext = errors.New("next candidate")

// try calls the targets of candidate ref in turn. It returns the answer,
// or the index of the candidate to go on with (len(refs) for none left)
// and errNext, or -1 to stop.
func (c *Chain) try(ctx context.Context, ref string, ts []Target, req *Request, onDelta func(string), attempts *[]Attempt, tried *bool) (*Response, int, error) {
	i := c.index(ref)
	for _, t := range ts {
		if until, why, cooling := c.cooling(t); cooling {
			*attempts = append(*attempts, Attempt{Ref: ref, Profile: t.Profile, Reason: why, Until: until})
			continue
		}
		*tried = true
		res, reason, streamed, err := c.call(ctx, t, req, onDelta)
		if err == nil {
			return res, 0, nil
		}
		*attempts = append(*attempts, Attempt{Ref: ref, Profile: t.Profile, Reason: reason, Err: err})
		switch {
		case streamed || ctx.Err() != nil:
			return nil, -1, err
		case reason == ReasonOverflow:
			return nil, c.larger(i), errNext
		case !reason.Advances():
			return nil, -1, err
		case !reason.rotates():
			return nil, i + 1, errNext
		}
	}
	return nil, i + 1, errNext
}

// call makes one model call with target t and notes its outcome in the
// cool-downs.
func (c *Chain) call(ctx context.Context, t Target, req *Request, onDelta func(string)) (*Response, Reason, bool, error) {
	streamed := false
	relay := onDelta
	if onDelta != nil {
		relay = func(s string) {
			if s != "" {
				streamed = true
			}
			onDelta(s)
		}
	}
	r := *req
	r.Model = t.Model
	res, err := t.Provider.Chat(ctx, &r, relay)
	if err == nil {
		if cd := c.f.Cooldowns; cd != nil {
			cd.ok(coolKey(t.ProviderID, t.Profile))
			cd.ok(coolKey(t.ProviderID, ""))
		}
		return res, "", false, nil
	}
	reason := Classify(ctx, err, c.f.Overflow)
	if cd := c.f.Cooldowns; cd != nil && reason.cools() {
		var wait time.Duration
		var pe *Error
		if errors.As(err, &pe) {
			wait = pe.RetryAfter
		}
		profile := t.Profile
		if !reason.rotates() {
			profile = "" // the server failed, whichever key called it
		}
		cd.fail(coolKey(t.ProviderID, profile), reason, wait)
	}
	return nil, reason, streamed, err
}

// cooling reports whether t's key, or its whole provider, is cooling
// down, and until when.
func (c *Chain) cooling(t Target) (time.Time, Reason, bool) {
	cd := c.f.Cooldowns
	if cd == nil {
		return time.Time{}, "", false
	}
	if until, why, ok := cd.until(coolKey(t.ProviderID, "")); ok {
		return until, why, true
	}
	return cd.until(coolKey(t.ProviderID, t.Profile))
}

// probe tries, when every candidate was cooling down, the target whose
// cool-down ends first, so that a turn is not refused without a call.
func (c *Chain) probe(ctx context.Context, req *Request, onDelta func(string), attempts *[]Attempt) (*Response, string, bool) {
	best := -1
	for j, a := range *attempts {
		if !a.Until.IsZero() && (best < 0 || a.Until.Before((*attempts)[best].Until)) {
			best = j
		}
	}
	if best < 0 {
		return nil, "", false
	}
	a := (*attempts)[best]
	// The probe's outcome replaces the skip: a lone model that failed
	// lately fails as it would without a cool-down.
	*attempts = append((*attempts)[:best], (*attempts)[best+1:]...)
	ts, err := c.f.Resolve(a.Ref)
	if err != nil {
		return nil, "", false
	}
	for _, t := range ts {
		if t.Profile != a.Profile {
			continue
		}
		res, reason, _, err := c.call(ctx, t, req, onDelta)
		if err == nil {
			c.cur = c.index(a.Ref)
			return res, a.Ref, true
		}
		*attempts = append(*attempts, Attempt{Ref: a.Ref, Profile: t.Profile, Reason: reason, Err: err})
		return nil, "", false
	}
	return nil, "", false
}

// larger is the index of the first candidate after i with a larger
// context window than i's, len(refs) when none has one (or the windows
// are unknown).
func (c *Chain) larger(i int) int {
	if c.f.Window == nil {
		return len(c.refs)
	}
	w := c.f.Window(c.refs[i])
	for j := i + 1; j < len(c.refs); j++ {
		if w > 0 && c.f.Window(c.refs[j]) > w {
			return j
		}
	}
	return len(c.refs)
}

func (c *Chain) index(ref string) int {
	for i, r := range c.refs {
		if r == ref {
			return i
		}
	}
	return 0
}

// fail is the error of a chain that stops: a lone failure as it was, so
// that a run without fallbacks fails as it always did, else all of them.
func (c *Chain) fail(attempts []Attempt) error {
	if len(attempts) == 1 && attempts[0].Err != nil {
		return attempts[0].Err
	}
	if len(attempts) == 0 {
		return errors.New("no model to call")
	}
	return &ExhaustedError{Attempts: attempts}
}
