package studio

import (
	"encoding/json"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var (
	toolRowRE   = regexp.MustCompile(`data-tool="([^"]+)" data-state="([^"]+)"`)
	toolCountRE = regexp.MustCompile(`id="tools-count">(\d+) of (\d+) tools available in the main session(?:; (\d+) more the policy allows are not built in Talon)?`)
)

// The agent page's count and tool table say what the model is offered:
// its available rows are, in order, the tools a real turn offers (the
// inspect model answers "/tools" with their names), plugin tools
// included, and the tools OpenClaw has and Talon does not are "not
// built in Talon", never available nor counted as such.
func TestAgentToolsMatchRun(t *testing.T) {
	e := newEnv(t, `{"plugins":{"entries":{"api-tools":{"enabled":true}}},"agents":{"defaults":{"model":"inspect"},"list":[
		{"id":"main"},
		{"id":"social","workspace":"ws-social","tools":{"alsoAllow":["publish_linkedin","canvas"],"deny":["web_fetch"]}}]}}`)
	write(t, filepath.Join(e.state, "ws-social", "api-tools", "publish_linkedin.yaml"), `name: publish_linkedin
description: Publish a post
parameters:
  text:
    type: string
    description: The post
    required: true
request:
  method: POST
  url: "https://api.example.com/posts"
allowed_hosts: [api.example.com]
`)
	b := e.signIn(adminToken, "")
	for _, tc := range []struct {
		agent        string
		has, notHave []string
	}{
		{"main", []string{"read", "web_fetch", "memory_search", "browser", "sessions_spawn", "subagents", "sessions_yield", "agents_list"}, []string{"publish_linkedin"}},
		{"social", []string{"read", "publish_linkedin"}, []string{"web_fetch"}},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			_, page := b.get("/agents/" + tc.agent)
			var available, notBuilt []string
			rows := toolRowRE.FindAllStringSubmatch(page, -1)
			for _, r := range rows {
				switch r[2] {
				case "available":
					available = append(available, r[1])
				case "not-built":
					notBuilt = append(notBuilt, r[1])
				}
			}
			count := toolCountRE.FindStringSubmatch(page)
			if count == nil {
				t.Fatalf("no tool count on the page:\n%s", page)
			}

			_, body := b.post("/agents/"+tc.agent+"/chat", url.Values{"message": {"/tools"}})
			events := sseEvents(body)
			var end struct{ Kind, Text string }
			if len(events) == 0 || events[len(events)-1][0] != "end" || json.Unmarshal([]byte(events[len(events)-1][1]), &end) != nil || end.Kind != "final" {
				t.Fatalf("chat events: %v", events)
			}
			offered := strings.Split(end.Text, "\n")

			if diff := cmp.Diff(offered, available); diff != "" {
				t.Errorf("available rows differ from the tools the model is offered (-offered +page):\n%s", diff)
			}
			if n, _ := strconv.Atoi(count[1]); n != len(offered) {
				t.Errorf("the page counts %s available, the model is offered %d", count[1], len(offered))
			}
			if n, _ := strconv.Atoi(count[2]); n != len(rows) {
				t.Errorf("the page counts %s tools, its table has %d rows", count[2], len(rows))
			}
			if count[3] == "" {
				t.Errorf("the count does not say how many tools the policy allows that Talon has not built: %q", count[0])
			}
			for _, n := range []string{"canvas", "nodes"} {
				if !slices.Contains(notBuilt, n) || slices.Contains(offered, n) {
					t.Errorf("%s: want a not-built row and not offered; not built %v, offered %v", n, notBuilt, offered)
				}
			}
			for _, n := range tc.has {
				if !slices.Contains(offered, n) {
					t.Errorf("%s is not offered: %v", n, offered)
				}
			}
			for _, n := range tc.notHave {
				if slices.Contains(offered, n) {
					t.Errorf("%s is offered: %v", n, offered)
				}
			}
			if strings.Contains(page, "add &#34;canvas&#34;") || strings.Contains(page, `add "canvas"`) {
				t.Errorf("a fix suggests adding canvas, which Talon has not built")
			}
		})
	}
}
