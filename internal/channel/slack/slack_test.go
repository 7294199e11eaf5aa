package slack

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"talon/internal/channel"
	"talon/internal/channel/slack/slacktest"
)

// rig is one App running against the fake, in one mode.
type rig struct {
	t    *testing.T
	fake *slacktest.Server
	app  *App
	// hook is the request URL in http mode.
	hook string

	mu       sync.Mutex
	got      []channel.Envelope
	changed  chan struct{}
	failNext int // accept refuses this many more envelopes
	runErr   chan error
	waits    []time.Duration
}

// start runs an App in mode against a fresh fake until the test ends.
func start(t *testing.T, mode string, edit ...func(*Options)) *rig {
	t.Helper()
	fake := slacktest.Start(t)
	return startOn(t, fake, mode, edit...)
}

func startOn(t *testing.T, fake *slacktest.Server, mode string, edit ...func(*Options)) *rig {
	t.Helper()
	o := Options{AccountID: "Work", Mode: mode, BotToken: slacktest.BotToken, AppToken: slacktest.AppToken,
		SigningSecret: slacktest.SigningSecret, APIURL: fake.URL, HTTPClient: fake.Client()}
	for _, e := range edit {
		e(&o)
	}
	app, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	r := &rig{t: t, fake: fake, app: app, changed: make(chan struct{}), runErr: make(chan error, 1)}
	// No real backoff in tests: record the wait and go on.
	app.wait = func(ctx context.Context, d time.Duration) error {
		r.mu.Lock()
		r.waits = append(r.waits, d)
		r.mu.Unlock()
		return ctx.Err()
	}
	if mode == ModeHTTP {
		srv := httptest.NewServer(app)
		t.Cleanup(srv.Close)
		r.hook = srv.URL + "/channels/_/slack/work"
		fake.SetRequestURL(r.hook)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { r.runErr <- app.Run(ctx, r.accept) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.runErr:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after its context ended")
		}
	})
	return r
}

func (r *rig) accept(ctx context.Context, e channel.Envelope) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failNext > 0 {
		r.failNext--
		return errors.New("store is down")
	}
	r.got = append(r.got, e)
	close(r.changed)
	r.changed = make(chan struct{})
	return nil
}

// waitReady waits until the App identified the bot and can take events.
func (r *rig) waitReady() {
	r.t.Helper()
	ctx := testCtx(r.t)
	if r.app.mode == ModeSocket {
		if err := r.fake.WaitConnections(ctx, 1); err != nil {
			r.t.Fatal(err)
		}
	}
	for !r.app.Status().Connected {
		select {
		case <-ctx.Done():
			r.t.Fatalf("not connected: %+v", r.app.Status())
		case <-time.After(time.Millisecond):
		}
	}
}

// envelopes waits until n envelopes were accepted and returns them.
func (r *rig) envelopes(n int) []channel.Envelope {
	r.t.Helper()
	ctx := testCtx(r.t)
	for {
		r.mu.Lock()
		got, ch := append([]channel.Envelope(nil), r.got...), r.changed
		r.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-ctx.Done():
			r.t.Fatalf("got %d envelopes, want %d", len(got), n)
		case <-ch:
		}
	}
}

// waited is every backoff or Retry-After wait so far.
func (r *rig) waited() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.waits...)
}

