package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"talon/internal/channel"
	"talon/internal/config"
	"talon/internal/store"
)

// These tests kill a real process with SIGKILL: the test binary runs
// again as a child (TestMain) with a hub on the test's database file,
// whose platform and model are HTTP endpoints of the parent, so what the
// child sent survives it. The parent kills it at a chosen point, starts a
// new child on the same file and checks that each chunk reached the
// platform once.

const childEnv = "TALON_HUB_KILL_CHILD"

func TestMain(m *testing.M) {
	if url := os.Getenv(childEnv); url != "" {
		childMain(url, os.Getenv(childEnv+"_DB"))
		return
	}
	os.Exit(m.Run())
}

// childMain runs a hub until it is killed.
func childMain(url, path string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	db, err := store.Open(path)
	if err != nil {
		fail(err)
	}
	c := &http.Client{}
	h := New(Options{Tenant: "kill", Store: db, Log: slog.New(slog.DiscardHandler), Turns: httpTurns{url, c},
		Transports: func(Account) (channel.Transport, error) { return &httpTransport{url, c}, nil }})
	h.settled = func(_ Account, id int64, s store.InboxState) {
		post(c, url+"/settled", map[string]any{"id": id, "state": s}, nil)
	}
	f, err := config.Parse("child.json5", []byte(`{channels: {telegram: {botToken: "t", dmPolicy: "open", allowFrom: ["*"], textChunkLimit: 100}}}`))
	if err != nil {
		fail(err)
	}
	if err := h.Apply(f.Config); err != nil {
		fail(err)
	}
	select {} // until SIGKILL
}

func post(c *http.Client, url string, in, out any) error {
	body, _ := json.Marshal(in)
	res, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		return fmt.Errorf("%s: %s", url, res.Status)
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(res.Body).Decode(out)
}

// httpTransport polls the parent for inbound messages and posts sends to it.
type httpTransport struct {
	url string
	c   *http.Client
}

func (t *httpTransport) Run(ctx context.Context, accept channel.Accept) error {
	next := 0
	for ctx.Err() == nil {
		var batch []channel.Envelope
		if err := post(t.c, t.url+"/updates", next, &batch); err != nil {
			return err
		}
		for _, e := range batch {
			if err := accept(ctx, e); err != nil {
				return err
			}
			next++ // acknowledged by the next poll
		}
	}
	return nil
}

func (t *httpTransport) Send(ctx context.Context, m channel.Outbound) (channel.Sent, error) {
	var s channel.Sent
	err := post(t.c, t.url+"/send", m, &s)
	return s, err
}

func (t *httpTransport) Typing(context.Context, channel.Target) error { return nil }
func (t *httpTransport) Status() channel.Status                       { return channel.Status{} }

type httpTurns struct {
	url string
	c   *http.Client
}

func (t httpTurns) Turn(ctx context.Context, r TurnRequest) (TurnResult, error) {
	var out TurnResult
	err := post(t.c, t.url+"/turn", r, &out)
	return out, err
}

// world is the parent's side: the platform and the model.
type world struct {
	mu      sync.Mutex
	inbound []channel.Envelope
	newIn   *sync.Cond
	sends   []channel.Outbound
	turns   []TurnRequest
	settled chan store.InboxState
	// hang is called on each send and turn; when it returns a channel,
	// the request is held open (the child dies with it in flight) after
	// the channel is closed to say so.
	hangSend func(m channel.Outbound) chan struct{}
	hangTurn func(r TurnRequest) chan struct{}
	answer   string
}

