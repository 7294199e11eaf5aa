package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"talon/internal/store/pg/pgtest"
	"talon/internal/talonproc"
)

// TestMultiNode: two `talon gateway` nodes, each with its own state dir,
// and one `talon serve --gateways` in front of them with the catalog in
// PostgreSQL. Tenants created through the API land on both nodes; chat
// through the platform reaches the tenant's node; a tenant moved with
// `talon tenants move` keeps its sessions and memory; a killed node's
// tenants report unavailable while the other node's keep working; and
// neither a tenant's token nor the node token opens the admin routes.
func TestMultiNode(t *testing.T) {
	pg := pgtest.Start(t)
	dsn := pg.NewDB(t)
	const nodeToken, admin = "e2e-node-token-0123456789", "e2e-platform-admin"
	nodes := map[string]*server{"a": startNode(t, nodeToken), "b": startNode(t, nodeToken)}
	tpl := t.TempDir()
	writeHelperTemplate(t, tpl)
	front := startFront(t, tpl, dsn, admin, nodeToken, "a="+nodes["a"].base+",b="+nodes["b"].base)
	waitPlatform(t, front, admin)
	api := &platformClient{t: t, base: front.base}
	// Studio is served in front too, under the gateway's Host rule.
	for _, c := range []struct {
		host string
		want int
	}{{"", 200}, {"rebound.example", 421}} {
		req, _ := http.NewRequest("GET", front.base+"/signin", nil)
		if c.host != "" {
			req.Host = c.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("GET /signin with Host %q: %d, want %d", c.host, resp.StatusCode, c.want)
		}
	}

	tokens := map[string]string{}
	for _, id := range []string{"t1", "t2", "t3", "t4"} {
		code, body := api.do("POST", "/api/tenants", admin, `{"id":"`+id+`"}`)
		if code != 201 {
			t.Fatalf("create %s: %d %s", id, code, body)
		}
		var created struct{ Token string }
		if err := json.Unmarshal([]byte(body), &created); err != nil || created.Token == "" {
			t.Fatalf("create %s answer %s: %v", id, body, err)
		}
		tokens[id] = created.Token
		if code, body := api.do("POST", "/api/tenants/"+id+"/installations", admin, `{"slug":"helper"}`); code != 201 {
			t.Fatalf("install for %s: %d %s", id, code, body)
		}
	}
	placed := api.tenants(admin)
	perNode := map[string]int{}
	for id, st := range placed {
		perNode[st.Node]++
		if !st.Available {
			t.Errorf("tenant %s on %s is unavailable: %s", id, st.Node, st.Reason)
		}
		other := map[string]string{"a": "b", "b": "a"}[st.Node]
		if !isDir(filepath.Join(nodes[st.Node].dir, "tenants", id)) || isDir(filepath.Join(nodes[other].dir, "tenants", id)) {
			t.Errorf("tenant %s placed on %s, but its directory is not there alone", id, st.Node)
		}
	}
	if perNode["a"] != 2 || perNode["b"] != 2 {
		t.Fatalf("four tenants on two empty nodes: %v, want two each (least loaded)", perNode)
	}

	// Chat through the platform lands in the tenant's node: the memory
	// file its employee writes is in that node's state dir.
	for id, st := range placed {
		api.chat(id, tokens[id], `/call write {"path":"memory/note.md","content":"note of `+id+`"}`)
		note := filepath.Join(nodes[st.Node].dir, "tenants", id, "agents", "helper", "memory", "note.md")
		if b, err := os.ReadFile(note); err != nil || string(b) != "note of "+id {
			t.Errorf("tenant %s's memory on node %s: %q, %v", id, st.Node, b, err)
		}
	}

	// Hostile callers: a tenant's token does not move tenants, list nodes
	// or reach another tenant; the node token is not the admin token.
	var mover, stay string
	for id, st := range placed {
		if st.Node == "a" && mover == "" {
			mover = id
		} else if st.Node == "a" {
			stay = id
		}
	}
	for _, c := range []struct{ name, method, path, token, body string }{
		{"tenant token moves itself", "POST", "/api/tenants/" + mover + "/move", tokens[mover], `{"node":"b"}`},
		{"tenant token lists nodes", "GET", "/api/nodes", tokens[mover], ""},
		{"node token as admin", "GET", "/api/nodes", nodeToken, ""},
		{"node token moves a tenant", "POST", "/api/tenants/" + mover + "/move", nodeToken, `{"node":"b"}`},
		{"tenant token on another tenant's usage", "GET", "/api/tenants/" + stay + "/usage", tokens[mover], ""},
	} {
		if code, body := api.do(c.method, c.path, c.token, c.body); code != 403 {
			t.Errorf("%s: %d %s, want 403", c.name, code, body)
		}
	}

	// Move a tenant from a to b with the CLI: its session and memory
	// come along.
	before := api.messages(mover, tokens[mover])
	cmd := exec.Command(talonBin, "tenants", "move", mover, "b", "--url", front.base)
	cmd.Env = append(cleanEnv("TALON_ADMIN_TOKEN"), "TALON_ADMIN_TOKEN="+admin)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "moved from a to b") {
		t.Fatalf("talon tenants move: %v\n%s\nplatform log:\n%s", err, out, front.proc.Log)
	}
	if st := api.tenants(admin)[mover]; st.Node != "b" || !st.Available {
		t.Fatalf("after the move %s is %+v, want on b and available", mover, st)
	}
	if isDir(filepath.Join(nodes["a"].dir, "tenants", mover)) {
		t.Errorf("the old copy of %s is still on node a", mover)
	}
	if after := api.messages(mover, tokens[mover]); after <= before {
		t.Errorf("session of %s after the move has %d messages, before it %d: the history did not come along", mover, after, before)
	}
	if got := api.chat(mover, tokens[mover], `/call read {"path":"memory/note.md"}`); !strings.Contains(got, "note of "+mover) {
		t.Errorf("memory of %s after the move: %q", mover, got)
	}
	if code, body := api.do("POST", "/api/tenants/"+mover+"/move", admin, `{"node":"b"}`); code != 409 {
		t.Errorf("moving %s to the node it is on: %d %s, want 409", mover, code, body)
	}

	// Node a dies: its tenant reports unavailable, b's keep working.
	nodes["a"].kill()
	deadline := time.Now().Add(30 * time.Second)
	for api.tenants(admin)[stay].Available {
		if time.Now().After(deadline) {
			t.Fatalf("tenant %s still available 30 s after its node died\n%s", stay, front.proc.Log)
		}
		time.Sleep(100 * time.Millisecond)
	}
	st := api.tenants(admin)[stay]
	if st.Node != "a" || st.Reason == "" {
		t.Errorf("tenant on the dead node: %+v, want node a and a reason", st)
	}
	code, body := api.chatStatus(stay, tokens[stay], "hello")
	if code != 503 || !strings.Contains(body, "node_unavailable") || !strings.Contains(body, "node a") {
		t.Errorf("chat with %s on the dead node: %d %s, want 503 node_unavailable naming node a", stay, code, body)
	}
	for id, st := range api.tenants(admin) {
		if st.Node == "b" {
			if !st.Available {
				t.Errorf("tenant %s on the live node is unavailable: %s", id, st.Reason)
			}
			api.chat(id, tokens[id], "still here?")
		}
	}
	code, body = api.do("GET", "/api/nodes", admin, "")
	if code != 200 || !strings.Contains(body, `"id":"a"`) || !regexp.MustCompile(`"id":"a"[^}]*"up":false`).MatchString(body) {
		t.Errorf("nodes after a died: %d %s", code, body)
	}
}

