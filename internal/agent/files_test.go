package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"talon/internal/config"
	"talon/internal/llm"
	"talon/internal/policy"
	"talon/internal/provider"
	"talon/internal/store"
	"talon/internal/tools/core"
)

// old is a file time far enough in the past for the cache to keep what it
// reads (see racyWindow); the edits below set times of their own, so that
// each one changes what a stat shows whatever the file system's clock.
var old = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func writeAt(t *testing.T, path, text string, mtime time.Time) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

// TestBootstrapCacheSeesEdits: a bootstrap file changed between two turns
// is in the second turn's prompt, however it changed, while an unchanged
// one is not read again.
func TestBootstrapCacheSeesEdits(t *testing.T) {
	rewrite := func(name, text string, mtime time.Time) func(*testing.T, string) {
		return func(t *testing.T, dir string) { writeAt(t, filepath.Join(dir, name), text, mtime) }
	}
	cases := []struct {
		name       string
		edit       func(t *testing.T, dir string)
		want, lack string
	}{
		{"unchanged", func(*testing.T, string) {}, "## AGENTS.md\n\nbe brief", ""},
		{"grown", rewrite("AGENTS.md", "be brief, always", old), "be brief, always", ""},
		{"same size, new mtime", rewrite("AGENTS.md", "be sharp", old.Add(time.Second)), "be sharp", "be brief"},
		{"same size and mtime, replaced by rename", func(t *testing.T, dir string) {
			tmp := filepath.Join(dir, "AGENTS.md.tmp")
			writeAt(t, tmp, "be sharp", old)
			if err := os.Rename(tmp, filepath.Join(dir, "AGENTS.md")); err != nil {
				t.Fatal(err)
			}
		}, "be sharp", "be brief"},
		{"removed", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "AGENTS.md")); err != nil {
				t.Fatal(err)
			}
		}, "## SOUL.md", "## AGENTS.md"},
		{"created", rewrite("MEMORY.md", "the user likes tea", old), "## MEMORY.md\n\nthe user likes tea", ""},
		{"emptied", rewrite("AGENTS.md", "", old.Add(time.Second)), "## SOUL.md", "## AGENTS.md"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeAt(t, filepath.Join(dir, "AGENTS.md"), "be brief", old)
			writeAt(t, filepath.Join(dir, "SOUL.md"), "kind", old)
			root := openTestRoot(t, dir)
			cache := &fileCache{now: func() time.Time { return time.Now().Add(time.Hour) }}
			in := promptInput{root: root, maxChars: 100, agentID: "main", files: cache}
			first, _ := buildPrompt(in)
			if again, _ := buildPrompt(in); again != first || cache.reads != 2 {
				t.Fatalf("a second turn read %d files in all, want the 2 of the first turn alone; prompts equal: %v", cache.reads, again == first)
			}
			c.edit(t, dir)
			got, problems := buildPrompt(in)
			if len(problems) > 0 {
				t.Errorf("problems: %v", problems)
			}
			if !strings.Contains(got, c.want) || c.lack != "" && strings.Contains(got, c.lack) {
				t.Errorf("after the edit the prompt should have %q and not %q:\n%s", c.want, c.lack, got)
			}
		})
	}
}

// TestBootstrapCacheRacyEdit: with the real clock, a file rewritten with
// the same size and its mtime put back right after a turn read it is read
// again. Where the file system's clock ticks slower than these writes, its
// ctime may not have moved either, and only racyWindow keeps this true.
func TestBootstrapCacheRacyEdit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "AGENTS.md")
	writeAt(t, path, "be brief", old)
	root := openTestRoot(t, dir)
	in := promptInput{root: root, maxChars: 100, agentID: "main", files: &fileCache{}}
	for _, text := range []string{"be brief", "be sharp", "be quick"} {
		writeAt(t, path, text, old)
		if got, _ := buildPrompt(in); !strings.Contains(got, "## AGENTS.md\n\n"+text) {
			t.Fatalf("prompt lacks %q:\n%s", text, got)
		}
	}
}

// systemRecorder is the model: inspect, keeping the system prompt of
// each call.
type systemRecorder struct{ systems []string }