func newWorld(t *testing.T) (*world, string) {
	w := &world{settled: make(chan store.InboxState, 10)}
	w.newIn = sync.NewCond(&w.mu)
	mux := http.NewServeMux()
	mux.HandleFunc("/updates", func(rw http.ResponseWriter, r *http.Request) {
		var next int
		json.NewDecoder(r.Body).Decode(&next)
		w.mu.Lock()
		for len(w.inbound) <= next && r.Context().Err() == nil {
			w.newIn.Wait()
		}
		batch := slices.Clone(w.inbound[min(next, len(w.inbound)):])
		w.mu.Unlock()
		json.NewEncoder(rw).Encode(batch)
	})
	mux.HandleFunc("/send", func(rw http.ResponseWriter, r *http.Request) {
		var m channel.Outbound
		json.NewDecoder(r.Body).Decode(&m)
		w.mu.Lock()
		w.sends = append(w.sends, m)
		id := strconv.Itoa(len(w.sends))
		var hang chan struct{}
		if w.hangSend != nil {
			hang = w.hangSend(m)
		}
		w.mu.Unlock()
		if hang != nil {
			close(hang)
			<-r.Context().Done()
			return
		}
		json.NewEncoder(rw).Encode(channel.Sent{MessageID: id})
	})
	mux.HandleFunc("/turn", func(rw http.ResponseWriter, r *http.Request) {
		var q TurnRequest
		json.NewDecoder(r.Body).Decode(&q)
		w.mu.Lock()
		w.turns = append(w.turns, q)
		var hang chan struct{}
		if w.hangTurn != nil {
			hang = w.hangTurn(q)
		}
		answer := w.answer
		w.mu.Unlock()
		if hang != nil {
			close(hang)
			<-r.Context().Done()
			return
		}
		json.NewEncoder(rw).Encode(TurnResult{Text: answer})
	})
	mux.HandleFunc("/settled", func(rw http.ResponseWriter, r *http.Request) {
		var s struct{ State store.InboxState }
		json.NewDecoder(r.Body).Decode(&s)
		w.settled <- s.State
		io.WriteString(rw, "{}")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		w.mu.Lock()
		w.inbound = append(w.inbound, make([]channel.Envelope, 1000)...) // release pollers
		w.newIn.Broadcast()
		w.mu.Unlock()
		srv.CloseClientConnections()
		srv.Close()
	})
	return w, srv.URL
}

func (w *world) say(e channel.Envelope) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e.Channel, e.AccountID = "telegram", "default"
	w.inbound = append(w.inbound, e)
	w.newIn.Broadcast()
}

// child starts the test binary as a hub process.
func child(t *testing.T, url, path string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+url, childEnv+"_DB="+path)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

func kill9(t *testing.T, cmd *exec.Cmd) {
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
}

func TestKillNine(t *testing.T) {
	tests := []struct {
		name      string
		hangTurn  func(r TurnRequest) bool
		hangSend  func(m channel.Outbound) bool
		wantTurns int
		wantSends []string
	}{
		{"during the turn", func(r TurnRequest) bool { return r.Attempt == 1 }, nil,
			2, []string{para("a"), para("b"), para("c")}},
		{"during the second chunk's send", nil, func(m channel.Outbound) bool { return m.Text == para("b") },
			1, []string{para("a"), para("b"), para("c")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t)
			w, url := newWorld(t)
			path := filepath.Join(t.TempDir(), "talon.db")
			w.answer = threeParas
			hung, once := make(chan struct{}), sync.Once{}
			pick := func(yes bool) chan struct{} {
				var ch chan struct{}
				if yes {
					once.Do(func() { ch = hung })
				}
				return ch
			}
			if tt.hangTurn != nil {
				w.hangTurn = func(r TurnRequest) chan struct{} { return pick(tt.hangTurn(r)) }
			}
			if tt.hangSend != nil {
				w.hangSend = func(m channel.Outbound) chan struct{} { return pick(tt.hangSend(m)) }
			}
			first := child(t, url, path)
			w.say(dm("111", "1"))
			select {
			case <-hung:
			case <-ctx.Done():
				t.Fatal("the child never reached the kill point")
			}
			kill9(t, first)
			second := child(t, url, path)
			select {
			case s := <-w.settled:
				if s != store.InboxDelivered {
					t.Errorf("settled %s", s)
				}
			case <-ctx.Done():
				t.Fatal("the restarted child did not finish the message")
			}
			kill9(t, second)
			w.mu.Lock()
			defer w.mu.Unlock()
			var texts []string
			for _, m := range w.sends {
				texts = append(texts, m.Plain)
			}
			if !slices.Equal(texts, tt.wantSends) {
				t.Errorf("the platform got %d messages, want each chunk once (%d)", len(texts), len(tt.wantSends))
			}
			if len(w.turns) != tt.wantTurns {
				t.Errorf("%d turns, want %d", len(w.turns), tt.wantTurns)
			}
		})
	}
}
