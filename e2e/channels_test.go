package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"talon/internal/channel/discord/discordtest"
	"talon/internal/channel/slack/slacktest"
	"talon/internal/channel/telegram/tgtest"
	"talon/protocol/client"
)

// The channel tests run the real binary against loopback fakes of each
// platform that speak its wire protocol (internal/channel/*/…test), with
// the offline inspect model unless a test needs another.

// pairingCode is a code as a pairing reply shows it (spec R7.1).
var pairingCode = regexp.MustCompile(`\b[A-HJ-NP-Z2-9]{8}\b`)

// channelConfig writes a state dir whose config has the given channels
// (and agents.defaults, when model is set) and starts talon serve on it.
func channelConfig(t *testing.T, channels map[string]any, extra map[string]any) (*server, string) {
	t.Helper()
	dir := t.TempDir()
	cfg := map[string]any{
		"gateway":  map[string]any{"auth": map[string]any{"token": defaultToken}},
		"session":  map[string]any{"dmScope": "per-channel-peer"},
		"channels": channels,
	}
	for k, v := range extra {
		cfg[k] = v
	}
	writeJSONFile(t, filepath.Join(dir, "talon.json"), cfg)
	return startServerIn(t, dir), dir
}

// wsCall makes one gateway call as the operator.
func wsCall(t *testing.T, s *server, method string, params, out any) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, "ws"+strings.TrimPrefix(s.base, "http"), client.Options{Token: defaultToken})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.Call(ctx, method, params, out)
}

// talonCLI runs the talon binary and returns its output.
func talonCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(talonBin, args...).CombinedOutput()
	return string(out), err
}

