package telegram

import (
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"talon/internal/channel"
	"talon/internal/channel/telegram/tgtest"
)

func out(peer, text, plain string) channel.Outbound {
	return channel.Outbound{Target: channel.Target{Peer: channel.Peer{Kind: channel.Group, ID: peer}}, Text: text, Plain: plain, Key: "run1/0"}
}

func TestSend(t *testing.T) {
	tests := []struct {
		name     string
		setup    func(s *tgtest.Server, o *Options) // before the send
		msg      func(s *tgtest.Server) channel.Outbound
		want     []tgtest.Sent // what the fake recorded (MessageID ignored)
		waits    []time.Duration
		errIs    error
		errMatch string
	}{
		{
			name: "html",
			msg:  func(*tgtest.Server) channel.Outbound { return out("42", "<b>hi</b> &amp; bye", "hi & bye") },
			want: []tgtest.Sent{{ChatID: "42", Text: "<b>hi</b> &amp; bye", ParseMode: "HTML"}},
		},
		{
			name: "html Telegram cannot parse goes out as plain text",
			msg:  func(*tgtest.Server) channel.Outbound { return out("42", "<b>unclosed", "unclosed") },
			want: []tgtest.Sent{{ChatID: "42", Text: "unclosed"}},
		},
		{
			name: "a topic carries its thread",
			msg:  func(*tgtest.Server) channel.Outbound { return out("-1001:topic:17", "x", "x") },
			want: []tgtest.Sent{{ChatID: "-1001", ThreadID: 17, Text: "x", ParseMode: "HTML"}},
		},
		{
			name: "the General topic omits message_thread_id",
			msg:  func(*tgtest.Server) channel.Outbound { return out("-1001:topic:1", "x", "x") },
			want: []tgtest.Sent{{ChatID: "-1001", Text: "x", ParseMode: "HTML"}},
		},
		{
			name: "reply to a message",
			msg: func(s *tgtest.Server) channel.Outbound {
				m, _ := s.UserSays(tgtest.Say{From: ann, Text: "q"})
				o := out("42", "a", "a")
				o.ReplyTo = strconv.FormatInt(m.MessageID, 10)
				return o
			},
			want: []tgtest.Sent{{ChatID: "42", Text: "a", ParseMode: "HTML", ReplyTo: 1001}},
		},
		{
			name: "reply to a vanished message is sent without the reply",
			msg: func(*tgtest.Server) channel.Outbound {
				o := out("42", "a", "a")
				o.ReplyTo = "777"
				return o
			},
			want: []tgtest.Sent{{ChatID: "42", Text: "a", ParseMode: "HTML"}},
		},
		{
			name:  "link previews off",
			setup: func(_ *tgtest.Server, o *Options) { o.LinkPreview = false },
			msg:   func(*tgtest.Server) channel.Outbound { return out("@my_channel", "https://x.test", "https://x.test") },
			want:  []tgtest.Sent{{ChatID: "@my_channel", Text: "https://x.test", ParseMode: "HTML", NoLinkPreview: true}},
		},
		{
			name: "429 waits retry_after and sends once",
			setup: func(s *tgtest.Server, _ *Options) {
				s.FailSends(tgtest.Failure{Code: 429, Description: "Too Many Requests: retry after 2", RetryAfter: 2})
			},
			msg:   func(*tgtest.Server) channel.Outbound { return out("42", "x", "x") },
			want:  []tgtest.Sent{{ChatID: "42", Text: "x", ParseMode: "HTML"}},
			waits: []time.Duration{2 * time.Second},
		},
		{
			name: "429 longer than a send may wait is an error",
			setup: func(s *tgtest.Server, _ *Options) {
				s.FailSends(tgtest.Failure{Code: 429, Description: "Too Many Requests: retry after 600", RetryAfter: 600})
			},
			msg:      func(*tgtest.Server) channel.Outbound { return out("42", "x", "x") },
			errMatch: "429 Too Many Requests",
		},
		{
			name: "a server error is not retried",
			setup: func(s *tgtest.Server, _ *Options) {
				s.FailSends(tgtest.Failure{Code: 500, Description: "Internal Server Error"})
			},
			msg:      func(*tgtest.Server) channel.Outbound { return out("42", "x", "x") },
			errMatch: "500 Internal Server Error",
		},
		{
			name:  "a lost answer is unconfirmed and not sent again",
			setup: func(s *tgtest.Server, _ *Options) { s.FailSends(tgtest.Failure{Drop: true}) },
			msg:   func(*tgtest.Server) channel.Outbound { return out("42", "x", "x") },
			want:  []tgtest.Sent{{ChatID: "42", Text: "x", ParseMode: "HTML"}},
			errIs: ErrUnconfirmed,
		},
		{
			name:     "a target that is no chat",
			msg:      func(*tgtest.Server) channel.Outbound { return out("not-a-chat", "x", "x") },
			errMatch: "is not a chat id",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tgtest.Start(t)
			b := newBot(t, s, func(o *Options) {
				if tt.setup != nil {
					tt.setup(s, o)
				}
			})
			waits := recordWaits(b)
			sent, err := b.Send(testCtx(t), tt.msg(s))
			switch {
			case tt.errIs != nil || tt.errMatch != "":
				if err == nil || tt.errIs != nil && !errors.Is(err, tt.errIs) || !strings.Contains(err.Error(), tt.errMatch) {
					t.Fatalf("Send = %v, want %v %q", err, tt.errIs, tt.errMatch)
				}
			case err != nil:
				t.Fatalf("Send: %v", err)
			default:
				got := s.Sent()
				if len(got) == 0 || sent.MessageID != strconv.FormatInt(got[len(got)-1].MessageID, 10) {
					t.Fatalf("Send returned %q; the fake has %+v", sent.MessageID, got)
				}
			}
			got := s.Sent()
			for i := range got {
				got[i].MessageID = 0
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("sent (-want +got):\n%s", diff)
			}
			if w := waits(); len(w) != len(tt.waits) || len(w) > 0 && w[0] != tt.waits[0] {
				t.Fatalf("waits = %v, want %v", w, tt.waits)
			}
		})
	}
}