func (r *rig) says(m slacktest.Message) []slacktest.Event {
	r.t.Helper()
	evs, err := r.fake.UserSays(testCtx(r.t), m)
	if err != nil {
		r.t.Fatal(err)
	}
	return evs
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var modes = []string{ModeSocket, ModeHTTP}

func TestInboundMapping(t *testing.T) {
	tests := []struct {
		name  string
		m     slacktest.Message
		check func(t *testing.T, e channel.Envelope)
	}{
		{"dm", slacktest.Message{Text: "hi"}, func(t *testing.T, e channel.Envelope) {
			if e.Peer != (channel.Peer{Kind: channel.Direct, ID: "U0ALICE"}) || e.Mentioned || e.AccountID != "work" || e.TeamID != slacktest.TeamID {
				t.Errorf("envelope %+v", e)
			}
		}},
		{"mpim", slacktest.Message{Kind: "mpim", Text: "hi"}, func(t *testing.T, e channel.Envelope) {
			if e.Peer != (channel.Peer{Kind: channel.Group, ID: "G0MPIM"}) {
				t.Errorf("peer %+v", e.Peer)
			}
		}},
		{"private channel", slacktest.Message{Kind: "group", Text: "hi"}, func(t *testing.T, e channel.Envelope) {
			if e.Peer != (channel.Peer{Kind: channel.Room, ID: "G0PRIVATE"}) {
				t.Errorf("peer %+v", e.Peer)
			}
		}},
		{"channel with another user's mention", slacktest.Message{Kind: "channel", Text: "<@U0BOB> look"}, func(t *testing.T, e channel.Envelope) {
			if e.Peer != (channel.Peer{Kind: channel.Room, ID: "C0GENERAL"}) || e.Mentioned || !e.MentionsOthers {
				t.Errorf("envelope %+v", e)
			}
		}},
	}
	for _, mode := range modes {
		for _, tt := range tests {
			t.Run(mode+"/"+tt.name, func(t *testing.T) {
				r := start(t, mode)
				r.waitReady()
				evs := r.says(tt.m)
				e := r.envelopes(1)[0]
				if e.DeliveryID != evs[0].ID || e.MessageID != evs[0].TS || e.Text != tt.m.Text {
					t.Errorf("ids/text: %+v, event %+v", e, evs[0])
				}
				tt.check(t, e)
			})
		}
	}
}

// A mention in a channel comes as a message and an app_mention event: two
// deliveries, one message.
func TestMentionArrivesTwiceAsOneMessage(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			r := start(t, mode)
			r.waitReady()
			evs := r.says(slacktest.Message{Kind: "channel", Text: "status?", Mention: true})
			if len(evs) != 2 {
				t.Fatalf("fake sent %d events, want 2", len(evs))
			}
			got := r.envelopes(2)
			a, b := got[0], got[1]
			if a.DeliveryID == b.DeliveryID {
				t.Errorf("both deliveries have id %s", a.DeliveryID)
			}
			if a.MessageID != b.MessageID || a.Peer != b.Peer || a.ThreadID != b.ThreadID {
				t.Errorf("the two copies differ in the dedupe key: %+v vs %+v", a, b)
			}
			if !a.Mentioned || !b.Mentioned {
				t.Errorf("mention not detected: %v %v", a.Mentioned, b.Mentioned)
			}
		})
	}
}

// app_mention carries no channel_type: a group DM seen first through it
// is looked up, so both copies get the Group peer.
func TestAppMentionKindIsLookedUp(t *testing.T) {
	r := start(t, ModeSocket)
	r.waitReady()
	ctx := testCtx(t)
	if _, err := r.fake.UserSays(ctx, slacktest.Message{Kind: "mpim", Channel: "G0OTHER", Text: "seed"}); err != nil {
		t.Fatal(err)
	}
	r.envelopes(1)
	r.app.kinds = memo[channel.Kind]{} // forget what the message event taught
	if _, err := r.fake.Inject(ctx, map[string]any{"type": "app_mention", "channel": "G0OTHER", "user": "U0ALICE",
		"text": "<@U0BOT> hi", "ts": "1777999999.000001"}); err != nil {
		t.Fatal(err)
	}
	e := r.envelopes(2)[1]
	if e.Peer != (channel.Peer{Kind: channel.Group, ID: "G0OTHER"}) || !e.Mentioned {
		t.Errorf("envelope %+v", e)
	}
	// Without the read scopes the mention is still taken, as a channel
	// message, and the status says which scopes to add.
	r.app.kinds = memo[channel.Kind]{}
	r.fake.Fail("conversations.info", slacktest.Failure{Error: "missing_scope", Needed: "mpim:read"})
	if _, err := r.fake.Inject(ctx, map[string]any{"type": "app_mention", "channel": "G0OTHER", "user": "U0ALICE",
		"text": "<@U0BOT> again", "ts": "1777999999.000002"}); err != nil {
		t.Fatal(err)
	}
	e = r.envelopes(3)[2]
	st := r.app.Status()
	if e.Peer != (channel.Peer{Kind: channel.Room, ID: "G0OTHER"}) || len(st.Issues) != 1 || st.Issues[0].Kind != "permissions" {
		t.Errorf("envelope %+v, issues %+v", e, st.Issues)
	}
}

