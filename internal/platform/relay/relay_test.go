package relay

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"talon/internal/gateway/gatewaytest"
	"talon/protocol/client"
)

const token = "tenant-secret"

// gatewayFor starts an in-process gateway whose state dir holds tenant
// "acme" (inspect model, the token above) and returns its ws URL.
func gatewayFor(t *testing.T) string {
	t.Helper()
	state := t.TempDir()
	dir := filepath.Join(state, "tenants", "acme")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// "asker" runs commands on the host only once a person approves them.
	cfg := `{"gateway":{"auth":{"token":"` + token + `"}},"agents":{"list":[{"id":"main"},{"id":"helper"},` +
		`{"id":"asker","tools":{"exec":{"security":"allowlist","ask":"on-miss"}}}]}}`
	if err := os.WriteFile(filepath.Join(dir, "talon.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return gatewaytest.Start(t, state)
}

func dialer(url string, dials *int, mu *sync.Mutex) Dial {
	return func(ctx context.Context, tenant string) (*client.Client, error) {
		mu.Lock()
		*dials++
		mu.Unlock()
		return client.Dial(ctx, url, client.Options{Token: token, Tenant: tenant, ClientID: "talon-platform", Mode: "backend"})
	}
}

func TestChatThroughTheGateway(t *testing.T) {
	url := gatewayFor(t)
	var (
		mu    sync.Mutex
		dials int
	)
	r := New(dialer(url, &dials, &mu))
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var events []Event
	end, err := r.Chat(ctx, Message{Tenant: "acme", AgentID: "main", SessionKey: "agent:main:platform:u1", Text: "/tools"}, func(e Event) { events = append(events, e) })
	if err != nil {
		t.Fatal(err)
	}
	if end.Kind != "final" || !strings.Contains(end.Text, "read") || !strings.Contains(end.Text, "exec") {
		t.Fatalf("end = %+v", end)
	}
	if len(events) == 0 || events[len(events)-1].Kind != "final" {
		t.Fatalf("events = %+v", events)
	}

	// A tool call is reported as it happens, to the chat that started it.
	events = nil
	end, err = r.Chat(ctx, Message{Tenant: "acme", AgentID: "main", SessionKey: "agent:main:platform:u1", Text: `/call write {"path":"note.txt","content":"hi"}`}, func(e Event) { events = append(events, e) })
	if err != nil {
		t.Fatal(err)
	}
	var phases []string
	for _, e := range events {
		if e.Kind == "tool" {
			phases = append(phases, e.Tool.Phase+":"+e.Tool.Name)
		}
	}
	if strings.Join(phases, ",") != "start:write,result:write" || end.Kind != "final" {
		t.Fatalf("tool events %v, end %+v", phases, end)
	}

	// Concurrent chats of one tenant share the connection and each gets
	// its own run's end.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := "agent:helper:platform:c" + string(rune('a'+i))
			e, err := r.Chat(ctx, Message{Tenant: "acme", AgentID: "helper", SessionKey: key, Text: "hello " + key}, nil)
			if err == nil && (e.Kind != "final" || !strings.Contains(e.Text, "message")) {
				err = &mismatch{e}
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	mu.Lock()
	if dials != 1 {
		t.Errorf("dials = %d, want one connection for the tenant", dials)
	}
	mu.Unlock()

	// A dropped connection is replaced at the next chat.
	r.conns["acme"].client().Close() // its Done closes at once
	if _, err := r.Chat(ctx, Message{Tenant: "acme", AgentID: "main", SessionKey: "agent:main:platform:u1", Text: "again"}, nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if dials != 2 {
		t.Errorf("dials = %d after a drop, want 2", dials)
	}
	mu.Unlock()
}

type mismatch struct{ e Event }

func (m *mismatch) Error() string { return "unexpected end " + m.e.Kind + ": " + m.e.Text + m.e.Error }

func TestChatErrors(t *testing.T) {
	url := gatewayFor(t)
	var (
		mu    sync.Mutex
		dials int
	)
	r := New(dialer(url, &dials, &mu))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := r.Chat(ctx, Message{Tenant: "nobody", SessionKey: "agent:main:x", Text: "hi"}, nil); err == nil || !strings.Contains(err.Error(), `tenant "nobody"`) {
		t.Errorf("unknown tenant: %v", err)
	}
	// A refused dial is not retried at once.
	if _, err := r.Chat(ctx, Message{Tenant: "nobody", SessionKey: "agent:main:x", Text: "hi"}, nil); err == nil || !strings.Contains(err.Error(), "retrying in") {
		t.Errorf("second try: %v", err)
	}
	if _, err := r.Chat(ctx, Message{Tenant: "acme", AgentID: "ghost", SessionKey: "agent:ghost:x", Text: "hi"}, nil); err == nil || !strings.Contains(err.Error(), "chat.send") {
		t.Errorf("unknown agent: %v", err)
	}
	r.Close()
	if _, err := r.Chat(ctx, Message{Tenant: "acme", SessionKey: "agent:main:x", Text: "hi"}, nil); err != ErrClosed {
		t.Errorf("after Close: %v", err)
	}
}

// TestChatApprovals: a chat that asks for approvals hears its session's
// exec approval, answers it through Call, and the run goes on; a chat of
// another session that asks too hears nothing of it.
func TestChatApprovals(t *testing.T) {
	r := New(dialer(gatewayFor(t), new(int), new(sync.Mutex)))
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// A bystander on another session watches approvals for the whole run
	// of the first chat.
	heard := make(chan []Event, 1)
	started := make(chan struct{})
	go func() {
		var got []Event
		close(started)
		_, err := r.Chat(ctx, Message{Tenant: "acme", AgentID: "asker", SessionKey: "agent:asker:other", Text: `/call exec {"command":"sleep 1"}`, Approvals: true}, func(e Event) {
			if e.Approval != nil {
				got = append(got, e)
				// Its own approval is denied so its run ends.
				if e.Kind == "approval" {
					_ = r.Call(ctx, "acme", "exec.approval.resolve", map[string]string{"id": e.Approval.ID, "decision": "deny"}, nil)
				}
			}
		})
		if err != nil {
			t.Error(err)
		}
		heard <- got
	}()
	<-started

	var asked *Approval
	end, err := r.Chat(ctx, Message{Tenant: "acme", AgentID: "asker", SessionKey: "agent:asker:main", Text: `/call exec {"command":"echo relay-approved"}`, Approvals: true}, func(e Event) {
		if e.Kind == "approval" {
			asked = e.Approval
			if err := r.Call(ctx, "acme", "exec.approval.resolve", map[string]string{"id": e.Approval.ID, "decision": "allow-once"}, nil); err != nil {
				t.Errorf("resolve: %v", err)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if asked == nil || asked.Command != "echo relay-approved" || asked.SessionKey != "agent:asker:main" || asked.AgentID != "asker" {
		t.Fatalf("approval asked = %+v", asked)
	}
	// The exec tool answers at once that approval is pending (OpenClaw's
	// shape); the outcome lands in the session later, as a system event.
	if end.Kind != "final" || !strings.Contains(end.Text, "approval-pending") {
		t.Errorf("end = %+v, want the pending approval", end)
	}
	if !waitHistory(ctx, r, "agent:asker:main", "code 0)\\nrelay-approved") {
		t.Error("the approved command's output never reached the session")
	}
	for _, e := range <-heard {
		if e.Kind == "approval" && e.Approval.SessionKey != "agent:asker:other" {
			t.Errorf("the other session's chat heard %+v", e.Approval)
		}
	}

	// Without Approvals a chat hears none, and a bad call is the
	// gateway's own error.
	var none []Event
	_, _ = r.Chat(ctx, Message{Tenant: "acme", AgentID: "main", SessionKey: "agent:main:quiet", Text: "hi"}, func(e Event) {
		if e.Approval != nil {
			none = append(none, e)
		}
	})
	if len(none) != 0 {
		t.Errorf("a chat without Approvals heard %+v", none)
	}
	if err := r.Call(ctx, "acme", "exec.approval.resolve", map[string]string{"id": "nope", "decision": "deny"}, nil); err == nil {
		t.Error("resolving an unknown approval: no error")
	}
}

// waitHistory polls the session's history through Call until a message
// holds want, or ctx ends.
func waitHistory(ctx context.Context, r *Relay, key, want string) bool {
	for ctx.Err() == nil {
		var h struct {
			Messages []json.RawMessage `json:"messages"`
		}
		if err := r.Call(ctx, "acme", "chat.history", map[string]string{"sessionKey": key}, &h); err == nil {
			for _, m := range h.Messages {
				if strings.Contains(string(m), want) {
					return true
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// TestChatCompaction: /compact through the relay reports the
// compaction's start and end as events, and ends with the notice.
func TestChatCompaction(t *testing.T) {
	r := New(dialer(gatewayFor(t), new(int), new(sync.Mutex)))
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const key = "agent:main:platform:long"
	for i := range 4 {
		if _, err := r.Chat(ctx, Message{Tenant: "acme", AgentID: "main", SessionKey: key, Text: strings.Repeat("a long line of talk ", 4000) + string(rune('a'+i))}, nil); err != nil {
			t.Fatal(err)
		}
	}
	var phases []string
	end, err := r.Chat(ctx, Message{Tenant: "acme", AgentID: "main", SessionKey: key, Text: "/compact"}, func(e Event) {
		if e.Kind == "compaction" {
			phases = append(phases, e.Compaction.Phase+":"+e.Compaction.Reason+":"+e.Compaction.Outcome)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(phases, ",") != "start:manual:,end:manual:compacted" || end.Kind != "final" || !strings.HasPrefix(end.Text, "⚙️ Compacted (") {
		t.Errorf("compaction events %v, end %+v", phases, end)
	}
}

// TestForget: after Forget the tenant's next call dials again (the tenant
// moved to another gateway), and forgetting an unknown tenant is a no-op.
func TestForget(t *testing.T) {
	url := gatewayFor(t)
	var (
		mu    sync.Mutex
		dials int
	)
	r := New(dialer(url, &dials, &mu))
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r.Forget("nobody")
	for i, step := range []struct {
		forget bool
		dials  int
	}{{false, 1}, {false, 1}, {true, 2}} {
		if step.forget {
			r.Forget("acme")
		}
		if err := r.Call(ctx, "acme", "health", nil, nil); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		mu.Lock()
		got := dials
		mu.Unlock()
		if got != step.dials {
			t.Errorf("after call %d (forget %v): %d dials, want %d", i, step.forget, got, step.dials)
		}
	}
}

// TestIdleConnectionsClose: a connection no chat or call has used for
// Idle is closed (a connected client keeps its tenant open in the
// gateway) and the next call dials again; one in use is never closed.
func TestIdleConnectionsClose(t *testing.T) {
	url := gatewayFor(t)
	var (
		mu    sync.Mutex
		dials int
	)
	r := New(dialer(url, &dials, &mu))
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return dials
	}
	if err := r.Call(ctx, "acme", "health", nil, nil); err != nil {
		t.Fatal(err)
	}
	r.closeIdle(time.Now()) // used just now: kept
	if err := r.Call(ctx, "acme", "health", nil, nil); err != nil || count() != 1 {
		t.Fatalf("a call after a sweep within Idle: %v, %d dials, want the one connection", err, count())
	}

	held, err := r.conn(ctx, "acme") // as a chat in flight holds it
	if err != nil {
		t.Fatal(err)
	}
	first := held.client()
	r.closeIdle(time.Now().Add(2 * Idle))
	select {
	case <-first.Done():
		t.Fatal("a connection in use was closed as idle")
	default:
	}
	r.release(held)

	r.closeIdle(time.Now().Add(2 * Idle))
	select {
	case <-first.Done():
	case <-ctx.Done():
		t.Fatal("a connection unused for Idle is still open")
	}
	if err := r.Call(ctx, "acme", "health", nil, nil); err != nil || count() != 2 {
		t.Fatalf("a call after the idle close: %v, %d dials, want a second connection", err, count())
	}
}
