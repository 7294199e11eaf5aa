package telegram

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"talon/internal/channel"
	"talon/internal/channel/telegram/tgtest"
)

const testSecret = "s3cret-for_tests"

// webhookBot runs b in webhook mode behind a TLS loopback server the
// fake posts to, as the gateway would mount it.
func webhookBot(t *testing.T, s *tgtest.Server, accept channel.Accept) (*Bot, *httptest.Server) {
	t.Helper()
	mux := http.NewServeMux()
	ts := httptest.NewTLSServer(mux)
	t.Cleanup(ts.Close)
	b := newBot(t, s, func(o *Options) { o.Webhook = &Webhook{URL: ts.URL + "/channels/_/telegram/main", Secret: testSecret} })
	mux.Handle("/channels/_/telegram/main", b)
	s.SetWebhookClient(ts.Client())
	run(t, b, accept)
	ctx := testCtx(t)
	waitStatus(ctx, t, b, func(st channel.Status) bool { return st.Connected })
	return b, ts
}

func TestWebhookDelivers(t *testing.T) {
	s := tgtest.Start(t)
	in := newInbox()
	in.fail = 1
	b, _ := webhookBot(t, s, in.accept)
	if s.Webhook() == "" {
		t.Fatal("setWebhook was not called")
	}
	_, id := s.UserSays(tgtest.Say{From: ann, Chat: -1001, Text: "hello @talon_test_bot"})
	s.UserSays(tgtest.Say{From: ann, Text: "second"})
	got := in.wait(testCtx(t), t, 2)
	if got[0].DeliveryID != itoa(id) || !got[0].Mentioned || got[1].Text != "second" {
		t.Fatalf("envelopes = %+v", got)
	}
	// The refused first delivery was answered 500 and delivered again.
	ctx := testCtx(t)
	if err := s.Wait(ctx, func() bool { return len(s.Deliveries()) >= 3 }); err != nil {
		t.Fatal(err)
	}
	if d := s.Deliveries(); d[0] != 500 || d[1] != 200 || d[2] != 200 {
		t.Fatalf("webhook answers = %v, want 500 then 200s", d)
	}
	if st := b.Status(); st.Mode != "webhook" || !st.Connected || st.LastInboundAt.IsZero() {
		t.Fatalf("status = %+v", st)
	}
}

func TestWebhookRefuses(t *testing.T) {
	s := tgtest.Start(t)
	in := newInbox()
	_, ts := webhookBot(t, s, in.accept)
	url := ts.URL + "/channels/_/telegram/main"
	good := `{"update_id":5,"message":{"message_id":1,"from":{"id":42,"is_bot":false,"first_name":"A"},"chat":{"id":42,"type":"private"},"date":1700000000,"text":"hi"}}`
	tests := []struct {
		name   string
		method string
		secret string
		body   string
		code   int
	}{
		{"GET", http.MethodGet, testSecret, "", 405},
		{"no secret", http.MethodPost, "", good, 401},
		{"wrong secret", http.MethodPost, testSecret + "x", good, 401},
		{"secret prefix", http.MethodPost, testSecret[:4], good, 401},
		{"body over 1 MiB", http.MethodPost, testSecret, `{"update_id":6,"x":"` + strings.Repeat("a", 1<<20) + `"}`, 413},
		{"not JSON", http.MethodPost, testSecret, "update_id=5", 400},
		{"no update id", http.MethodPost, testSecret, `{"message":{}}`, 400},
		{"wrong types", http.MethodPost, testSecret, `{"update_id":"5"}`, 400},
		{"an update it cannot read is dropped", http.MethodPost, testSecret, `{"update_id":8,"message":{"text":5}}`, 200},
		{"an update", http.MethodPost, testSecret, good, 200},
		{"an update ignored", http.MethodPost, testSecret, `{"update_id":7,"my_chat_member":{}}`, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(context.Background(), tt.method, url, bytes.NewReader([]byte(tt.body)))
			if tt.secret != "" {
				req.Header.Set("X-Telegram-Bot-Api-Secret-Token", tt.secret)
			}
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.code {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.code)
			}
		})
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.got) != 1 || in.got[0].DeliveryID != "5" {
		t.Fatalf("accepted %+v, want only update 5", in.got)
	}
}

