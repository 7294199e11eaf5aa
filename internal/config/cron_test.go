package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestCronSection: the keys Talon acts on are typed with their defaults;
// unknown keys and the retired cron.webhook are errors (R2.1); values are
// checked.
func TestCronSection(t *testing.T) {
	c, warns, err := decodeJSON5(t, `{cron: {
		enabled: true, skipMissedJobs: true, sessionRetention: "36h", maxConcurrentRuns: 2,
		webhookToken: "${HOOK_TOKEN}", store: "~/.openclaw/cron/jobs.json",
		failureAlert: {after: 3, cooldownMs: 60000, mode: "announce", channel: "telegram", to: "1"},
		webhookSsrfPolicy: {dangerouslyAllowPrivateNetwork: true},
	}}`)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Issue{{"cron.webhookSsrfPolicy", MsgUnused}}, warns); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	cr := c.Cron
	if !cr.Active(nil) || !*cr.SkipMissedJobs || cr.Concurrency() != 2 || cr.WebhookToken.EnvName() != "HOOK_TOKEN" ||
		*cr.FailureAlert.After != 3 || cr.FailureAlert.Channel != "telegram" || cr.Store == "" {
		t.Errorf("cron = %+v", cr)
	}
	if d, err := cr.Retention(); err != nil || d != 36*time.Hour {
		t.Errorf("Retention = %v, %v", d, err)
	}
	if red := string(RedactedJSON(mustJSON5(t, `{cron: {webhookToken: "s3cret-value"}}`))); strings.Contains(red, "s3cret") {
		t.Errorf("config.get would show the webhook token: %s", red)
	}
}

func TestCronDefaults(t *testing.T) {
	tests := []struct {
		name      string
		src       string
		env       map[string]string
		active    bool
		retention time.Duration
	}{
		{"absent", `{}`, nil, true, 24 * time.Hour},
		{"disabled", `{cron: {enabled: false}}`, nil, false, 24 * time.Hour},
		{"TALON_SKIP_CRON", `{}`, map[string]string{"TALON_SKIP_CRON": "1"}, false, 24 * time.Hour},
		{"OPENCLAW_SKIP_CRON", `{}`, map[string]string{"OPENCLAW_SKIP_CRON": "1"}, false, 24 * time.Hour},
		{"skip variable not 1", `{}`, map[string]string{"TALON_SKIP_CRON": "0"}, true, 24 * time.Hour},
		{"retention false", `{cron: {sessionRetention: false}}`, nil, true, 0},
		{"retention zero", `{cron: {sessionRetention: "0h"}}`, nil, true, 0},
		{"retention bare number is hours", `{cron: {sessionRetention: "2"}}`, nil, true, 2 * time.Hour},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, _, err := decodeJSON5(t, tc.src)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Cron.Active(func(k string) string { return tc.env[k] }); got != tc.active {
				t.Errorf("Active = %v, want %v", got, tc.active)
			}
			if d, err := c.Cron.Retention(); err != nil || d != tc.retention {
				t.Errorf("Retention = %v, %v; want %v", d, err, tc.retention)
			}
			if c.Cron.Concurrency() != DefaultCronConcurrency && c.Cron.MaxConcurrentRuns == nil {
				t.Errorf("Concurrency = %d", c.Cron.Concurrency())
			}
		})
	}
}

func TestCronErrors(t *testing.T) {
	tests := []struct {
		name, src string
		want      []Issue
	}{
		{"unknown key", `{cron: {jobs: []}}`, []Issue{{"cron.jobs", "unknown key: the cron section takes only OpenClaw's keys"}}},
		{"retired webhook", `{cron: {webhook: "https://x"}}`, []Issue{{"cron.webhook", `retired in OpenClaw 2026.9: give each job delivery {mode: "webhook", to: <url>}`}}},
		{"concurrency", `{cron: {maxConcurrentRuns: 0}}`, []Issue{{"cron.maxConcurrentRuns", "expected an integer from 1 to 64 (got 0)"}}},
		{"retention", `{cron: {sessionRetention: "soon"}}`, []Issue{{"cron.sessionRetention", `invalid duration "soon": use values like 500ms, 30s, 5m, 2h or 1h30m`}}},
		{"retention true", `{cron: {sessionRetention: true}}`, []Issue{{"cron.sessionRetention", `expected a duration such as "24h", or false`}}},
		{"alert after", `{cron: {failureAlert: {after: 0}}}`, []Issue{{"cron.failureAlert.after", "expected an integer from 1 to 1000 (got 0)"}}},
		{"alert cooldown", `{cron: {failureAlert: {cooldownMs: -1}}}`, []Issue{{"cron.failureAlert.cooldownMs", "expected 0 or more milliseconds (got -1)"}}},
		{"alert mode", `{cron: {failureAlert: {mode: "sms"}}}`, []Issue{{"cron.failureAlert.mode", `expected one of announce, webhook (got "sms")`}}},
		{"alert webhook URL", `{cron: {failureAlert: {mode: "webhook", to: "ftp://x"}}}`, []Issue{{"cron.failureAlert.to", `expected a http:// or https:// URL with a host (got "ftp://x")`}}},
		{"type error", `{cron: {enabled: "yes"}}`, []Issue{{"cron.enabled", "expected boolean"}}},
		{"secret from a file", `{cron: {webhookToken: {source: "file", id: "/etc/shadow"}}}`, []Issue{{"cron.webhookToken", `secret source "file" is not supported: Talon reads secrets from the environment only; expected a string, "${NAME}" or {source: "env", id: "NAME"}`}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := decodeJSON5(t, tc.src)
			if diff := cmp.Diff(tc.want, issuesOf(t, err)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}
