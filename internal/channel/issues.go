package channel

import (
	"fmt"
	"slices"
	"strings"

	"talon/internal/config"
)

// SharedDMIssues are the accounts whose DMs all land in one session
// although more than one person can write to them (spec "better" #1):
// session.dmScope "main" (the default) with dmPolicy pairing or open, or
// an allowlist of "*" or of two or more senders. One Issue (kind config)
// per account, with the fix. One allowed sender per account is not
// flagged, even across channels: that is one owner on several apps.
func SharedDMIssues(cfg *config.Config) []Issue {
	if cfg == nil || cmpOr(cfg.Session.DMScope, "main") != "main" {
		return nil
	}
	var out []Issue
	for _, ch := range config.BuiltChannels {
		for _, a := range Accounts(cfg, ch) {
			if dmsOn(a) && (a.DMPolicy == "pairing" || a.DMPolicy == "open" ||
				slices.Contains(a.AllowFrom, "*") || concrete(a.AllowFrom) > 1) {
				out = append(out, sharedIssue(fmt.Sprintf("%s account %q", ch, a.ID), "can take DMs from "+dmWho(a)))
			}
		}
	}
	return out
}

func dmsOn(a Account) bool {
	if a.DMPolicy == "disabled" {
		return false
	}
	return a.DMEnabled || a.Channel == "telegram"
}

func concrete(list []string) int {
	n := 0
	for _, e := range list {
		if strings.TrimSpace(e) != "*" && strings.TrimSpace(e) != "" {
			n++
		}
	}
	return n
}

func dmWho(a Account) string {
	switch {
	case a.DMPolicy == "pairing":
		return "anyone who pairs (dmPolicy pairing)"
	case slices.Contains(a.AllowFrom, "*"):
		return "anyone (allowFrom \"*\")"
	}
	return fmt.Sprintf("%d allowed senders", concrete(a.AllowFrom))
}

func sharedIssue(where, why string) Issue {
	return Issue{
		Kind: "config",
		Message: fmt.Sprintf(`%s %s, and session.dmScope is "main": every DM sender shares one conversation `+
			`and sees what the others said`, where, why),
		Fix: `set session.dmScope to "per-channel-peer" (one session per sender and channel), ` +
			`or "per-account-channel-peer" with several accounts`,
	}
}

// Owners are a channel's owners in commands.ownerAllowFrom
// ("<channel>:<senderId>" entries; a wildcard owns nothing): the senders
// owner-only tools and exec approvals in the chat are for.
func Owners(cfg *config.Config, ch string) []string {
	var out []string
	for _, owner := range cfg.Commands.OwnerAllowFrom {
		if c, id, ok := strings.Cut(strings.TrimSpace(owner), ":"); ok && strings.EqualFold(c, ch) && id != "" && id != "*" {
			out = append(out, id)
		}
	}
	return out
}
