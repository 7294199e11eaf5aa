package hub

import (
	"context"
	"slices"
	"strings"

	"talon/internal/channel"
)

// AccountReport is one account's line of channels.status.
type AccountReport struct {
	Channel   string `json:"channel"`
	AccountID string `json:"accountId"`
	Running   bool   `json:"running"`
	DMPolicy  string `json:"dmPolicy,omitempty"`
	channel.Status
}

// Issue is one statusIssues entry, with the account it is about ("" for
// the channel or the config as a whole).
type Issue struct {
	Channel   string `json:"channel"`
	AccountID string `json:"accountId,omitempty"`
	channel.Issue
}

// Report is channels.status's content for one tenant.
type Report struct {
	Accounts []AccountReport `json:"accounts"`
	Issues   []Issue         `json:"issues"`
}

// maxIssues bounds statusIssues (spec §16).
const maxIssues = 50

// Status reports every configured account, sorted, and what is wrong:
// the config's issues (the shared-DM warning among them), each adapter's
// own (Telegram's privacy mode when a group reads unmentioned messages,
// R11.8, is the Telegram adapter's), and an account that could not start.
// With probe, adapters that can check their account (Prober) do so first.
func (h *Hub) Status(ctx context.Context, probe bool) Report {
	h.mu.Lock()
	accs := make([]*account, 0, len(h.accounts))
	for _, a := range h.accounts {
		accs = append(accs, a)
	}
	cfgIssues := slices.Clone(h.issues)
	h.mu.Unlock()
	slices.SortFunc(accs, func(a, b *account) int {
		return strings.Compare(a.a.Channel+"\x00"+a.a.ID, b.a.Channel+"\x00"+b.a.ID)
	})
	out := Report{Accounts: []AccountReport{}, Issues: []Issue{}}
	for _, i := range cfgIssues {
		out.Issues = append(out.Issues, Issue{Issue: i})
	}
	for _, acc := range accs {
		rep, issues := acc.report(ctx, probe)
		out.Accounts = append(out.Accounts, rep)
		out.Issues = append(out.Issues, issues...)
	}
	if len(out.Issues) > maxIssues {
		out.Issues = out.Issues[:maxIssues]
	}
	return out
}

func (acc *account) report(ctx context.Context, probe bool) (AccountReport, []Issue) {
	acc.mu.Lock()
	t, running, err := acc.t, acc.running, acc.err
	acc.mu.Unlock()
	rep := AccountReport{Channel: acc.a.Channel, AccountID: acc.a.ID, Running: running, DMPolicy: acc.a.DMPolicy}
	var issues []Issue
	add := func(i channel.Issue) {
		issues = append(issues, Issue{Channel: acc.a.Channel, AccountID: acc.a.ID, Issue: i})
	}
	if t != nil {
		if p, ok := t.(Prober); ok && probe && running {
			if perr := p.Probe(ctx); perr != nil {
				add(channel.Issue{Kind: "runtime", Message: "probe failed: " + perr.Error()})
			}
		}
		rep.Status = t.Status()
		for _, i := range rep.Status.Issues {
			add(i)
		}
		if p, ok := t.(privacyReporter); ok && readsUnmentioned(acc.a) {
			if i, on := p.PrivacyIssue(); on {
				add(i)
			}
		}
	}
	if err != nil {
		rep.LastError = err.Error()
		kind := "runtime"
		if strings.Contains(err.Error(), "token is already used") {
			kind = "config"
		}
		add(channel.Issue{Kind: kind, Message: err.Error()})
	}
	return rep, issues
}

// privacyReporter is an adapter whose platform can hide group messages
// from the bot (Telegram's privacy mode, spec R11.8 / "better" #4).
type privacyReporter interface {
	PrivacyIssue() (channel.Issue, bool)
}

// readsUnmentioned says some group of the account is to be read without
// a mention: only then does privacy mode lose messages (not otherwise,
// OpenClaw #17405).
func readsUnmentioned(a Account) bool {
	off := func(b *bool) bool { return b != nil && !*b }
	if off(a.RequireMention) {
		return true
	}
	for _, g := range a.Groups {
		if off(g.RequireMention) {
			return true
		}
		for _, tp := range g.Topics {
			if off(tp.RequireMention) {
				return true
			}
		}
	}
	return false
}