func (s *systemRecorder) Chat(ctx context.Context, req *provider.Request, onDelta func(string)) (*provider.Response, error) {
	s.systems = append(s.systems, req.System)
	return provider.Inspect{}.Chat(ctx, req, onDelta)
}

// TestRunnerSeesBootstrapEdits: through the runner, which keeps one cache
// for all its turns, an edit between two turns is in the next turn's
// system prompt.
func TestRunnerSeesBootstrapEdits(t *testing.T) {
	state := t.TempDir()
	ws := filepath.Join(state, "workspace")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	writeAt(t, filepath.Join(ws, "SOUL.md"), "calm", old)
	db, err := store.Open(filepath.Join(state, "talon.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	reg, err := core.Registry()
	if err != nil {
		t.Fatal(err)
	}
	cfg := mustConfig(t, `{agents: {defaults: {workspace: "`+ws+`"}}}`)
	model := &systemRecorder{}
	r := &Runner{Config: cfg, Policy: policy.New(cfg), Tools: reg, Store: db, StateDir: state,
		Resolve: func(string) (provider.Provider, string, error) { return model, config.InspectModel, nil }}
	r.bootstrap.now = func() time.Time { return time.Now().Add(time.Hour) }
	for i, soul := range []string{"calm", "calm", "wild", "bold"} {
		writeAt(t, filepath.Join(ws, "SOUL.md"), soul, old.Add(time.Duration(i)*time.Second))
		if _, err := r.Run(context.Background(), Request{AgentID: "main", SessionKey: "agent:main:main", Owner: true,
			Input: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}); err != nil {
			t.Fatal(err)
		}
		if got := model.systems[i]; !strings.Contains(got, "## SOUL.md\n\n"+soul) {
			t.Errorf("turn %d: system prompt lacks SOUL.md %q:\n%s", i+1, soul, got)
		}
	}
}

// TestBootstrapCacheMissingFiles: the bootstrap files a workspace lacks
// cost one stat of its directory a turn, not one each, and a file created
// later, under any name, is in the next turn's prompt.
func TestBootstrapCacheMissingFiles(t *testing.T) {
	dir := t.TempDir()
	writeAt(t, filepath.Join(dir, "SOUL.md"), "kind", old)
	if err := os.Chtimes(dir, old, old); err != nil {
		t.Fatal(err)
	}
	root := openTestRoot(t, dir)
	cache := &fileCache{now: func() time.Time { return time.Now().Add(time.Hour) }}
	in := promptInput{root: root, maxChars: 100, agentID: "main", files: cache, heartbeat: true}
	buildPrompt(in)
	before := cache.stats
	if got, _ := buildPrompt(in); !strings.Contains(got, "## SOUL.md\n\nkind") {
		t.Fatalf("prompt lacks SOUL.md:\n%s", got)
	}
	if n := cache.stats - before; n != 2 {
		t.Fatalf("a turn made %d stats, want 2: the directory and SOUL.md", n)
	}
	for _, name := range BootstrapFiles {
		if name == "SOUL.md" {
			continue
		}
		writeAt(t, filepath.Join(dir, name), "new "+name, old)
		got, _ := buildPrompt(in)
		if !strings.Contains(got, "## "+name+"\n\nnew "+name) {
			t.Fatalf("%s created between turns is not in the prompt:\n%s", name, got)
		}
	}
}

// TestBootstrapCacheRacyCreate: with the real clock, a file created right
// after a turn found it missing is in the next turn's prompt: the
// directory changed too recently for its stamp to vouch for the absence.
func TestBootstrapCacheRacyCreate(t *testing.T) {
	dir := t.TempDir()
	root := openTestRoot(t, dir)
	cache := &fileCache{}
	in := promptInput{root: root, maxChars: 100, agentID: "main", files: cache, heartbeat: true}
	buildPrompt(in)
	for _, name := range []string{"AGENTS.md", "USER.md", "HEARTBEAT.md"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("hello "+name), 0o600); err != nil {
			t.Fatal(err)
		}
		if got, _ := buildPrompt(in); !strings.Contains(got, "hello "+name) {
			t.Fatalf("prompt lacks %s:\n%s", name, got)
		}
	}
}