// startNode starts `talon gateway` with the node API on a fresh state dir.
func startNode(t *testing.T, nodeToken string) *server {
	t.Helper()
	dir := t.TempDir()
	p, err := talonproc.Start(talonproc.Options{
		Bin: talonBin, StateDir: dir, ReadyTimeout: readyTimeout,
		Env: append(cleanEnv("TALON_*", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY"), "TALON_NODE_TOKEN="+nodeToken),
		Args: func(port int) []string {
			return []string{"gateway", "--state-dir", dir, "--port", strconv.Itoa(port)}
		},
	})
	if err != nil {
		t.Fatalf("starting a gateway node: %v", err)
	}
	s := &server{dir: dir, base: p.URL, proc: p}
	t.Cleanup(func() { s.stop(t) })
	return s
}

// startFront starts `talon serve --gateways` with its catalog at dsn.
func startFront(t *testing.T, templates, dsn, admin, nodeToken, gateways string) *server {
	t.Helper()
	dir := t.TempDir()
	p, err := talonproc.Start(talonproc.Options{
		Bin: talonBin, StateDir: dir, ReadyTimeout: readyTimeout,
		Env: append(cleanEnv("TALON_*", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY"),
			"TALON_NODE_TOKEN="+nodeToken, "TALON_ADMIN_TOKEN="+admin),
		Args: func(port int) []string {
			return []string{"serve", "--state-dir", dir, "--port", strconv.Itoa(port), "--templates", templates,
				"--database", dsn, "--gateways", gateways, "--health-interval", "1s"}
		},
	})
	if err != nil {
		t.Fatalf("starting talon serve --gateways: %v", err)
	}
	s := &server{dir: dir, base: p.URL, proc: p}
	t.Cleanup(func() { s.stop(t) })
	return s
}

func writeHelperTemplate(t *testing.T, root string) {
	t.Helper()
	for name, content := range map[string]string{
		"template.yaml": "type: helper\nname: Helper\ndescription: Helps\nemoji: \"🧩\"\ncategory: general\nskills: []\nmodel: inspect\n",
		"AGENTS.md":     "# Helper\n", "SOUL.md": "Calm.\n", "IDENTITY.md": "- Name: Helper\n",
	} {
		p := filepath.Join(root, "helper", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// platformClient calls the platform API.
type platformClient struct {
	t    *testing.T
	base string
}

func (c *platformClient) do(method, path, token, body string) (int, string) {
	c.t.Helper()
	req, _ := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

type tenantState struct {
	Node      string
	Available bool
	Reason    string
}

// tenants is GET /api/tenants by tenant id.
func (c *platformClient) tenants(admin string) map[string]tenantState {
	c.t.Helper()
	code, body := c.do("GET", "/api/tenants", admin, "")
	var res struct {
		Tenants []struct {
			ID string
			tenantState
		}
	}
	if code != 200 || json.Unmarshal([]byte(body), &res) != nil {
		c.t.Fatalf("tenants: %d %s", code, body)
	}
	out := map[string]tenantState{}
	for _, x := range res.Tenants {
		out[x.ID] = x.tenantState
	}
	return out
}

// chatStatus chats as the tenant and returns the status and, for a
// stream, the last event's data (else the body).
func (c *platformClient) chatStatus(tenant, token, message string) (int, string) {
	c.t.Helper()
	body, _ := json.Marshal(map[string]string{"user": "u1", "message": message})
	req, _ := http.NewRequest("POST", c.base+"/api/tenants/"+tenant+"/employees/helper/chat", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	var last, data string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			last = v
		}
		if v, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			data = v
		}
	}
	return 200, last + " " + data
}

// chat is a turn that must end final; it returns the reply.
func (c *platformClient) chat(tenant, token, message string) string {
	c.t.Helper()
	code, out := c.chatStatus(tenant, token, message)
	kind, data, _ := strings.Cut(out, " ")
	var ev struct{ Text string }
	if code != 200 || kind != "final" || json.Unmarshal([]byte(data), &ev) != nil {
		c.t.Fatalf("chat %q with %s: %d %s", message, tenant, code, out)
	}
	return ev.Text
}

var inspectMessages = regexp.MustCompile(`(\d+) messages`)

// messages is how many messages the inspect model sees in the tenant's
// session of user u1, a turn included.
func (c *platformClient) messages(tenant, token string) int {
	c.t.Helper()
	got := c.chat(tenant, token, "how many messages?")
	m := inspectMessages.FindStringSubmatch(got)
	if m == nil {
		c.t.Fatalf("inspect's answer %q has no message count", got)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}