func TestThreads(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			r := start(t, mode)
			r.waitReady()
			r.says(slacktest.Message{Kind: "channel", Text: "help", Mention: true})
			r.envelopes(2)
			sent, err := r.app.Send(testCtx(t), channel.Outbound{Target: channel.Target{Peer: channel.Peer{Kind: channel.Room, ID: "C0GENERAL"}}, Text: "daily report"})
			if err != nil {
				t.Fatal(err)
			}
			root := slacktest.Event{TS: sent.MessageID}
			// A reply in the bot's thread addresses the bot without a mention.
			r.says(slacktest.Message{Kind: "channel", Text: "thanks", ThreadTS: root.TS})
			// A reply in a thread the bot did not start does not.
			other := r.says(slacktest.Message{Kind: "channel", User: "U0BOB", Text: "unrelated"})[0]
			r.says(slacktest.Message{Kind: "channel", Text: "me too", ThreadTS: other.TS})
			got := r.envelopes(5)
			inBot, inOther := got[2], got[4]
			if inBot.ThreadID != root.TS || !inBot.Mentioned || inBot.ReplyTo == nil || !inBot.ReplyTo.FromBot {
				t.Errorf("reply in the bot's thread: %+v", inBot)
			}
			if inOther.ThreadID != other.TS || inOther.Mentioned {
				t.Errorf("reply in another thread: %+v", inOther)
			}
			posted := r.fake.Sent()
			if len(posted) != 1 || posted[0].ThreadTS != "" || posted[0].TS != sent.MessageID {
				t.Errorf("posted %+v, sent %+v", posted, sent)
			}
			// The bot's own reply is never taken as inbound, nor an edit.
			if _, err := r.fake.Inject(testCtx(t), map[string]any{"type": "message", "channel": "C0GENERAL", "channel_type": "channel",
				"user": slacktest.BotUserID, "bot_id": slacktest.BotID, "text": "on it", "ts": sent.MessageID}); err != nil {
				t.Fatal(err)
			}
			if _, err := r.fake.UserSays(testCtx(t), slacktest.Message{Kind: "channel", Subtype: "message_changed", Text: "x"}); err != nil {
				t.Fatal(err)
			}
			last := r.says(slacktest.Message{Kind: "channel", Text: "last"})[0]
			if got := r.envelopes(6); got[5].DeliveryID != last.ID {
				t.Errorf("own message or edit was taken: %+v", got[5])
			}
			// Once the bot answered in a person's thread, a reply there
			// addresses it too (thread participation).
			if _, err := r.app.Send(testCtx(t), channel.Outbound{Target: channel.Target{Peer: channel.Peer{Kind: channel.Room, ID: "C0GENERAL"}, ThreadID: other.TS}, Text: "noted"}); err != nil {
				t.Fatal(err)
			}
			r.says(slacktest.Message{Kind: "channel", Text: "and?", ThreadTS: other.TS})
			if e := r.envelopes(7)[6]; e.ThreadID != other.TS || !e.Mentioned {
				t.Errorf("reply in a thread the bot joined: %+v", e)
			}
		})
	}
}

