package automation

import (
	"strings"

	"talon/internal/config"
)

// Visibility is what a heartbeat may show on the channel it delivers to
// (spec automation.md §9): its OK acknowledgement (sent as the bare
// token), its alerts, and the heartbeat event UIs show as an indicator.
type Visibility struct {
	ShowOK, ShowAlerts, UseIndicator bool
}

// Silent says nothing would show: the heartbeat is skipped before the
// model is called (reason alerts-disabled).
func (v Visibility) Silent() bool { return !v.ShowOK && !v.ShowAlerts && !v.UseIndicator }

// VisibilityFor resolves the visibility of channel's account (its
// defaultAccount when account is ""), key by key: the account's, the
// channel's, channels.defaults', then the built-in (no OK, alerts,
// indicator). At each level heartbeatVisibility is read over the legacy
// heartbeat. channel "" (no delivery, or not known before the run) reads
// channels.defaults alone.
func VisibilityFor(cfg *config.Config, channel, account string) Visibility {
	var levels []*config.ChannelSettings
	if channel = strings.ToLower(strings.TrimSpace(channel)); channel != "" && channel != "defaults" && cfg != nil {
		if ch, ok := cfg.Channels[channel]; ok {
			if account == "" {
				account = ch.DefaultAccount
			}
			if a, ok := ch.Accounts[account]; ok && account != "" {
				levels = append(levels, &a.ChannelSettings)
			}
			levels = append(levels, &ch.ChannelSettings)
		}
	}
	d := cfg.ChannelDefaults()
	levels = append(levels, &d.ChannelSettings)
	v := Visibility{ShowAlerts: true, UseIndicator: true}
	pick := func(get func(*config.HeartbeatVisibility) *bool, into *bool) {
		for _, l := range levels {
			for _, h := range []*config.HeartbeatVisibility{l.HeartbeatVisibility, l.Heartbeat} {
				if h != nil {
					if b := get(h); b != nil {
						*into = *b
						return
					}
				}
			}
		}
	}
	pick(func(h *config.HeartbeatVisibility) *bool { return h.ShowOK }, &v.ShowOK)
	pick(func(h *config.HeartbeatVisibility) *bool { return h.ShowAlerts }, &v.ShowAlerts)
	pick(func(h *config.HeartbeatVisibility) *bool { return h.UseIndicator }, &v.UseIndicator)
	return v
}