func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestTelegramChannel walks a Telegram bot as its owner would: a
// stranger's DM gets a pairing code and never reaches the model; the
// owner approves it with the CLI while the gateway runs; the next DM is
// answered, in chunks under the limit; a group message without a mention
// is kept as history and answered only when the bot is mentioned; and a
// config edited by hand (DMs opened to everyone) applies without a
// restart.
func TestTelegramChannel(t *testing.T) {
	tg := tgtest.Start(t)
	s, dir := channelConfig(t, map[string]any{"telegram": map[string]any{
		"botToken": tg.Token, "apiRoot": tg.URL, "dmPolicy": "pairing", "textChunkLimit": 120,
		"groupPolicy": "allowlist", "groupAllowFrom": []string{"4242"}, "groups": map[string]any{"-100500": map[string]any{"requireMention": true}},
	}}, nil)
	ctx := waitCtx(t)
	ann := tgtest.User{ID: 4242, FirstName: "Ann"}

	// A stranger gets a code, and the model is not asked.
	tg.UserSays(tgtest.Say{From: ann, Text: "hello bot"})
	all := func() string {
		var b strings.Builder
		for _, m := range tg.Sent() {
			b.WriteString(m.Text + "\n")
		}
		return b.String()
	}
	if err := tg.Wait(ctx, func() bool { return strings.Contains(all(), "talon pairing approve telegram") }); err != nil {
		t.Fatalf("no pairing reply: %v (sent %q)\n%s", err, all(), s.proc.Log)
	}
	paired := len(tg.Sent())
	code := pairingCode.FindString(all())
	if code == "" || !strings.Contains(all(), "4242") {
		t.Fatalf("the pairing reply lacks the code or the sender id: %q", all())
	}
	var sessions struct {
		Sessions []struct{ Key string } `json:"sessions"`
	}
	if err := wsCall(t, s, "sessions.list", map[string]any{"agentId": "main"}, &sessions); err != nil {
		t.Fatal(err)
	}
	for _, row := range sessions.Sessions {
		if strings.Contains(row.Key, "telegram") {
			t.Errorf("an unpaired sender's message made a session: %s", row.Key)
		}
	}
	out, err := talonCLI(t, "pairing", "list", "--state-dir", dir)
	if err != nil || !strings.Contains(out, code) {
		t.Fatalf("talon pairing list: %v\n%s", err, out)
	}
	// The first sender approved where no command owner is configured
	// becomes the owner (R7.5).
	if out, err := talonCLI(t, "pairing", "approve", "telegram", strings.ToLower(code), "--state-dir", dir); err != nil ||
		!strings.Contains(out, "4242") || !strings.Contains(out, "telegram:4242 is now the command owner") {
		t.Fatalf("talon pairing approve: %v\n%s", err, out)
	}
	if cfg, _ := os.ReadFile(filepath.Join(dir, "talon.json")); !strings.Contains(string(cfg), `"ownerAllowFrom"`) {
		t.Errorf("the config after the first approval names no owner:\n%s", cfg)
	}

	// Approved: the next DM is answered, in chunks of at most 120
	// characters (the inspect model lists the agent's tools for /tools).
	tg.UserSays(tgtest.Say{From: ann, Text: "/tools"})
	if err := tg.Wait(ctx, func() bool { return len(tg.Sent()) >= paired+2 }); err != nil {
		t.Fatalf("the approved sender got no answer in chunks: %v (sent %+v)\n%s", err, tg.Sent(), s.proc.Log)
	}
	for _, m := range tg.Sent()[paired:] {
		if m.ChatID != "4242" || len([]rune(m.Text)) > 120 {
			t.Errorf("a chunk to %s of %d characters (limit 120): %.80q", m.ChatID, len([]rune(m.Text)), m.Text)
		}
	}
	if err := wsCall(t, s, "sessions.list", map[string]any{"agentId": "main"}, &sessions); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, row := range sessions.Sessions {
		found = found || row.Key == "agent:main:telegram:direct:4242"
	}
	if !found {
		t.Errorf("no session agent:main:telegram:direct:4242 among %+v", sessions.Sessions)
	}

	// A group: unmentioned is history, mentioned is answered.
	sentTo := func(chat string) []tgtest.Sent {
		var out []tgtest.Sent
		for _, m := range tg.Sent() {
			if m.ChatID == chat {
				out = append(out, m)
			}
		}
		return out
	}
	tg.UserSays(tgtest.Say{From: ann, Chat: -100500, ChatTitle: "Team", Text: "the deploy is at noon"})
	tg.UserSays(tgtest.Say{From: ann, Chat: -100500, ChatTitle: "Team", Text: "@talon_test_bot when is the deploy?"})
	if err := tg.Wait(ctx, func() bool { return len(sentTo("-100500")) > 0 }); err != nil {
		t.Fatalf("the mentioned group message got no answer: %v\n%s", err, s.proc.Log)
	}
	users := historyUserTexts(t, s, defaultToken, "agent:main:telegram:group:-100500")
	if len(users) != 1 || !strings.Contains(users[0], "when is the deploy?") || !strings.Contains(users[0], "the deploy is at noon") {
		t.Errorf("the group's session has user messages %q, want one turn: the mention with the earlier message as context", users)
	}

	// Telegram refuses the formatting of the next reply: it is sent
	// again as plain text, not lost.
	tg.Fail("sendMessage", tgtest.Failure{Code: 400, Description: "Bad Request: can't parse entities: Can't find end of the entity starting at byte offset 3"})
	tg.UserSays(tgtest.Say{From: ann, Text: "format this"})
	if err := tg.Wait(ctx, func() bool {
		for _, m := range sentTo("4242") {
			if m.ParseMode == "" && strings.Contains(m.Text, "inspect:") {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("the reply Telegram could not parse was not sent as plain text: %v", err)
	}

	// DMs opened to everyone by hand: a new sender is answered, no code.
	writeJSONFile(t, filepath.Join(dir, "talon.json"), map[string]any{
		"gateway":  map[string]any{"auth": map[string]any{"token": defaultToken}},
		"session":  map[string]any{"dmScope": "per-channel-peer"},
		"channels": map[string]any{"telegram": map[string]any{"botToken": tg.Token, "apiRoot": tg.URL, "dmPolicy": "open", "allowFrom": []string{"*"}}},
	})
	waitFor(t, "the open DM policy in channels.status", func() bool {
		var st struct {
			ChannelAccounts map[string][]struct {
				DMPolicy  string `json:"dmPolicy"`
				Connected bool   `json:"connected"`
			} `json:"channelAccounts"`
		}
		if err := wsCall(t, s, "channels.status", nil, &st); err != nil {
			return false
		}
		a := st.ChannelAccounts["telegram"]
		return len(a) == 1 && a[0].DMPolicy == "open" && a[0].Connected
	})
	tg.UserSays(tgtest.Say{From: tgtest.User{ID: 5151, FirstName: "Bob"}, Text: "hi there"})
	if err := tg.Wait(ctx, func() bool { return len(sentTo("5151")) > 0 }); err != nil {
		t.Fatalf("the new sender got nothing after the config change: %v\n%s", err, s.proc.Log)
	}
	if got := sentTo("5151")[0].Text; strings.Contains(got, "pairing") || pairingCode.MatchString(got) {
		t.Errorf("after opening DMs the new sender got %q", got)
	}
}

// TestChannelKilledMidTurn: kill -9 while the model works on a channel
// message; after the restart the message is answered, once.
func TestChannelKilledMidTurn(t *testing.T) {
	tg := tgtest.Start(t)
	llm := newWindowLLM(t, "openai", 1<<20)
	arrived := make(chan struct{}, 1)
	var held atomic.Bool
	llm.onChat = func(ctx context.Context) {
		if held.Swap(true) {
			return
		}
		arrived <- struct{}{}
		select {
		case <-ctx.Done():
		case <-time.After(30 * time.Second):
		}
	}
	s, dir := channelConfig(t, map[string]any{"telegram": map[string]any{
		"botToken": tg.Token, "apiRoot": tg.URL, "dmPolicy": "open", "allowFrom": []string{"*"},
	}}, map[string]any{
		"models": map[string]any{"providers": map[string]any{"fake": map[string]any{
			"baseUrl": llm.srv.URL + "/v1", "api": "openai-completions", "apiKey": "k",
			"models": []any{map[string]any{"id": "m"}},
		}}},
		"agents": map[string]any{"defaults": map[string]any{"model": "fake/m"}},
	})
	tg.UserSays(tgtest.Say{From: tgtest.User{ID: 77, FirstName: "Cy"}, Text: "are you there?"})
	select {
	case <-arrived:
	case <-time.After(30 * time.Second):
		t.Fatalf("the model was never asked\n%s", s.proc.Log)
	}
	s.kill()
	if n := len(tg.Sent()); n != 0 {
		t.Fatalf("%d messages sent before the answer existed", n)
	}
	s = startServerIn(t, dir)
	ctx := waitCtx(t)
	if _, err := tg.WaitSent(ctx, 1); err != nil {
		t.Fatalf("the message was not answered after the restart: %v\n%s", err, s.proc.Log)
	}
	// Another message, answered after the first: by then a second answer
	// to the first would have been sent.
	tg.UserSays(tgtest.Say{From: tgtest.User{ID: 77, FirstName: "Cy"}, Text: "and now?"})
	if _, err := tg.WaitSent(ctx, 2); err != nil {
		t.Fatalf("the next message: %v", err)
	}
	if n := len(tg.Sent()); n != 2 {
		for _, m := range tg.Sent() {
			t.Logf("sent: %q", m.Text)
		}
		t.Errorf("%d messages sent for 2 messages answered once each", n)
	}
}

// TestSlackChannel: Slack's Events API through the gateway's webhook
// route: a bad signature is refused, a DM is answered, and Slack's retry
// of the same event is not answered again.
func TestSlackChannel(t *testing.T) {
	sl := slacktest.Start(t)
	s, _ := channelConfig(t, map[string]any{"slack": map[string]any{
		"mode": "http", "botToken": slacktest.BotToken, "signingSecret": slacktest.SigningSecret, "apiUrl": sl.URL,
		"dmPolicy": "open", "allowFrom": []string{"*"}, "groupPolicy": "open",
	}}, nil)
	hook := s.base + "/channels/_/slack/default"
	sl.SetRequestURL(hook)
	ctx := waitCtx(t)
	waitFor(t, "the Slack account connected", func() bool {
		var st struct {
			ChannelAccounts map[string][]struct {
				Connected bool `json:"connected"`
			} `json:"channelAccounts"`
		}
		return wsCall(t, s, "channels.status", nil, &st) == nil && len(st.ChannelAccounts["slack"]) == 1 && st.ChannelAccounts["slack"][0].Connected
	})
	body := []byte(`{"type":"event_callback","event_id":"EvFORGED","event":{"type":"message","channel":"D0X","channel_type":"im","user":"U0EVE","text":"hi","ts":"1.1"}}`)
	if code, _, err := sl.Post(ctx, hook, body, slacktest.PostOptions{BadSignature: true}); err != nil || code != 401 {
		t.Errorf("a forged event: %d, %v; want 401", code, err)
	}
	if code, _, err := sl.Post(ctx, hook, body, slacktest.PostOptions{Age: 10 * time.Minute}); err != nil || code != 401 {
		t.Errorf("a replayed old event: %d, %v; want 401", code, err)
	}
	evs, err := sl.UserSays(ctx, slacktest.Message{Text: "hello from slack"})
	if err != nil || len(evs) != 1 || evs[0].Status != 200 {
		t.Fatalf("delivering the DM: %+v, %v", evs, err)
	}
	if _, err := sl.WaitSent(ctx, 1); err != nil {
		t.Fatalf("the DM got no answer: %v\n%s", err, s.proc.Log)
	}
	if code, _, err := sl.Post(ctx, hook, evs[0].Payload, slacktest.PostOptions{RetryNum: 1}); err != nil || code != 200 {
		t.Fatalf("Slack's retry: %d, %v", code, err)
	}
	if _, err := sl.UserSays(ctx, slacktest.Message{Text: "second message"}); err != nil {
		t.Fatal(err)
	}
	if _, err := sl.WaitSent(ctx, 2); err != nil {
		t.Fatalf("the second DM got no answer: %v", err)
	}
	if n := len(sl.Sent()); n != 2 {
		t.Errorf("%d posts for two messages and one retry", n)
	}

	// A thread in a channel: the answer goes into the thread, and the
	// thread is a session of its own.
	root, err := sl.UserSays(ctx, slacktest.Message{Kind: "channel", Text: "start of a thread", Mention: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sl.UserSays(ctx, slacktest.Message{Kind: "channel", Text: "in the thread", Mention: true, ThreadTS: root[0].TS}); err != nil {
		t.Fatal(err)
	}
	if err := waitSlack(ctx, sl, func(p slacktest.Posted) bool { return p.ThreadTS == root[0].TS }); err != nil {
		t.Fatalf("no answer in the thread %s: %v (posted %+v)", root[0].TS, err, sl.Sent())
	}
	var sessions struct {
		Sessions []struct{ Key string } `json:"sessions"`
	}
	if err := wsCall(t, s, "sessions.list", map[string]any{"agentId": "main"}, &sessions); err != nil {
		t.Fatal(err)
	}
	thread := false
	for _, row := range sessions.Sessions {
		thread = thread || strings.HasSuffix(row.Key, ":thread:"+root[0].TS)
	}
	if !thread {
		t.Errorf("no session for the thread %s among %+v", root[0].TS, sessions.Sessions)
	}
}

// waitSlack waits for a post that ok accepts.
func waitSlack(ctx context.Context, sl *slacktest.Server, ok func(slacktest.Posted) bool) error {
	for {
		for _, p := range sl.Sent() {
			if ok(p) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestDiscordChannel: a DM over Discord's gateway is answered; a guild
// message without a mention is not, one with a mention is.
func TestDiscordChannel(t *testing.T) {
	dc := discordtest.Start(t)
	s, _ := channelConfig(t, map[string]any{"discord": map[string]any{
		"token": discordtest.Token, "apiUrl": dc.URL, "gatewayUrl": dc.GatewayURL,
		"dmPolicy": "open", "allowFrom": []string{"*"}, "groupPolicy": "open",
	}}, nil)
	ctx := waitCtx(t)
	if err := dc.WaitReady(ctx, 1); err != nil {
		t.Fatalf("the bot never identified: %v\n%s", err, s.proc.Log)
	}
	dc.UserSays(discordtest.Say{Text: "hello from discord"})
	if _, err := dc.WaitSent(ctx, 1); err != nil {
		t.Fatalf("the DM got no answer: %v\n%s", err, s.proc.Log)
	}
	dc.UserSays(discordtest.Say{ChannelID: discordtest.ChannelID, Text: "chatter without a mention"})
	dc.UserSays(discordtest.Say{ChannelID: discordtest.ChannelID, Text: "what now?", MentionBot: true})
	if _, err := dc.WaitSent(ctx, 2); err != nil {
		t.Fatalf("the mention got no answer: %v\n%s", err, s.proc.Log)
	}
	// Messages of one conversation are handled in order: by the time the
	// mention is answered the chatter was handled, as history only.
	users := historyUserTexts(t, s, defaultToken, "agent:main:discord:channel:"+discordtest.ChannelID)
	if len(users) != 1 || !strings.Contains(users[0], "what now?") || !strings.Contains(users[0], "chatter without a mention") {
		t.Errorf("the channel's session has user messages %q, want one turn: the mention with the chatter as context", users)
	}

	// The message tool reads the DM's history and a message's reactions,
	// and posts a native poll (spec channels.md R9.2).
	said := dc.UserSays(discordtest.Say{Text: "react to me"})
	if err := dc.UserReacts(said, "👍", discordtest.UserID); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ call, want string }{
		{`{"action":"read","limit":10}`, "react to me"},
		{`{"action":"reactions","messageId":"` + said + `"}`, `"emoji":"👍","count":1`},
		{`{"action":"poll","pollQuestion":"Ship it?","pollOption":["yes","no"],"pollDurationSeconds":3600}`, `"action":"poll"`},
	} {
		n := len(dc.Sent())
		dc.UserSays(discordtest.Say{Text: "/call message " + tc.call})
		if _, err := dc.WaitSent(ctx, n+1); err != nil {
			t.Fatalf("%s: no answer: %v", tc.call, err)
		}
		waitFor(t, "an answer saying "+tc.want, func() bool {
			return slices.ContainsFunc(dc.Sent()[n:], func(m discordtest.Sent) bool { return strings.Contains(m.Content, tc.want) })
		})
	}
	if !slices.ContainsFunc(dc.Sent(), func(m discordtest.Sent) bool {
		return m.Poll != nil && m.Poll.Question == "Ship it?" && m.Poll.Duration == 1
	}) {
		t.Errorf("no poll in %+v", dc.Sent())
	}
}

// TestChannelExecApproval: a command a channel turn runs that needs an
// approval is posted in the chat; a stranger's /approve is refused, the
// approver's runs it.
func TestChannelExecApproval(t *testing.T) {
	tg := tgtest.Start(t)
	s, _ := channelConfig(t, map[string]any{"telegram": map[string]any{
		"botToken": tg.Token, "apiRoot": tg.URL, "dmPolicy": "open", "allowFrom": []string{"4242", "*"},
	}}, map[string]any{
		"tools": map[string]any{"exec": map[string]any{"host": "gateway", "security": "allowlist", "ask": "always"}},
	})
	ctx := waitCtx(t)
	owner, other := tgtest.User{ID: 4242, FirstName: "Ann"}, tgtest.User{ID: 999, FirstName: "Eve"}
	all := func() string {
		var b strings.Builder
		for _, m := range tg.Sent() {
			b.WriteString(m.Text + "\n")
		}
		return b.String()
	}
	tg.UserSays(tgtest.Say{From: owner, Text: `/call exec {"command":"echo chat-approved-ok"}`})
	if err := tg.Wait(ctx, func() bool { return strings.Contains(all(), "/approve ") }); err != nil {
		t.Fatalf("no approval request in the chat: %v (sent %q)\n%s", err, all(), s.proc.Log)
	}
	slug := regexp.MustCompile(`/approve ([0-9a-f]{8}) allow-once`).FindStringSubmatch(all())
	if slug == nil {
		t.Fatalf("the approval request has no id: %q", all())
	}
	in := func(chat, text string) bool {
		for _, m := range tg.Sent() {
			if m.ChatID == chat && strings.Contains(m.Text, text) {
				return true
			}
		}
		return false
	}
	tg.UserSays(tgtest.Say{From: other, Text: "/approve " + slug[1] + " allow-once"})
	if err := tg.Wait(ctx, func() bool { return in("999", "cannot approve") }); err != nil {
		t.Fatalf("a stranger's /approve was not refused: %v (sent %q)", err, all())
	}
	tg.UserSays(tgtest.Say{From: owner, Text: "/approve " + slug[1] + " allow-once"})
	if err := tg.Wait(ctx, func() bool { return in("4242", "allow-once: echo chat-approved-ok") }); err != nil {
		t.Fatalf("the approver's /approve was not taken: %v (sent %q)", err, all())
	}
	waitFor(t, "the approved command's outcome in the session", func() bool {
		var h struct {
			Messages []struct {
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if wsCall(t, s, "chat.history", map[string]any{"sessionKey": "agent:main:telegram:direct:4242"}, &h) != nil {
			return false
		}
		for _, m := range h.Messages {
			if strings.Contains(string(m.Content), "chat-approved-ok") && strings.Contains(string(m.Content), "Exec") {
				return true
			}
		}
		return false
	})

	// The request's buttons answer it too: a press arrives as the
	// /approve it stands for, from the presser, checked as typed, and is
	// answered to Telegram.
	tg.UserSays(tgtest.Say{From: owner, Text: `/call exec {"command":"echo pressed-deny"}`})
	var req tgtest.Sent
	if err := tg.Wait(ctx, func() bool {
		for _, m := range tg.Sent() {
			if strings.Contains(m.Text, "echo pressed-deny") && len(m.Buttons) == 1 && len(m.Buttons[0]) == 3 {
				req = m
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("no approval request with buttons: %v (sent %q)", err, all())
	}
	deny := req.Buttons[0][2].CallbackData
	if !strings.HasSuffix(deny, " deny") {
		t.Fatalf("the third button is %+v, want deny", req.Buttons[0][2])
	}
	if _, _, err := tg.UserPresses(tgtest.Press{From: owner, MessageID: req.MessageID, Data: deny}); err != nil {
		t.Fatal(err)
	}
	if err := tg.Wait(ctx, func() bool { return in("4242", "deny: echo pressed-deny") }); err != nil {
		t.Fatalf("the approver's press was not taken: %v (sent %q)", err, all())
	}
	if _, err := tg.WaitAnswers(ctx, 1); err != nil {
		t.Errorf("the presses were not answered: %v", err)
	}
}