// A delivery Accept refused is not acknowledged, so Slack delivers it
// again, with the same event_id; it is acknowledged once stored.
func TestAckOnlyAfterAccept(t *testing.T) {
	t.Run(ModeSocket, func(t *testing.T) {
		r := start(t, ModeSocket)
		r.waitReady()
		r.mu.Lock()
		r.failNext = 1
		r.mu.Unlock()
		ev := r.says(slacktest.Message{Text: "remember this"})[0]
		ctx := testCtx(t)
		if err := r.fake.WaitDeliveries(ctx, ev.EnvelopeID, 1); err != nil {
			t.Fatal(err)
		}
		// The next envelope on the same connection is acked: the first
		// was handled (refused) before it, so it was never acked.
		ev2 := r.says(slacktest.Message{Text: "second"})[0]
		if err := r.fake.WaitAcked(ctx, ev2.EnvelopeID); err != nil {
			t.Fatal(err)
		}
		for _, id := range r.fake.Acked() {
			if id == ev.EnvelopeID {
				t.Fatal("an envelope Accept refused was acknowledged")
			}
		}
		// Slack redelivers unacknowledged envelopes on the next connection.
		r.fake.Disconnect("refresh_requested")
		if err := r.fake.WaitAcked(ctx, ev.EnvelopeID); err != nil {
			t.Fatal(err)
		}
		got := r.envelopes(2)
		if got[1].DeliveryID != ev.ID || r.fake.Deliveries(ev.EnvelopeID) != 2 {
			t.Errorf("redelivery: %+v, deliveries %d", got, r.fake.Deliveries(ev.EnvelopeID))
		}
	})
	t.Run(ModeHTTP, func(t *testing.T) {
		r := start(t, ModeHTTP)
		r.waitReady()
		r.mu.Lock()
		r.failNext = 1
		r.mu.Unlock()
		ev := r.says(slacktest.Message{Text: "remember this"})[0]
		if ev.Status != http.StatusInternalServerError {
			t.Fatalf("status %d, want 500 so Slack retries", ev.Status)
		}
		status, _, err := r.fake.Post(testCtx(t), r.hook, ev.Payload, slacktest.PostOptions{RetryNum: 1})
		if err != nil || status != http.StatusOK {
			t.Fatalf("retry: %d %v", status, err)
		}
		if got := r.envelopes(1); got[0].DeliveryID != ev.ID {
			t.Errorf("retry delivered %+v", got[0])
		}
	})
}

// A retry of a stored event reaches Accept again with the same DeliveryID:
// the hub's dedupe answers it once.
func TestRetryKeepsDeliveryID(t *testing.T) {
	r := start(t, ModeHTTP)
	r.waitReady()
	ev := r.says(slacktest.Message{Text: "once"})[0]
	for n := 1; n <= 3; n++ {
		status, _, err := r.fake.Post(testCtx(t), r.hook, ev.Payload, slacktest.PostOptions{RetryNum: n})
		if err != nil || status != http.StatusOK {
			t.Fatalf("retry %d: %d %v", n, status, err)
		}
	}
	got := r.envelopes(4)
	for _, e := range got {
		if e.DeliveryID != ev.ID || e.MessageID != got[0].MessageID {
			t.Errorf("delivery %+v, want id %s", e, ev.ID)
		}
	}
}

