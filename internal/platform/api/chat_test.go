package api

import (
	"bufio"
	"encoding/json"
	"mime"
	"net/http"
	"strings"
	"testing"

	"talon/internal/platform/relay"
)

type sseEvent struct {
	name string
	ev   relay.Event
}

// readSSE reads an event stream line by line as a browser's EventSource
// does: "event:" names the event, "data:" lines carry it, a blank line
// dispatches it.
func readSSE(t *testing.T, resp *http.Response) []sseEvent {
	t.Helper()
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != "text/event-stream" {
		t.Fatalf("Content-Type %q", resp.Header.Get("Content-Type"))
	}
	var (
		out  []sseEvent
		name string
		data []string
	)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if len(data) == 0 {
				continue
			}
			var ev relay.Event
			if err := json.Unmarshal([]byte(strings.Join(data, "\n")), &ev); err != nil {
				t.Fatalf("event %s data %q: %v", name, data, err)
			}
			if ev.Kind != name {
				t.Fatalf("event name %q, data kind %q", name, ev.Kind)
			}
			out = append(out, sseEvent{name, ev})
			name, data = "", nil
		case strings.HasPrefix(line, "event:"):
			name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("no events")
	}
	switch out[len(out)-1].name {
	case "final", "aborted", "error":
	default:
		t.Fatalf("the stream ended without an end event: %+v", out)
	}
	return out
}

func TestChatSSE(t *testing.T) {
	e := newEnv(t, Options{AdminToken: adminTok})
	tok := e.createTenant(t, "acme")
	e.ok(t, 201, "POST", "/api/tenants/acme/installations", `{"slug":"helper"}`, nil)

	cases := []struct {
		name, message string
		tools         string // start/result phases seen, in order
		inFinal       string
	}{
		{"tool list", "/tools", "", "read"},
		{"tool call", `/call write {"path":"note.txt","content":"hi"}`, "start:write,result:write", ""},
		{"plain message", "hello there", "", "messages"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body, _ := json.Marshal(map[string]string{"user": "U1", "message": c.message})
			req, err := http.NewRequestWithContext(t.Context(), "POST", e.url+"/api/tenants/acme/employees/helper/chat", strings.NewReader(string(body)))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json; charset=utf-8")
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			evs := readSSE(t, resp)
			var phases []string
			for _, ev := range evs[:len(evs)-1] {
				switch ev.name {
				case "tool":
					phases = append(phases, ev.ev.Tool.Phase+":"+ev.ev.Tool.Name)
				case "delta":
				default:
					t.Fatalf("end event %s before the last", ev.name)
				}
			}
			end := evs[len(evs)-1]
			if end.name != "final" || !strings.Contains(end.ev.Text, c.inFinal) || strings.Join(phases, ",") != c.tools {
				t.Fatalf("tools %v, end %+v", phases, end)
			}
		})
	}
}
