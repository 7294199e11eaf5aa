package gateway

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"talon/internal/channel/slack/slacktest"
	"talon/internal/channel/telegram/tgtest"
	"talon/protocol"
)

// tgAddr is a fake Bot API's host:port, for tenants.network.allowHosts.
func tgAddr(t *testing.T, tg *tgtest.Server) string {
	u, err := url.Parse(tg.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// TestTenantChannels: a tenant's channel account reads its token from the
// tenant's own env, never the process's (not even the env fallback of
// the default account); it reaches a private address only when the
// operator opened it; and it answers its DMs like the operator's.
func TestTenantChannels(t *testing.T) {
	needBwrap(t)
	tg := tgtest.Start(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "talon.json"), []byte(`{gateway: {auth: {token: "`+wsToken+`"}}, tenants: {network: {allowHosts: ["`+tgAddr(t, tg)+`"]}}}`))
	writeFile(t, filepath.Join(dir, "tenants", "acme", "talon.json"), []byte(`{gateway: {auth: {token: "acme-token"}},
		env: {TG: "`+tg.Token+`"},
		channels: {telegram: {botToken: "${TG}", apiRoot: "`+tg.URL+`", dmPolicy: "open", allowFrom: ["*"]}}}`))
	// beta names no token: the default account's fallback would be
	// TELEGRAM_BOT_TOKEN, which only the operator's config reads.
	writeFile(t, filepath.Join(dir, "tenants", "beta", "talon.json"), []byte(`{gateway: {auth: {token: "beta-token"}},
		channels: {telegram: {apiRoot: "`+tg.URL+`", dmPolicy: "open", allowFrom: ["*"]}}}`))
	ts := startServer(t, dir, map[string]string{"TELEGRAM_BOT_TOKEN": tg.Token})
	url := "ws" + strings.TrimPrefix(ts.url, "http")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tg.UserSays(tgtest.Say{From: tgtest.User{ID: 31, FirstName: "Tia"}, Text: "hello"})
	if _, err := tg.WaitSent(ctx, 1); err != nil {
		t.Fatalf("the tenant's bot did not answer: %v", err)
	}
	type status struct {
		ChannelAccounts map[string][]struct {
			Running   bool    `json:"running"`
			Connected bool    `json:"connected"`
			LastError *string `json:"lastError"`
		} `json:"channelAccounts"`
		StatusIssues []struct{ Message string } `json:"statusIssues"`
	}
	acme := mustCall[status](t, dialTenant(t, url, "acme", "acme-token"), "channels.status", nil)
	if a := acme.ChannelAccounts["telegram"]; len(a) != 1 || !a[0].Connected {
		t.Errorf("acme's account: %+v", acme.ChannelAccounts)
	}
	beta := mustCall[status](t, dialTenant(t, url, "beta", "beta-token"), "channels.status", nil)
	a := beta.ChannelAccounts["telegram"]
	if len(a) != 1 || a[0].Connected || a[0].LastError == nil || !strings.Contains(*a[0].LastError, "no bot token") {
		t.Errorf("beta took the process's TELEGRAM_BOT_TOKEN: %+v", a)
	}

	// A webhook path of no account: 404, whoever asks.
	for _, path := range []string{"/channels/acme/telegram/default", "/channels/_/telegram/default", "/channels/nobody/slack/default", "/channels/../talon.json/x/y"} {
		resp, err := http.Post(ts.url+path, "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("POST %s: %d, want 404", path, resp.StatusCode)
		}
	}
}

// TestTenantChannelOnPrivateAddress: a channel server on loopback the
// operator did not open is refused when the tenant writes it, and a file
// written by hand runs held to the ceiling: the bot never calls it.
func TestTenantChannelOnPrivateAddress(t *testing.T) {
	tg := tgtest.Start(t)
	ts, url := startWS(t, "")
	writeFile(t, filepath.Join(ts.dir, "tenants", "acme", "talon.json"), []byte(`{gateway: {auth: {token: "acme-token"}}}`))
	c := dialTenant(t, url, "acme", "acme-token")
	hash := mustCall[configSnapshot](t, c, "config.get", nil).Hash
	pe := callFails(t, c, "config.patch", map[string]any{"baseHash": hash, "raw": `{channels: {telegram: {botToken: "` + tg.Token + `", apiRoot: "` + tg.URL + `"}}}`}, "invalid config: ")
	if !strings.Contains(pe.Message, "channels.telegram.apiRoot: beyond the operator's ceiling") {
		t.Errorf("config.patch with a loopback apiRoot: %s", pe.Message)
	}
	writeFile(t, filepath.Join(ts.dir, "tenants", "acme", "talon.json"), []byte(`{gateway: {auth: {token: "acme-token"}},
		channels: {telegram: {botToken: "`+tg.Token+`", apiRoot: "`+tg.URL+`", tokenFile: "/etc/passwd"}}}`))
	// The account runs (on Telegram's own server, the apiRoot held off):
	// wait until it has tried to connect, then the fake must have had
	// nothing.
	type status struct {
		ChannelAccounts map[string][]struct {
			ReconnectAttempts int     `json:"reconnectAttempts"`
			LastError         *string `json:"lastError"`
		} `json:"channelAccounts"`
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := mustCall[status](t, c, "channels.status", nil)
		if a := st.ChannelAccounts["telegram"]; len(a) == 1 && (a[0].LastError != nil || a[0].ReconnectAttempts > 0) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the account never tried to connect: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := tg.Requests(); n != 0 {
		t.Errorf("the fake Bot API on loopback got %d requests from a tenant's bot", n)
	}
}

// TestMessageTool: the message tool sends to the conversation the turn
// came from, to another chat of the same platform, and refuses another
// platform and a bad target; the refusals reach the model as errors.
func TestMessageTool(t *testing.T) {
	tg := tgtest.Start(t)
	_, url := startWS(t, `,"channels":{"telegram":{"botToken":"`+tg.Token+`","apiRoot":"`+tg.URL+`","dmPolicy":"open","allowFrom":["*"]}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sentTo := func(chat, text string) bool {
		for _, m := range tg.Sent() {
			if m.ChatID == chat && strings.Contains(m.Text, text) {
				return true
			}
		}
		return false
	}
	say := func(text string) {
		tg.UserSays(tgtest.Say{From: tgtest.User{ID: 61, FirstName: "Max"}, Text: text})
	}
	for _, tc := range []struct {
		name, call, chat, want string
	}{
		{"to this conversation", `{"action":"send","message":"hello from the tool"}`, "61", "hello from the tool"},
		{"to another chat", `{"action":"send","target":"-100777","message":"to the team"}`, "-100777", "to the team"},
		{"another platform", `{"action":"send","channel":"slack","target":"channel:C1","message":"x"}`, "61", "allowAcrossProviders is off"},
		{"a bad target", `{"action":"send","target":"../etc","message":"x"}`, "61", "a Telegram target is a numeric chat id"},
		{"an action not built", `{"action":"pin","messageId":"1"}`, "61", `unsupported action "pin"`},
		{"dry run", `{"action":"send","target":"42","message":"not sent","dryRun":true}`, "61", `"dryRun":true`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			say("/call message " + tc.call)
			if err := tg.Wait(ctx, func() bool { return sentTo(tc.chat, tc.want) }); err != nil {
				var got []string
				for _, m := range tg.Sent() {
					got = append(got, m.ChatID+": "+m.Text)
				}
				t.Fatalf("nothing in %s saying %q: %v\n%s", tc.chat, tc.want, err, strings.Join(got, "\n"))
			}
		})
	}
	if sentTo("42", "not sent") {
		t.Error("a dry run sent its message")
	}

	// The session knows where its conversation is (R4.7); the main
	// session all DMs share here gets no chat's name.
	type row struct {
		Key           string `json:"key"`
		ChatType      string `json:"chatType"`
		DisplayName   string `json:"displayName"`
		Channel       string `json:"channel"`
		LastChannel   string `json:"lastChannel"`
		LastTo        string `json:"lastTo"`
		LastAccountID string `json:"lastAccountId"`
	}
	l := mustCall[struct {
		Sessions []row `json:"sessions"`
	}](t, dialWS(t, url), "sessions.list", map[string]any{"agentId": "main"})
	want := row{"agent:main:main", "direct", "", "telegram", "telegram", "61", "default"}
	if !slices.Contains(l.Sessions, want) {
		t.Errorf("sessions %+v, want one %+v", l.Sessions, want)
	}
}

// TestMessageToolFilesPollsReads: the message tool posts a workspace
// file and a poll where the platform has them, refuses what Telegram
// lacks (history), holds an action the account turned off, and an
// inbound attachment lands in the workspace where the model reads it.
func TestMessageToolFilesPollsReads(t *testing.T) {
	tg := tgtest.Start(t)
	ts, url := startWS(t, `,"channels":{"telegram":{"botToken":"`+tg.Token+`","apiRoot":"`+tg.URL+`","dmPolicy":"open","allowFrom":["*"],
		"mediaMaxMb":1,"actions":{"deleteMessage":false}}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sent := func(text string) bool {
		for _, m := range tg.Sent() {
			if strings.Contains(m.Text, text) {
				return true
			}
		}
		return false
	}
	user := tgtest.User{ID: 62, FirstName: "Ida"}
	// An attachment: written under inbound/<day>/, read back by the
	// model with the read tool.
	day := time.Now().UTC().Format("2006-01-02")
	tg.UserSays(tgtest.Say{From: user, Text: `/call read {"path":"inbound/` + day + `/notes.txt"}`,
		File: &tgtest.Attachment{Kind: "document", Name: "notes.txt", MIME: "text/plain", Data: []byte("quarterly numbers: 42")}})
	if err := tg.Wait(ctx, func() bool { return sent("quarterly numbers: 42") }); err != nil {
		t.Fatalf("the model did not read the attachment from its workspace: %v (sent %+v)", err, tg.Sent())
	}
	// One over mediaMaxMb is not downloaded; the model is told why.
	tg.UserSays(tgtest.Say{From: user, Text: "big one", File: &tgtest.Attachment{Kind: "document", Name: "big.bin", Data: []byte("x"), Size: 2 << 20}})
	waitHistory(t, url, "agent:main:main", "[media unavailable: big.bin:")

	for _, tc := range []struct{ name, call, want string }{
		{"a poll", `{"action":"poll","pollQuestion":"Lunch?","pollOption":["pizza","sushi"],"pollMulti":true}`, `"action":"poll"`},
		{"a file from the workspace", `{"action":"sendAttachment","media":"inbound/` + day + `/notes.txt","message":"*the* notes"}`, `"name":"notes.txt"`},
		{"a file as base64", `{"action":"sendAttachment","buffer":"` + base64.StdEncoding.EncodeToString([]byte("a,b\n")) + `","filename":"t.csv"}`, `"contentType":"text/csv"`},
		{"history Telegram lacks", `{"action":"read","limit":5}`, "unsupported action for channel telegram"},
		{"an action turned off", `{"action":"delete","messageId":"1"}`, "channels.telegram.actions.deleteMessage is false"},
		{"a file outside the workspace", `{"action":"sendAttachment","media":"/etc/passwd"}`, "outside the workspace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg.UserSays(tgtest.Say{From: user, Text: "/call message " + tc.call})
			if err := tg.Wait(ctx, func() bool { return sent(tc.want) }); err != nil {
				var got []string
				for _, m := range tg.Sent() {
					got = append(got, m.Text)
				}
				t.Fatalf("no answer saying %q: %v\n%s", tc.want, err, strings.Join(got, "\n"))
			}
		})
	}
	if p := tg.Polls(); len(p) != 1 || p[0].Question != "Lunch?" || !slices.Equal(p[0].Options, []string{"pizza", "sushi"}) || !p[0].Multi {
		t.Errorf("polls %+v", p)
	}
	ups := tg.Uploads()
	if len(ups) != 2 || ups[0].Name != "notes.txt" || string(ups[0].Data) != "quarterly numbers: 42" || ups[0].Caption != "<i>the</i> notes" ||
		ups[1].Name != "t.csv" || string(ups[1].Data) != "a,b\n" {
		t.Errorf("uploads %+v", ups)
	}
	_ = ts
}

// waitHistory waits until a session's chat.history holds text.
func waitHistory(t *testing.T, url, key, text string) {
	t.Helper()
	c := dialWS(t, url)
	deadline := time.Now().Add(20 * time.Second)
	for {
		h := mustCall[struct {
			Messages []struct {
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}](t, c, "chat.history", map[string]any{"sessionKey": key})
		for _, m := range h.Messages {
			if strings.Contains(string(m.Content), text) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the history of %s: %+v", text, key, h.Messages)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestChannelGroupToolPolicy: a group's toolsBySender applies to the
// sender of each message (spec channels.md §10): the same group, two
// senders, two tool lists.
func TestChannelGroupToolPolicy(t *testing.T) {
	tg := tgtest.Start(t)
	startWS(t, `,"channels":{"telegram":{"botToken":"`+tg.Token+`","apiRoot":"`+tg.URL+`","groupPolicy":"open",
		"groups":{"-100900":{"requireMention":false,"toolsBySender":{"id:71":{"deny":["exec","process"]}}}}}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	count := regexp.MustCompile(`(\d+) tools`)
	toolsFor := func(id int64) string {
		before := len(tg.Sent())
		tg.UserSays(tgtest.Say{From: tgtest.User{ID: id, FirstName: "U"}, Chat: -100900, ChatTitle: "Ops", Text: "hello"})
		if err := tg.Wait(ctx, func() bool { return len(tg.Sent()) > before }); err != nil {
			t.Fatal(err)
		}
		m := count.FindStringSubmatch(tg.Sent()[before].Text)
		if m == nil {
			t.Fatalf("no tool count in %q", tg.Sent()[before].Text)
		}
		return m[1]
	}
	restricted, other := toolsFor(71), toolsFor(72)
	r, _ := strconv.Atoi(restricted)
	o, _ := strconv.Atoi(other)
	if r != o-2 {
		t.Errorf("sender 71 (exec and process denied by toolsBySender) is offered %d tools, sender 72 %d; want 2 fewer", r, o)
	}
}

// TestMessageToolActs: the message tool reacts to a message of the
// conversation, edits and deletes one of the bot's, through the adapter.
func TestMessageToolActs(t *testing.T) {
	tg := tgtest.Start(t)
	startWS(t, `,"channels":{"telegram":{"botToken":"`+tg.Token+`","apiRoot":"`+tg.URL+`","dmPolicy":"open","allowFrom":["*"]}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	from := tgtest.User{ID: 62, FirstName: "Ola"}
	first, _ := tg.UserSays(tgtest.Say{From: from, Text: "hi"})
	if _, err := tg.WaitSent(ctx, 1); err != nil {
		t.Fatal(err)
	}
	bots := tg.Sent()[0].MessageID
	say := func(call string, done func() bool) {
		t.Helper()
		n := len(tg.Sent())
		tg.UserSays(tgtest.Say{From: from, Text: "/call message " + call})
		if err := tg.Wait(ctx, func() bool { return done() && len(tg.Sent()) > n }); err != nil {
			t.Fatalf("%s: %v (last sent %q)", call, err, tg.Sent()[len(tg.Sent())-1].Text)
		}
	}
	say(fmt.Sprintf(`{"action":"react","messageId":"%d","emoji":"👍"}`, first.MessageID), func() bool {
		r := tg.Reactions()
		return len(r) == 1 && r[0].MessageID == first.MessageID && r[0].Emoji == "👍"
	})
	say(fmt.Sprintf(`{"action":"edit","messageId":"%d","message":"**edited**"}`, bots), func() bool {
		e := tg.Edits()
		return len(e) == 1 && e[0].MessageID == bots && e[0].Text == "<b>edited</b>"
	})
	say(fmt.Sprintf(`{"action":"delete","messageId":"%d"}`, bots), func() bool {
		d := tg.Deletions()
		return len(d) == 1 && d[0].MessageID == bots
	})
}

// TestTelegramPrivacyIssue (spec "better" #4, R11.8): privacy mode is
// reported, with the fix, when a group is to be read without mentions,
// and not otherwise.
func TestTelegramPrivacyIssue(t *testing.T) {
	for _, tc := range []struct {
		name, groups string
		want         bool
	}{
		{"mentions required", `{"-100":{"requireMention":true}}`, false},
		{"a group read without mentions", `{"-100":{"requireMention":true},"-200":{"requireMention":false}}`, true},
		{"a topic read without mentions", `{"-100":{"topics":{"3":{"requireMention":false}}}}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := tgtest.Start(t)
			tg.SetPrivacy(false)
			_, url := startWS(t, `,"channels":{"telegram":{"botToken":"`+tg.Token+`","apiRoot":"`+tg.URL+`","groups":`+tc.groups+`}}`)
			c := dialWS(t, url)
			type status struct {
				ChannelAccounts map[string][]struct {
					Connected bool `json:"connected"`
				} `json:"channelAccounts"`
				StatusIssues []struct{ Message, Fix string } `json:"statusIssues"`
			}
			var st status
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				st = mustCall[status](t, c, "channels.status", nil)
				if a := st.ChannelAccounts["telegram"]; len(a) == 1 && a[0].Connected {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("never connected: %+v", st)
				}
			}
			got := slices.ContainsFunc(st.StatusIssues, func(i struct{ Message, Fix string }) bool {
				return strings.Contains(i.Message, "privacy mode") && strings.Contains(i.Fix, "/setprivacy")
			})
			if got != tc.want {
				t.Errorf("privacy issue reported %v, want %v: %+v", got, tc.want, st.StatusIssues)
			}
			// Turned off in BotFather: a probe sees it at once.
			tg.SetPrivacy(true)
			st = mustCall[status](t, c, "channels.status", map[string]any{"probe": true})
			if slices.ContainsFunc(st.StatusIssues, func(i struct{ Message, Fix string }) bool { return strings.Contains(i.Message, "privacy mode") }) {
				t.Errorf("after privacy mode was turned off, a probe still reports it: %+v", st.StatusIssues)
			}
		})
	}
}

// TestAckReaction (R8.7): a mention in a group gets 👀 on the message when
// its turn starts; a DM gets none (scope group-mentions).
func TestAckReaction(t *testing.T) {
	tg := tgtest.Start(t)
	startWS(t, `,"channels":{"telegram":{"botToken":"`+tg.Token+`","apiRoot":"`+tg.URL+`","groupPolicy":"open","dmPolicy":"open","allowFrom":["*"]}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dm, _ := tg.UserSays(tgtest.Say{From: tgtest.User{ID: 81, FirstName: "Al"}, Text: "hello"})
	mention, _ := tg.UserSays(tgtest.Say{From: tgtest.User{ID: 81, FirstName: "Al"}, Chat: -100901, ChatTitle: "Ops", Text: "@talon_test_bot status?"})
	if err := tg.Wait(ctx, func() bool {
		return slices.ContainsFunc(tg.Reactions(), func(r tgtest.Reaction) bool { return r.MessageID == mention.MessageID && r.Emoji == "👀" })
	}); err != nil {
		t.Fatalf("no 👀 on the mention: %v (reactions %+v)", err, tg.Reactions())
	}
	if _, err := tg.WaitSent(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(tg.Reactions(), func(r tgtest.Reaction) bool { return r.MessageID == dm.MessageID }) {
		t.Errorf("the DM got a reaction: %+v", tg.Reactions())
	}
}

// TestMessageToolCrossContext (R9.4): tools.message.crossContext narrows
// where the tool may send from a conversation, or opens other platforms.
func TestMessageToolCrossContext(t *testing.T) {
	tg := tgtest.Start(t)
	startWS(t, `,"tools":{"message":{"crossContext":{"allowWithinProvider":false,"allowAcrossProviders":true}}},"channels":{"telegram":{"botToken":"`+tg.Token+`","apiRoot":"`+tg.URL+`","dmPolicy":"open","allowFrom":["*"]}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct{ name, call, want string }{
		{"another chat of the platform", `{"action":"send","target":"-100777","message":"x"}`, "allowWithinProvider is off"},
		{"another platform, allowed but not configured", `{"action":"send","channel":"slack","target":"channel:C1","message":"x"}`, "slack"},
		{"this conversation", `{"action":"send","message":"still here"}`, "still here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := len(tg.Sent())
			tg.UserSays(tgtest.Say{From: tgtest.User{ID: 64, FirstName: "Vi"}, Text: "/call message " + tc.call})
			if err := tg.Wait(ctx, func() bool {
				for _, m := range tg.Sent()[n:] {
					if strings.Contains(m.Text, tc.want) {
						return true
					}
				}
				return false
			}); err != nil {
				t.Fatalf("nothing saying %q: %v", tc.want, err)
			}
			if slices.ContainsFunc(tg.Sent()[n:], func(m tgtest.Sent) bool { return m.ChatID == "-100777" }) {
				t.Error("a send to another chat got through")
			}
		})
	}
}

// TestSlackTypingReaction: Slack shows bots no typing indicator; with
// typingReaction the message carries that reaction while its turn runs,
// taken off after the answer.
func TestSlackTypingReaction(t *testing.T) {
	sl := slacktest.Start(t)
	ts, _ := startWS(t, `,"channels":{"slack":{"mode":"http","botToken":"`+slacktest.BotToken+`","signingSecret":"`+slacktest.SigningSecret+`","apiUrl":"`+sl.URL+`","dmPolicy":"open","allowFrom":["*"],"typingReaction":"hourglass_flowing_sand"}}`)
	sl.SetRequestURL(ts.url + "/channels/_/slack/default")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var evs []slacktest.Event
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var err error
		if evs, err = sl.UserSays(ctx, slacktest.Message{Text: "hello"}); err == nil && evs[0].Status == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Slack account never took an event: %+v %v", evs, err)
		}
	}
	if _, err := sl.WaitSent(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r := sl.Reactions()
		if len(r) == 2 && r[0].Name == "hourglass_flowing_sand" && !r[0].Remove && r[1].Remove && r[0].TS == evs[0].TS {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("reactions %+v, want hourglass_flowing_sand put on %s and taken off", r, evs[0].TS)
		}
	}
}

// TestPairingOverWS: channels.pairing.list shows a stranger's request
// without its code; approving it with bootstrapCommandOwner needs
// operator.admin, makes the first approved sender the command owner, and
// never a second one (spec channels.md R7.5, R7.8).
func TestPairingOverWS(t *testing.T) {
	tg := tgtest.Start(t)
	ts, url := startWS(t, `,"channels":{"telegram":{"botToken":"`+tg.Token+`","apiRoot":"`+tg.URL+`","dmPolicy":"pairing"}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dialWS(t, url)
	pairing := dialWS(t, url, protocol.ScopePairing)
	type list struct {
		Requests []struct {
			RequestID string `json:"requestId"`
			SenderID  string `json:"senderId"`
			Code      string `json:"code"`
		} `json:"requests"`
		CommandOwnerConfigured bool `json:"commandOwnerConfigured"`
	}
	request := func(sender int64) string {
		tg.UserSays(tgtest.Say{From: tgtest.User{ID: sender, FirstName: "S"}, Text: "hi"})
		for {
			l := mustCall[list](t, pairing, "channels.pairing.list", map[string]any{"channel": "telegram"})
			for _, r := range l.Requests {
				if r.Code != "" {
					t.Fatalf("the list shows a code: %+v", r)
				}
				if r.SenderID == strconv.FormatInt(sender, 10) {
					return r.RequestID
				}
			}
			if ctx.Err() != nil {
				t.Fatalf("no request of %d listed: %+v", sender, l)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	approve := map[string]any{"channel": "telegram", "accountId": "default", "requestId": request(501), "bootstrapCommandOwner": true}
	if _, err := callErr(pairing, "channels.pairing.approve", approve); err == nil || !strings.Contains(err.Error(), "missing scope: operator.admin") {
		t.Fatalf("bootstrap without operator.admin: %v", err)
	}
	type answer struct {
		SenderID              string `json:"senderId"`
		CommandOwnerBootstrap string `json:"commandOwnerBootstrap"`
	}
	if a := mustCall[answer](t, c, "channels.pairing.approve", approve); a.SenderID != "501" || a.CommandOwnerBootstrap != "configured" {
		t.Fatalf("first approval: %+v", a)
	}
	if l := mustCall[list](t, c, "channels.pairing.list", nil); !l.CommandOwnerConfigured {
		t.Error("commandOwnerConfigured is false after the bootstrap")
	}
	second := map[string]any{"channel": "telegram", "accountId": "default", "requestId": request(502), "bootstrapCommandOwner": true}
	if a := mustCall[answer](t, c, "channels.pairing.approve", second); a.CommandOwnerBootstrap != "already-configured" {
		t.Fatalf("second approval: %+v", a)
	}
	b, err := os.ReadFile(filepath.Join(ts.dir, "talon.json"))
	if err != nil || !strings.Contains(string(b), `"telegram:501"`) || strings.Contains(string(b), "502") {
		t.Errorf("config after two approvals (%v):\n%s", err, b)
	}
}

// TestChannelNewSession: /new in a chat starts the session over (R2.3):
// the next turn's history no longer holds the earlier conversation.
func TestChannelNewSession(t *testing.T) {
	tg := tgtest.Start(t)
	_, url := startWS(t, `,"session":{"dmScope":"per-channel-peer"},"channels":{"telegram":{"botToken":"`+tg.Token+`","apiRoot":"`+tg.URL+`","dmPolicy":"open","allowFrom":["*"]}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	user := tgtest.User{ID: 63, FirstName: "Noa"}
	key := "agent:main:telegram:direct:63"
	tg.UserSays(tgtest.Say{From: user, Text: "remember the launch code word"})
	waitHistory(t, url, key, "remember the launch code word")
	tg.UserSays(tgtest.Say{From: user, Text: "/new"})
	if err := tg.Wait(ctx, func() bool {
		return slices.ContainsFunc(tg.Sent(), func(m tgtest.Sent) bool { return strings.Contains(m.Text, "New session started") })
	}); err != nil {
		t.Fatalf("no answer to /new: %v (sent %+v)", err, tg.Sent())
	}
	h := mustCall[struct {
		Messages []json.RawMessage `json:"messages"`
	}](t, dialWS(t, url), "chat.history", map[string]any{"sessionKey": key})
	if len(h.Messages) != 0 {
		t.Errorf("after /new the session's history has %d messages: %s", len(h.Messages), h.Messages)
	}
}