func TestEventsEndpoint(t *testing.T) {
	now := time.Unix(1_777_000_000, 0)
	r := start(t, ModeHTTP, func(o *Options) { o.Now = func() time.Time { return now } })
	r.waitReady()
	fixed := func() time.Time { return now }
	ev := []byte(`{"type":"event_callback","team_id":"T0TEST","event_id":"Ev9","event":{"type":"message","channel":"D0ALICE","channel_type":"im","user":"U0ALICE","text":"hi","ts":"1777000000.000001"}}`)
	tests := []struct {
		name   string
		body   string
		o      slacktest.PostOptions
		status int
		answer string
	}{
		{"bad signature", string(ev), slacktest.PostOptions{BadSignature: true}, 401, "invalid signature\n"},
		{"stale timestamp", string(ev), slacktest.PostOptions{Age: 301 * time.Second}, 401, "invalid signature\n"},
		{"url verification", `{"token":"x","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`,
			slacktest.PostOptions{}, 200, `{"challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}` + "\n"},
		{"unsigned url verification", `{"challenge":"x","type":"url_verification"}`, slacktest.PostOptions{BadSignature: true}, 401, "invalid signature\n"},
		{"malformed json", `{"type":`, slacktest.PostOptions{}, 400, "malformed payload\n"},
		{"malformed event", `{"type":"event_callback","event_id":"Ev8","event":{"type":"message","channel":"D1","channel_type":"im","user":"U1","text":"hi","ts":"yesterday"}}`,
			slacktest.PostOptions{}, 400, "malformed event\n"},
		{"other event type", `{"type":"event_callback","event_id":"Ev7","event":{"type":"reaction_added"}}`, slacktest.PostOptions{}, 200, ""},
		{"slash command", "command=%2Ftalon&text=hi", slacktest.PostOptions{ContentType: "application/x-www-form-urlencoded"}, 200,
			"Talon does not handle Slack slash commands yet."},
		{"unsigned button press", "payload=" + url.QueryEscape(`{"type":"block_actions","user":{"id":"U0ALICE"},"channel":{"id":"D0ALICE"},"message":{"ts":"1777000000.000001"},"actions":[{"type":"button","value":"/approve x deny","action_ts":"1777000001.000001"}]}`),
			slacktest.PostOptions{BadSignature: true, ContentType: "application/x-www-form-urlencoded"}, 401, "invalid signature\n"},
		{"event", string(ev), slacktest.PostOptions{}, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.Now = fixed
			status, body, err := r.fake.Post(testCtx(t), r.hook, []byte(tt.body), tt.o)
			if err != nil {
				t.Fatal(err)
			}
			if status != tt.status || body != tt.answer {
				t.Errorf("answer %d %q, want %d %q", status, body, tt.status, tt.answer)
			}
		})
	}
	if got := r.envelopes(1); len(got) != 1 || got[0].DeliveryID != "Ev9" {
		t.Errorf("accepted %+v, want only Ev9", got)
	}
}

func TestEventsEndpointRefusesBeforeRunAndOtherMethods(t *testing.T) {
	fake := slacktest.Start(t)
	app, err := New(Options{Mode: ModeHTTP, BotToken: slacktest.BotToken, SigningSecret: slacktest.SigningSecret, APIURL: fake.URL, HTTPClient: fake.Client()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app)
	t.Cleanup(srv.Close)
	status, _, err := fake.Post(testCtx(t), srv.URL, []byte(`{"type":"event_callback","event_id":"Ev1","event":{"type":"message"}}`), slacktest.PostOptions{})
	if err != nil || status != http.StatusServiceUnavailable {
		t.Errorf("before Run: %d %v, want 503", status, err)
	}
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d, want 405", resp.StatusCode)
	}
	big := strings.Repeat("x", maxBody+1)
	status, _, err = fake.Post(testCtx(t), srv.URL, []byte(big), slacktest.PostOptions{})
	if err != nil || status != http.StatusRequestEntityTooLarge {
		t.Errorf("huge body: %d %v, want 413", status, err)
	}
}