func TestSendReportsMigration(t *testing.T) {
	s := tgtest.Start(t)
	b := newBot(t, s, nil)
	s.FailSends(tgtest.Failure{Code: 400, Description: "Bad Request: group chat was upgraded to a supergroup chat", MigrateToChatID: -1005})
	if _, err := b.Send(testCtx(t), out("-77", "x", "x")); err == nil {
		t.Fatal("send to an upgraded group succeeded")
	}
	st := b.Status()
	if len(st.Issues) != 1 || !strings.Contains(st.Issues[0].Fix, "-1005") {
		t.Fatalf("issues = %+v", st.Issues)
	}
}

func TestSendRetriesWhatNeverLeft(t *testing.T) {
	// A port nothing listens on: every attempt is refused before a byte
	// is written, so retrying is safe — and bounded.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	root := "http://" + l.Addr().String()
	l.Close()
	b, err := New(Options{Token: "123456:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", APIRoot: root, HTTPClient: &http.Client{}})
	if err != nil {
		t.Fatal(err)
	}
	b.timing = testTiming
	waits := recordWaits(b)
	_, err = b.Send(testCtx(t), out("42", "x", "x"))
	if err == nil || errors.Is(err, ErrUnconfirmed) || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("Send = %v, want a refused connection, not unconfirmed", err)
	}
	if strings.Contains(err.Error(), "AAAAAAAAAA") {
		t.Fatalf("the token leaked: %v", err)
	}
	if n := len(waits()); n != 4 {
		t.Fatalf("%d retries, want 4", n)
	}
}

func TestTyping(t *testing.T) {
	tests := []struct {
		peer string
		want tgtest.Action
	}{
		{"42", tgtest.Action{ChatID: "42", Action: "typing"}},
		{"-1001:topic:1", tgtest.Action{ChatID: "-1001", ThreadID: 1, Action: "typing"}},
		{"-1001:topic:9", tgtest.Action{ChatID: "-1001", ThreadID: 9, Action: "typing"}},
	}
	s := tgtest.Start(t)
	b := newBot(t, s, nil)
	for i, tt := range tests {
		t.Run(tt.peer, func(t *testing.T) {
			if err := b.Typing(testCtx(t), channel.Target{Peer: channel.Peer{Kind: channel.Group, ID: tt.peer}}); err != nil {
				t.Fatal(err)
			}
			if got := s.Actions(); len(got) != i+1 || got[i] != tt.want {
				t.Fatalf("actions = %+v, want %+v last", got, tt.want)
			}
		})
	}
}