func TestWebhookBeforeRun(t *testing.T) {
	s := tgtest.Start(t)
	b := newBot(t, s, func(o *Options) { o.Webhook = &Webhook{URL: "https://x.test/hook", Secret: testSecret} })
	req := httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader(`{"update_id":1}`))
	req.Header.Set("X-Telegram-Bot-Api-Secret-Token", testSecret)
	w := httptest.NewRecorder()
	b.ServeHTTP(w, req)
	if w.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d before Run, want 503 so Telegram retries", w.Code)
	}
}

func TestPollingBotIsNoWebhook(t *testing.T) {
	s := tgtest.Start(t)
	b := newBot(t, s, nil)
	req := httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader(`{"update_id":1}`))
	w := httptest.NewRecorder()
	b.ServeHTTP(w, req)
	if w.Code != http.StatusNotFound {
		t.Fatalf("status %d, want 404", w.Code)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestSetWebhookRefused(t *testing.T) {
	tests := []struct {
		name    string
		failure tgtest.Failure
		issue   bool // a config issue and Run ends
	}{
		{"bad url", tgtest.Failure{Code: 400, Description: "Bad Request: bad webhook: Webhook can be set up only on ports 80, 88, 443 or 8443"}, true},
		{"transient", tgtest.Failure{Code: 502, Description: "Bad Gateway"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tgtest.Start(t)
			s.Fail("setWebhook", tt.failure)
			b := newBot(t, s, func(o *Options) { o.Webhook = &Webhook{URL: "https://x.test:9999/hook", Secret: testSecret} })
			if tt.issue {
				err := b.Run(testCtx(t), newInbox().accept)
				st := b.Status()
				if err == nil || len(st.Issues) != 1 || st.Issues[0].Kind != "config" || !strings.Contains(st.Issues[0].Message, "ports") {
					t.Fatalf("Run = %v, issues %+v", err, st.Issues)
				}
				return
			}
			run(t, b, newInbox().accept)
			st := waitStatus(testCtx(t), t, b, func(st channel.Status) bool { return st.Connected })
			if st.ReconnectAttempts != 1 || s.Webhook() == "" {
				t.Fatalf("status = %+v, webhook %q", st, s.Webhook())
			}
		})
	}
}

func TestWebhookPress(t *testing.T) {
	s := tgtest.Start(t)
	in := &pressInbox{inbox: newInbox(), s: s}
	in.fail = 1
	b, _ := webhookBot(t, s, in.accept)
	ctx := testCtx(t)
	o := out("-1001", "run ls?", "run ls?")
	o.Buttons = approve
	sent, err := b.Send(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	id, _, err := s.UserPresses(tgtest.Press{From: ann, Chat: -1001, MessageID: mustID(t, sent.MessageID), Data: approve[0].Data})
	if err != nil {
		t.Fatal(err)
	}
	got := in.wait(ctx, t, 1)
	answers, err := s.WaitAnswers(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !got[0].Pressed || got[0].Text != approve[0].Data || len(answers) != 1 || answers[0].ID != id {
		t.Fatalf("envelopes %+v, answers %+v", got, answers)
	}
	// Refused once (500, not answered), then stored and answered.
	if err := s.Wait(ctx, func() bool { return len(s.Deliveries()) >= 2 }); err != nil {
		t.Fatal(err)
	}
	if d := s.Deliveries(); d[0] != 500 || d[1] != 200 {
		t.Fatalf("webhook answers = %v", d)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.answered) != 2 || in.answered[1] != 0 {
		t.Fatalf("answers seen at each accept = %v", in.answered)
	}
}