func TestSend(t *testing.T) {
	to := channel.Target{Peer: channel.Peer{Kind: channel.Direct, ID: "U0ALICE"}}
	tests := []struct {
		name    string
		fail    []slacktest.Failure
		posted  int // messages the fake recorded
		waits   []time.Duration
		wantErr string
		check   func(t *testing.T, err error)
	}{
		{name: "ok", posted: 1},
		{name: "channel not found", fail: []slacktest.Failure{{Error: "channel_not_found"}},
			wantErr: "slack send: slack chat.postMessage: channel_not_found (the conversation does not exist or the bot cannot see it)",
			check: func(t *testing.T, err error) {
				var ae *APIError
				if !errors.As(err, &ae) || ae.Code != "channel_not_found" {
					t.Errorf("error %v is not an APIError", err)
				}
			}},
		{name: "rate limited then posted", fail: []slacktest.Failure{{Status: 429, RetryAfter: 7}}, posted: 1, waits: []time.Duration{7 * time.Second}},
		{name: "rate limited three times", fail: []slacktest.Failure{{Status: 429, RetryAfter: 1}, {Status: 429, RetryAfter: 2}, {Status: 429, RetryAfter: 3}},
			waits: []time.Duration{time.Second, 2 * time.Second}, wantErr: "rate limited, retry after 3s"},
		{name: "retry-after too long", fail: []slacktest.Failure{{Status: 429, RetryAfter: 120}}, wantErr: "rate limited, retry after 2m0s"},
		{name: "lost response is not resent", fail: []slacktest.Failure{{DropResponse: true}}, posted: 1, wantErr: "unconfirmed, not resent",
			check: func(t *testing.T, err error) {
				var ue *UnconfirmedError
				if !errors.As(err, &ue) {
					t.Errorf("error %v is not an UnconfirmedError", err)
				}
			}},
		{name: "server error is not resent", fail: []slacktest.Failure{{Status: 502}}, wantErr: "unconfirmed, not resent: HTTP 502"},
		{name: "revoked token", fail: []slacktest.Failure{{Error: "token_revoked"}}, wantErr: "token_revoked",
			check: func(t *testing.T, err error) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := start(t, ModeSocket)
			r.waitReady()
			r.says(slacktest.Message{Text: "hi"})
			r.envelopes(1)
			r.mu.Lock()
			r.waits = nil
			r.mu.Unlock()
			for _, f := range tt.fail {
				r.fake.Fail("chat.postMessage", f)
			}
			sent, err := r.app.Send(testCtx(t), channel.Outbound{Target: to, Text: "*done*", Key: "run1:0"})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Send: %v", err)
				}
				if sent.MessageID == "" || r.app.Status().LastOutboundAt.IsZero() {
					t.Errorf("sent %+v, status %+v", sent, r.app.Status())
				}
			} else if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Send error = %v, want %q", err, tt.wantErr)
			}
			if tt.check != nil {
				tt.check(t, err)
			}
			if posted := r.fake.Sent(); len(posted) != tt.posted {
				t.Errorf("fake recorded %d posts, want %d: %+v", len(posted), tt.posted, posted)
			} else if tt.posted == 1 {
				p := posted[0]
				if p.Channel != "U0ALICE" || p.Text != "*done*" || p.UnfurlLinks == nil || *p.UnfurlLinks || p.UnfurlMedia == nil || *p.UnfurlMedia {
					t.Errorf("posted %+v", p)
				}
			}
			waits := r.waited()
			if len(waits) != len(tt.waits) || (len(waits) > 0 && waits[len(waits)-1] != tt.waits[len(tt.waits)-1]) {
				t.Errorf("waited %v, want %v", waits, tt.waits)
			}
		})
	}
}

func TestPermanentAuthErrorStops(t *testing.T) {
	tests := []struct {
		name    string
		mode    string
		prep    func(*slacktest.Server)
		edit    func(*Options)
		wantErr string
		fix     string
	}{
		{"revoked bot token", ModeSocket, func(s *slacktest.Server) { s.Revoke(slacktest.BotToken) }, nil, "token_revoked", "botToken"},
		{"revoked bot token http", ModeHTTP, func(s *slacktest.Server) { s.Revoke(slacktest.BotToken) }, nil, "token_revoked", "botToken"},
		{"wrong bot token", ModeSocket, nil, func(o *Options) { o.BotToken = "xoxb-wrong" }, "invalid_auth", "botToken"},
		{"missing scope", ModeSocket, func(s *slacktest.Server) {
			s.Fail("auth.test", slacktest.Failure{Error: "missing_scope", Needed: "users:read"})
		}, nil,
			"missing_scope", "Add the scope users:read"},
		{"wrong app token", ModeSocket, nil, func(o *Options) { o.AppToken = "xapp-wrong" }, "invalid_auth", "connections:write"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := slacktest.Start(t)
			if tt.prep != nil {
				tt.prep(fake)
			}
			edits := []func(*Options){}
			if tt.edit != nil {
				edits = append(edits, tt.edit)
			}
			r := startOn(t, fake, tt.mode, edits...)
			var err error
			select {
			case err = <-r.runErr:
				r.runErr <- err // for the cleanup
			case <-testCtx(t).Done():
				t.Fatal("Run kept retrying a permanent error")
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Run = %v, want %q", err, tt.wantErr)
			}
			st := r.app.Status()
			if st.Connected || len(st.Issues) != 1 || st.Issues[0].Kind != "auth" || !strings.Contains(st.Issues[0].Fix, tt.fix) {
				t.Errorf("status %+v", st)
			}
			for _, s := range []string{err.Error(), st.LastError, st.Issues[0].Message, st.Issues[0].Fix} {
				if strings.Contains(s, slacktest.BotToken) || strings.Contains(s, slacktest.AppToken) || strings.Contains(s, "wrong") {
					t.Errorf("a token leaked into %q", s)
				}
			}
			if w := r.waited(); len(w) != 0 {
				t.Errorf("backed off %v before giving up", w)
			}
		})
	}
}

