package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"talon/internal/automation"
	"talon/internal/gatewaytoken"
	"talon/internal/testtier"
	"talon/protocol/client"
)

// chromiumPath is Debian's Chromium, which studio.mjs drives.
const chromiumPath = "/usr/bin/chromium"

// studioTimeout bounds the whole browser run (about 20 s on a laptop).
const studioTimeout = 4 * time.Minute

// TestStudioInChromium walks Studio in Debian's Chromium with
// playwright-core (e2e/node/studio.mjs): sign-in, a tenant with an
// employee installed, synced and uninstalled, the tenant's own sign-in,
// the sandbox allow-list repair, an agent created with the keyboard, its
// tool table changing with the execution role, a chat with the inspect
// model whose command is approved from the card, sessions, a cron job
// added, run now and disabled on the agent's Automations page, and the
// main pages at phone width. Screenshots of every page go to
// $TALON_E2E_ARTIFACTS/studio (else e2e/artifacts/studio). Afterwards the
// state dir must hold what the pages said they wrote, and the gateway
// must hold the job and run the Automations page showed.
func TestStudioInChromium(t *testing.T) {
	testtier.RequireFull(t, "Chromium")
	needCommands(t, "node")
	if _, err := os.Stat(chromiumPath); err != nil {
		missing(t, "Debian's Chromium is not at %s", chromiumPath)
	}
	needNodePackage(t, nodeDir(), "playwright-core")
	// playwright-core 1.65 needs Node 20 (Debian 12's nodejs is 18).
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		t.Fatalf("node --version: %v", err)
	}
	v := strings.TrimSpace(string(out))
	if major, _ := strconv.Atoi(strings.TrimPrefix(strings.Split(v, ".")[0], "v")); major < 20 {
		missing(t, "playwright-core needs Node 20 or newer; node is %s", v)
	}

	shots := studioArtifacts(t)
	dir := t.TempDir()
	cfg := `{"agents":{"list":[{"id":"main"},{"id":"boxed","sandbox":{"mode":"all"},"tools":{"sandbox":{"tools":{"allow":[]}}}}]}}`
	if err := os.WriteFile(filepath.Join(dir, "talon.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	const admin = "studio-e2e-admin-token"
	s := startPlatformServer(t, dir, filepath.Join(repoRoot, "templates"), admin)
	waitPlatform(t, s, admin)

	t.Logf("screenshots: %s", shots)
	var report struct {
		Agent string `json:"agent"`
		Job   struct {
			ID      string `json:"id"`
			Name    string `json:"name"`
			Message string `json:"message"`
		} `json:"job"`
		Steps       []string `json:"steps"`
		Screenshots []string `json:"screenshots"`
	}
	env := append(cleanEnv("STUDIO_*"), "STUDIO_URL="+s.base, "STUDIO_ADMIN_TOKEN="+admin, "STUDIO_SCREENSHOTS="+shots)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("talon serve's log:\n%s", s.proc.Log)
		}
	})
	runNode(t, studioTimeout, env, &report, "studio.mjs")
	for _, st := range report.Steps {
		t.Logf("passed: %s", st)
	}
	t.Logf("%d screenshots in %s", len(report.Screenshots), shots)

	// What the pages said they wrote is on disk.
	var talon struct {
		Agents struct {
			List []struct {
				ID    string `json:"id"`
				Tools struct {
					Sandbox struct {
						Tools struct {
							Allow []string `json:"allow"`
						} `json:"tools"`
					} `json:"sandbox"`
				} `json:"tools"`
			} `json:"list"`
		} `json:"agents"`
	}
	readJSON(t, filepath.Join(dir, "talon.json"), &talon)
	var ids []string
	for _, a := range talon.Agents.List {
		ids = append(ids, a.ID)
		if a.ID == "boxed" && !slices.Equal(a.Tools.Sandbox.Tools.Allow, []string{"*"}) {
			t.Errorf("talon.json: boxed's tools.sandbox.tools.allow = %q, want [\"*\"] (the repair)", a.Tools.Sandbox.Tools.Allow)
		}
	}
	if !slices.Contains(ids, report.Agent) {
		t.Errorf("talon.json: agents %q, want %s (created in Studio) among them", ids, report.Agent)
	}
	var approvals struct {
		Agents map[string]struct {
			Security string `json:"security"`
			Ask      string `json:"ask"`
		} `json:"agents"`
	}
	readJSON(t, filepath.Join(dir, "exec-approvals.json"), &approvals)
	// The last role applied is Collaborative.
	if got := approvals.Agents[report.Agent]; got.Security != "allowlist" || got.Ask != "on-miss" {
		t.Errorf("exec-approvals.json: agent %s has security %q, ask %q; want allowlist, on-miss (Collaborative)", report.Agent, got.Security, got.Ask)
	}
	checkStudioJob(t, s, report.Agent, report.Job.ID, report.Job.Name, report.Job.Message)
}

// checkStudioJob asks the gateway, as the default tenant's operator (its
// token is the one talon serve keeps in the state dir), for the job the
// Automations page added: the agent's, every hour, an agent message,
// disabled, and with the one ok run of its Run now in its history.
func checkStudioJob(t *testing.T, s *server, agent, id, name, message string) {
	t.Helper()
	tok, err := gatewaytoken.Load(s.dir)
	if err != nil {
		t.Fatalf("the default tenant's gateway token: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, "ws"+strings.TrimPrefix(s.base, "http"), client.Options{Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var list struct {
		Jobs []automation.Job `json:"jobs"`
	}
	if err := c.Call(ctx, "cron.list", map[string]any{"includeDisabled": true}, &list); err != nil {
		t.Fatalf("cron.list: %v", err)
	}
	if len(list.Jobs) != 1 || list.Jobs[0].ID != id {
		t.Fatalf("cron.list: %+v, want only job %s (added in Studio)", list.Jobs, id)
	}
	j := list.Jobs[0]
	if j.Name != name || j.AgentID != agent || j.Enabled || j.Schedule.Kind != automation.KindEvery || j.Schedule.EveryMs != time.Hour.Milliseconds() ||
		j.Payload.Kind != automation.PayloadAgentTurn || j.Payload.Message != message {
		t.Errorf("cron.list: job %+v, want %q of agent %s, disabled, every 1h, agentTurn %q", j, name, agent, message)
	}
	if j.State.LastRunStatus != automation.StatusOK || j.State.NextRunAtMs != nil {
		t.Errorf("cron.list: job state %+v, want last run ok and no next run (disabled)", j.State)
	}
	var runs struct {
		Entries []automation.Run `json:"entries"`
	}
	if err := c.Call(ctx, "cron.runs", map[string]any{"id": id}, &runs); err != nil {
		t.Fatalf("cron.runs: %v", err)
	}
	if len(runs.Entries) != 1 || runs.Entries[0].Status != automation.StatusOK || !strings.HasPrefix(runs.Entries[0].Summary, "inspect: ") {
		t.Errorf("cron.runs: %+v, want the one ok run of Run now with the inspect model's answer", runs.Entries)
	}
}

// studioArtifacts is the screenshot directory, emptied of an earlier
// run's screenshots.
func studioArtifacts(t *testing.T) string {
	t.Helper()
	root := os.Getenv("TALON_E2E_ARTIFACTS")
	if root == "" {
		root = filepath.Join(repoRoot, "e2e", "artifacts")
	}
	dir := filepath.Join(root, "studio")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	old, _ := filepath.Glob(filepath.Join(dir, "*.png"))
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
