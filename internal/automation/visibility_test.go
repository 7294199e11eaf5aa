package automation

import (
	"testing"

	"talon/internal/config"
)

// TestVisibilityFor: account over channel over channels.defaults over the
// built-in, key by key; heartbeatVisibility over the legacy heartbeat at
// each level.
func TestVisibilityFor(t *testing.T) {
	const src = `{channels: {
		defaults: {heartbeatVisibility: {useIndicator: false}, heartbeat: {showOk: true, useIndicator: true}},
		telegram: {botToken: "t", heartbeatVisibility: {showAlerts: false}, defaultAccount: "work",
			accounts: {work: {heartbeat: {showAlerts: true}}, home: {heartbeatVisibility: {showOk: false}}}},
		slack: {heartbeatVisibility: {showOk: false, showAlerts: false}}}}`
	tree, err := config.ParseJSON5([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var cfg config.Config
	if _, err := config.Decode(tree, &cfg); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name             string
		cfg              *config.Config
		channel, account string
		want             Visibility
	}{
		{"built-in", nil, "telegram", "", Visibility{ShowAlerts: true, UseIndicator: true}},
		{"defaults: the new key over the legacy one", &cfg, "", "", Visibility{ShowOK: true, ShowAlerts: true}},
		{"an unknown channel reads the defaults", &cfg, "discord", "", Visibility{ShowOK: true, ShowAlerts: true}},
		{"channel over defaults", &cfg, "slack", "", Visibility{}},
		{"the default account over its channel", &cfg, "telegram", "", Visibility{ShowOK: true, ShowAlerts: true}},
		{"a named account", &cfg, "telegram", "home", Visibility{}},
		{"an unknown account reads its channel", &cfg, "Telegram", "nope", Visibility{ShowOK: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := VisibilityFor(tt.cfg, tt.channel, tt.account); got != tt.want {
				t.Errorf("VisibilityFor(%q, %q) = %+v, want %+v", tt.channel, tt.account, got, tt.want)
			}
		})
	}
	if !(Visibility{}).Silent() || (Visibility{UseIndicator: true}).Silent() {
		t.Error("Silent is wrong")
	}
}