func TestTransientAuthFailureRetries(t *testing.T) {
	fake := slacktest.Start(t)
	fake.Fail("auth.test", slacktest.Failure{Status: 503})
	fake.Fail("apps.connections.open", slacktest.Failure{Error: "internal_error"})
	fake.Fail("apps.connections.open", slacktest.Failure{Status: 429, RetryAfter: 9})
	r := startOn(t, fake, ModeSocket)
	r.waitReady()
	waits := r.waited()
	want := []time.Duration{2 * time.Second, 2 * time.Second, 9 * time.Second}
	if len(waits) != len(want) || waits[0] != want[0] || waits[1] != want[1] || waits[2] != want[2] {
		t.Errorf("waits %v, want %v: the backoff after auth.test and apps.connections.open, then Retry-After", waits, want)
	}
	if st := r.app.Status(); st.BotID != slacktest.BotUserID || st.BotName != slacktest.BotName || st.ReconnectAttempts != 0 || st.Mode != "socket" {
		t.Errorf("status %+v", st)
	}
}

func TestSocketReconnects(t *testing.T) {
	t.Run("after disconnect, at once", func(t *testing.T) {
		r := start(t, ModeSocket)
		r.waitReady()
		r.fake.Disconnect("refresh_requested")
		if err := r.fake.WaitConnections(testCtx(t), 2); err != nil {
			t.Fatal(err)
		}
		r.says(slacktest.Message{Text: "still there?"})
		r.envelopes(1)
		if w := r.waited(); len(w) != 0 {
			t.Errorf("waited %v before a requested reconnect", w)
		}
	})
	t.Run("after a lost connection, with backoff", func(t *testing.T) {
		r := start(t, ModeSocket)
		r.waitReady()
		r.fake.Drop()
		if err := r.fake.WaitConnections(testCtx(t), 2); err != nil {
			t.Fatal(err)
		}
		r.says(slacktest.Message{Text: "back"})
		r.envelopes(1)
		if w := r.waited(); len(w) != 1 || w[0] != 2*time.Second {
			t.Errorf("waits %v, want one 2s backoff", w)
		}
	})
	t.Run("after a failed reconnect, with backoff", func(t *testing.T) {
		r := start(t, ModeSocket)
		r.waitReady()
		r.fake.Fail("apps.connections.open", slacktest.Failure{Status: 500})
		r.fake.Disconnect("warning")
		r.says(slacktest.Message{Text: "after the gap"})
		r.envelopes(1)
		if w := r.waited(); len(w) != 1 || w[0] != 2*time.Second {
			t.Errorf("waits %v, want one 2s backoff", w)
		}
	})
	t.Run("after a pong timeout", func(t *testing.T) {
		fake := slacktest.Start(t)
		fake.SilenceNext()
		r := startOnQuickPing(t, fake)
		if err := fake.WaitConnections(testCtx(t), 2); err != nil {
			t.Fatal(err)
		}
		// The event goes to the new connection: the silent one was given up.
		r.says(slacktest.Message{Text: "after the silence"})
		r.envelopes(1)
	})
	t.Run("link disabled stops", func(t *testing.T) {
		r := start(t, ModeSocket)
		r.waitReady()
		r.fake.Disconnect("link_disabled")
		select {
		case err := <-r.runErr:
			r.runErr <- err
			if err == nil || !strings.Contains(err.Error(), "link_disabled") {
				t.Errorf("Run = %v", err)
			}
		case <-testCtx(t).Done():
			t.Fatal("Run did not stop")
		}
	})
}

