package config

import (
	"fmt"
	"time"
)

// Cron is the `cron` section (spec automation.md §2): whether a tenant's
// jobs run and how the scheduler treats them. Absent keys take the
// defaults the methods below give.
//
// cron.webhookSsrfPolicy is accepted and not used: a tenant's webhooks
// are held to netguard and the operator's tenants.network.allowHosts,
// which a tenant's own policy must not loosen. cron.retry and cron.runLog
// (earlier releases) are not used either: the retry delays and the run
// history limits are fixed (R5.5, R4.3).
type Cron struct {
	Enabled *bool `json:"enabled"`
	// SkipMissedJobs advances recurring slots missed while the gateway
	// was down instead of catching up once (R5.7).
	SkipMissedJobs *bool `json:"skipMissedJobs"`
	// SessionRetention is a duration ("24h"; a bare number is hours) or
	// false: how long finished isolated run sessions are kept.
	SessionRetention *Raw `json:"sessionRetention"`
	// WebhookToken is sent as a bearer token with webhook deliveries.
	WebhookToken *Secret `json:"webhookToken"`
	// FailureAlert is the default of every job's failure alert (§6.4).
	FailureAlert *CronFailureAlert `json:"failureAlert"`
	// MaxConcurrentRuns is OpenClaw 2026.5's key, which Talon honours;
	// 9.6 fixed it at 8.
	MaxConcurrentRuns *int `json:"maxConcurrentRuns"`
	// Store is the legacy jobs.json path, read once by the import.
	Store string `json:"store"`
	// Rest holds the other keys, to refuse them (R2.1) or report them
	// unused.
	Rest *Raw `talon:"rest"`
}

// CronFailureAlert is `cron.failureAlert`.
type CronFailureAlert struct {
	Enabled        *bool  `json:"enabled"`
	After          *int   `json:"after"`
	CooldownMs     *int64 `json:"cooldownMs"`
	IncludeSkipped *bool  `json:"includeSkipped"`
	Mode           string `json:"mode"` // announce or webhook
	Channel        string `json:"channel"`
	To             string `json:"to"`
	AccountID      string `json:"accountId"`
}

// Defaults and bounds of the cron section.
const (
	DefaultCronConcurrency      = 8
	MaxCronConcurrency          = 64
	DefaultCronSessionRetention = 24 * time.Hour
)

// SkipCronEnv are the variables that pause every job, as
// cron.enabled: false does.
var SkipCronEnv = []string{"TALON_SKIP_CRON", "OPENCLAW_SKIP_CRON"}

// Active says the tenant's jobs run: cron.enabled is not false and no
// SkipCronEnv variable is "1" in the gateway's environment (getenv).
func (c *Cron) Active(getenv func(string) string) bool {
	if c.Enabled != nil && !*c.Enabled {
		return false
	}
	for _, name := range SkipCronEnv {
		if getenv != nil && getenv(name) == "1" {
			return false
		}
	}
	return true
}

// Concurrency is how many runs may go at once.
func (c *Cron) Concurrency() int {
	if c.MaxConcurrentRuns == nil {
		return DefaultCronConcurrency
	}
	return *c.MaxConcurrentRuns
}

// Retention is how long finished isolated run sessions are kept; 0 means
// they are never pruned (false, or a zero duration).
func (c *Cron) Retention() (time.Duration, error) {
	v := c.SessionRetention
	if v == nil || v.Value == nil || v.Kind == Null {
		return DefaultCronSessionRetention, nil
	}
	switch v.Kind {
	case Bool:
		if !v.Bool {
			return 0, nil
		}
	case String:
		return ParseDuration(v.Str, time.Hour)
	}
	return 0, fmt.Errorf("expected a duration such as \"24h\", or false")
}

var alertModes = []string{"announce", "webhook"}

// cron checks the cron section: R2.1's unknown keys, the retired
// cron.webhook, and each value's range.
func (k *checker) cron(c *Cron) {
	if c.Rest != nil && c.Rest.Value != nil {
		at := keyNodes{unusedTree}.member("cron")
		for _, m := range c.Rest.Members {
			switch {
			case m.Key == "webhook":
				k.fail("cron.webhook", "retired in OpenClaw 2026.9: give each job delivery {mode: \"webhook\", to: <url>}")
			case at.member(m.Key).end() || blockedKey(m.Key):
			default:
				k.fail(joinKey("cron", m.Key), "unknown key: the cron section takes only OpenClaw's keys")
			}
		}
	}
	if n := c.MaxConcurrentRuns; n != nil && (*n < 1 || *n > MaxCronConcurrency) {
		k.fail("cron.maxConcurrentRuns", fmt.Sprintf("expected an integer from 1 to %d (got %d)", MaxCronConcurrency, *n))
	}
	if _, err := c.Retention(); err != nil {
		k.fail("cron.sessionRetention", err.Error())
	}
	if a := c.FailureAlert; a != nil {
		if a.After != nil && (*a.After < 1 || *a.After > 1000) {
			k.fail("cron.failureAlert.after", fmt.Sprintf("expected an integer from 1 to 1000 (got %d)", *a.After))
		}
		if a.CooldownMs != nil && *a.CooldownMs < 0 {
			k.fail("cron.failureAlert.cooldownMs", fmt.Sprintf("expected 0 or more milliseconds (got %d)", *a.CooldownMs))
		}
		k.oneOf("cron.failureAlert.mode", a.Mode, alertModes)
		if a.Mode == "webhook" && a.To != "" {
			k.httpURL("cron.failureAlert.to", a.To, "http", "https")
		}
	}
}