// startOnQuickPing starts an App whose keep-alive pings every few
// milliseconds, so a silent connection is noticed without a long wait.
func startOnQuickPing(t *testing.T, fake *slacktest.Server) *rig {
	t.Helper()
	o := Options{Mode: ModeSocket, BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, APIURL: fake.URL, HTTPClient: fake.Client()}
	app, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	app.pingInterval, app.pongTimeout = 5*time.Millisecond, 50*time.Millisecond
	app.wait = func(ctx context.Context, d time.Duration) error { return ctx.Err() }
	r := &rig{t: t, fake: fake, app: app, changed: make(chan struct{}), runErr: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { r.runErr <- app.Run(ctx, r.accept) }()
	t.Cleanup(func() { cancel(); <-r.runErr })
	return r
}

func TestHelloWarnsAboutSeveralConnections(t *testing.T) {
	fake := slacktest.Start(t)
	fake.SetNumConnections(2)
	r := startOn(t, fake, ModeSocket)
	r.waitReady()
	st := r.app.Status()
	if len(st.Issues) != 1 || st.Issues[0].Kind != "runtime" || !strings.Contains(st.Issues[0].Message, "2 Socket Mode connections") {
		t.Errorf("issues %+v", st.Issues)
	}
	fake.SetNumConnections(0)
	fake.Disconnect("refresh_requested")
	if err := fake.WaitConnections(testCtx(t), 2); err != nil {
		t.Fatal(err)
	}
	r.says(slacktest.Message{Text: "x"})
	r.envelopes(1)
	if st := r.app.Status(); len(st.Issues) != 0 {
		t.Errorf("issue kept after a single connection: %+v", st.Issues)
	}
}

func TestTypingShowsNothing(t *testing.T) {
	r := start(t, ModeSocket)
	r.waitReady()
	if err := r.app.Typing(testCtx(t), channel.Target{Peer: channel.Peer{Kind: channel.Direct, ID: "U0ALICE"}}); err != nil {
		t.Fatal(err)
	}
	if len(r.fake.Sent()) != 0 {
		t.Error("Typing posted something")
	}
}

// recorder is a RoundTripper that notes every URL it carries.
type recorder struct {
	mu   sync.Mutex
	urls []string
	next http.RoundTripper
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.urls = append(r.urls, req.URL.Scheme+"://"+req.URL.Host+req.URL.Path)
	r.mu.Unlock()
	return r.next.RoundTrip(req)
}

// Every connection, the Socket Mode WebSocket included, goes through the
// caller's client: that is what confines a tenant's apiUrl (and the URL
// Slack's answer names) to the addresses the gateway allows.
func TestEveryConnectionUsesTheGivenClient(t *testing.T) {
	fake := slacktest.Start(t)
	rec := &recorder{next: fake.Client().Transport}
	r := startOn(t, fake, ModeSocket, func(o *Options) { o.HTTPClient = &http.Client{Transport: rec} })
	r.waitReady()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	want := []string{"/api/auth.test", "/api/apps.connections.open", "/link/"}
	if len(rec.urls) != len(want) {
		t.Fatalf("client carried %v, want %v", rec.urls, want)
	}
	for i, w := range want {
		if !strings.HasSuffix(rec.urls[i], w) {
			t.Errorf("request %d = %s, want …%s", i, rec.urls[i], w)
		}
	}
}
