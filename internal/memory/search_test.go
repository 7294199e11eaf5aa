package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"talon/internal/tools"
)

func TestSearchRanking(t *testing.T) {
	ix := open(t)
	dir := t.TempDir()
	write(t, dir, "MEMORY.md", "# Preferences\n\nThe user prefers tea over coffee.\n\n# Projects\n\nTalon is a gateway written in Go.\n")
	write(t, dir, "memory/2025-01-10.md", "# Meeting\n\nWe discussed the kubernetes migration plan.\nThe migration starts in March.\nKubernetes clusters: two.\n")
	write(t, dir, "memory/2025-01-11.md", "# Notes\n\nThe database migration finished.\n")
	write(t, dir, "memory/deep/nested/x.md", "Unrelated text about gardening.\n")
	write(t, dir, "memory/ignored.txt", "kubernetes migration kubernetes migration\n")
	write(t, dir, "notes.md", "kubernetes migration, not a memory file\n")

	r := search(t, ix, "main", dir, q("kubernetes migration"))
	if r.Indexed != 4 {
		t.Errorf("indexed = %d, want 4", r.Indexed)
	}
	if got := paths(r); !slices.Equal(got, []string{"memory/2025-01-10.md", "memory/2025-01-11.md"}) {
		t.Fatalf("paths = %v, want the meeting note first, then the database note", got)
	}
	top := r.Results[0]
	if top.StartLine != 1 || top.EndLine != 5 || !strings.Contains(top.Snippet, "kubernetes migration plan") {
		t.Errorf("top hit = %+v, want lines 1-5 with the meeting text", top)
	}
	for i, h := range r.Results {
		if h.Score <= 0 || h.Score > 1 || (i > 0 && h.Score > r.Results[i-1].Score) {
			t.Errorf("scores not in (0,1] and descending: %+v", r.Results)
		}
	}
	// Stemming: "preferring" finds "prefers"; case does not matter.
	if got := paths(search(t, ix, "main", dir, q("PREFERRING"))); !slices.Equal(got, []string{"MEMORY.md"}) {
		t.Errorf("stemmed search found %v", got)
	}
	// maxResults and minScore.
	if got := search(t, ix, "main", dir, map[string]any{"query": "kubernetes migration", "maxResults": 1}); len(got.Results) != 1 {
		t.Errorf("maxResults 1 gave %d results", len(got.Results))
	}
	cut := (r.Results[0].Score + r.Results[1].Score) / 2
	if got := paths(search(t, ix, "main", dir, map[string]any{"query": "kubernetes migration", "minScore": cut})); !slices.Equal(got, []string{"memory/2025-01-10.md"}) {
		t.Errorf("minScore %g kept %v", cut, got)
	}
	if got := search(t, ix, "main", dir, q("astronomy")); len(got.Results) != 0 || got.Note == "" {
		t.Errorf("no match: %+v, want no results and a note", got)
	}
}

func TestSearchArgs(t *testing.T) {
	ix := open(t)
	dir := t.TempDir()
	write(t, dir, "MEMORY.md", "alpha\n")
	for _, tc := range []struct {
		args any
		want string
	}{
		{map[string]any{}, `missing required argument "query"`},
		{q("   "), `"query" must not be empty`},
		{q(strings.Repeat("é", 1001)), "1001 characters; the limit is 1000"},
		{map[string]any{"query": "a", "maxResults": 0}, `"maxResults" must be an integer from 1 to 50`},
		{map[string]any{"query": "a", "maxResults": 51}, `"maxResults" must be an integer from 1 to 50`},
		{map[string]any{"query": "a", "minScore": 1.5}, `"minScore" must be a number from 0 to 1`},
		{map[string]any{"query": "a", "minScore": -0.1}, `"minScore" must be a number from 0 to 1`},
		{map[string]any{"query": "a", "minScore": "high"}, `"minScore" must be a number from 0 to 1`},
		{map[string]any{"query": "a", "limit": 3}, `unknown argument "limit"`},
	} {
		res := call(t, tool(t, ix, "memory_search"), "main", dir, tc.args)
		if !res.IsError || !strings.Contains(res.Text, tc.want) {
			t.Errorf("%v: got %+v, want an error containing %q", tc.args, res, tc.want)
		}
	}
	// A query of 1000 characters, and numbers as strings, are accepted.
	search(t, ix, "main", dir, map[string]any{"query": strings.Repeat("é", 1000), "maxResults": "3", "minScore": "0.5"})
}

// touch sets a file's modification time, so that a test does not depend
// on the file system's timestamp resolution to see a change.
func touch(t *testing.T, dir, rel string, at time.Time) {
	t.Helper()
	if err := os.Chtimes(filepath.Join(dir, rel), at, at); err != nil {
		t.Fatal(err)
	}
}

func TestSearchSeesEdits(t *testing.T) {
	ix := open(t)
	dir := t.TempDir()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	write(t, dir, "memory/a.md", "the walrus sleeps\n")
	touch(t, dir, "memory/a.md", t0)
	if got := paths(search(t, ix, "main", dir, q("walrus"))); !slices.Equal(got, []string{"memory/a.md"}) {
		t.Fatalf("walrus: %v", got)
	}

	// Modified with the same size: the time tells.
	write(t, dir, "memory/a.md", "the narwal sleeps\n")
	touch(t, dir, "memory/a.md", t0.Add(time.Second))
	if got := paths(search(t, ix, "main", dir, q("walrus"))); len(got) != 0 {
		t.Errorf("walrus after edit: %v", got)
	}
	if got := paths(search(t, ix, "main", dir, q("narwal"))); !slices.Equal(got, []string{"memory/a.md"}) {
		t.Errorf("narwal after edit: %v", got)
	}
	// Touched without a change: still found, from the same rows.
	var before int
	ix.r.QueryRow(`SELECT max(id) FROM chunks`).Scan(&before)
	touch(t, dir, "memory/a.md", t0.Add(2*time.Second))
	if got := paths(search(t, ix, "main", dir, q("narwal"))); !slices.Equal(got, []string{"memory/a.md"}) {
		t.Errorf("narwal after touch: %v", got)
	}
	var after int
	ix.r.QueryRow(`SELECT max(id) FROM chunks`).Scan(&after)
	if after != before {
		t.Errorf("an unchanged file was re-chunked (chunk ids %d → %d)", before, after)
	}

	// Added, then deleted.
	write(t, dir, "memory/sub/b.md", "a walrus again\n")
	r := search(t, ix, "main", dir, q("walrus"))
	if got := paths(r); !slices.Equal(got, []string{"memory/sub/b.md"}) || r.Indexed != 2 {
		t.Errorf("after add: %v, indexed %d", got, r.Indexed)
	}
	if err := os.Remove(filepath.Join(dir, "memory/sub/b.md")); err != nil {
		t.Fatal(err)
	}
	r = search(t, ix, "main", dir, q("walrus"))
	if len(r.Results) != 0 || r.Indexed != 1 {
		t.Errorf("after delete: %v, indexed %d", paths(r), r.Indexed)
	}
	// Emptied: its chunks go.
	write(t, dir, "memory/a.md", "")
	if got := paths(search(t, ix, "main", dir, q("narwal"))); len(got) != 0 {
		t.Errorf("narwal after emptying: %v", got)
	}
	var n int
	ix.r.QueryRow(`SELECT count(*) FROM chunks`).Scan(&n)
	if n != 0 {
		t.Errorf("%d chunks left after emptying the only file", n)
	}
	// The workspace removed: everything of the agent goes.
	write(t, dir, "MEMORY.md", "walrus\n")
	search(t, ix, "main", dir, q("walrus"))
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if r := search(t, ix, "main", dir, q("walrus")); len(r.Results) != 0 || !strings.Contains(r.Note, "does not exist") {
		t.Errorf("after removing the workspace: %+v", r)
	}
	ix.r.QueryRow(`SELECT count(*) FROM files`).Scan(&n)
	if n != 0 {
		t.Errorf("%d files left indexed after the workspace went", n)
	}
}

func TestAgentsIsolated(t *testing.T) {
	ix := open(t)
	a, b := t.TempDir(), t.TempDir()
	write(t, a, "MEMORY.md", "the password hint is aubergine\n")
	write(t, b, "MEMORY.md", "shopping list: courgette\n")
	// Both the same relative path; each agent sees only its own.
	if got := search(t, ix, "alice", a, q("aubergine courgette")); len(got.Results) != 1 || !strings.Contains(got.Results[0].Snippet, "aubergine") {
		t.Errorf("alice: %+v", got.Results)
	}
	if got := search(t, ix, "bob", b, q("aubergine courgette")); len(got.Results) != 1 || !strings.Contains(got.Results[0].Snippet, "courgette") {
		t.Errorf("bob: %+v", got.Results)
	}
	// An agent whose workspace lacks the file does not see the other's rows.
	if got := search(t, ix, "carol", t.TempDir(), q("aubergine")); len(got.Results) != 0 || got.Indexed != 0 {
		t.Errorf("carol: %+v", got)
	}
	// And alice's rows survive bob's syncs.
	if got := search(t, ix, "alice", a, q("aubergine")); len(got.Results) != 1 {
		t.Errorf("alice again: %+v", got.Results)
	}
}

func TestNoMemory(t *testing.T) {
	ix := open(t)
	for _, tc := range []struct {
		name, dir, note string
	}{
		{"no workspace", "", "no workspace directory"},
		{"missing workspace", filepath.Join(t.TempDir(), "gone"), "does not exist"},
		{"no memory files", t.TempDir(), "no memory files"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := search(t, ix, "main", tc.dir, q("anything"))
			if len(r.Results) != 0 || r.Indexed != 0 || !strings.Contains(r.Note, tc.note) {
				t.Errorf("got %+v, want no results and a note containing %q", r, tc.note)
			}
		})
	}
	dir := t.TempDir()
	write(t, dir, "MEMORY.md", "alpha\n")
	if r := search(t, ix, "main", dir, q(`"*" -- :`)); len(r.Results) != 0 || !strings.Contains(r.Note, "no words") {
		t.Errorf("punctuation-only query: %+v", r)
	}
}

func TestSymlinksNotFollowed(t *testing.T) {
	ix := open(t)
	outside := t.TempDir()
	write(t, outside, "secret.md", "zebra password\n")
	write(t, outside, "dir/secret.md", "zebra password\n")
	dir := t.TempDir()
	write(t, dir, "memory/own.md", "my own zebra-free note\n")
	for link, target := range map[string]string{
		"MEMORY.md":        filepath.Join(outside, "secret.md"),
		"memory/link.md":   filepath.Join(outside, "secret.md"),
		"memory/linkdir":   filepath.Join(outside, "dir"),
		"memory/inside.md": filepath.Join(dir, "memory/own.md"),
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	r := search(t, ix, "main", dir, q("zebra password"))
	if got := paths(r); !slices.Equal(got, []string{"memory/own.md"}) || r.Indexed != 1 {
		t.Errorf("found %v (indexed %d), want only memory/own.md", got, r.Indexed)
	}
	for _, p := range []string{"MEMORY.md", "memory/link.md", "memory/linkdir", "memory/inside.md"} {
		if !slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.HasPrefix(w, p+" is a symbolic link") }) {
			t.Errorf("no warning about %s: %q", p, r.Warnings)
		}
	}
	// memory/ itself a link out of the workspace.
	dir2 := t.TempDir()
	if err := os.Symlink(filepath.Join(outside, "dir"), filepath.Join(dir2, "memory")); err != nil {
		t.Fatal(err)
	}
	if r := search(t, ix, "other", dir2, q("zebra")); len(r.Results) != 0 || len(r.Warnings) != 1 {
		t.Errorf("memory/ as a link: %+v", r)
	}
}

func TestHardLinkSkipped(t *testing.T) {
	ix := open(t)
	outside, dir := t.TempDir(), t.TempDir()
	write(t, outside, "secret.md", "okapi\n")
	write(t, dir, "memory/x.md", "")
	os.Remove(filepath.Join(dir, "memory/x.md"))
	if err := os.Link(filepath.Join(outside, "secret.md"), filepath.Join(dir, "memory/x.md")); err != nil {
		t.Fatalf("making a hard link: %v", err)
	}
	r := search(t, ix, "main", dir, q("okapi"))
	if len(r.Results) != 0 || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "hard links") {
		t.Errorf("hard link: %+v", r)
	}
}

func TestBigFileSkipped(t *testing.T) {
	ix := open(t)
	dir := t.TempDir()
	write(t, dir, "memory/big.md", "giraffe\n")
	write(t, dir, "memory/small.md", "giraffe too\n")
	if got := search(t, ix, "main", dir, q("giraffe")); len(got.Results) != 2 {
		t.Fatalf("before growing: %v", paths(got))
	}
	write(t, dir, "memory/big.md", "giraffe\n"+strings.Repeat("x", MaxFileBytes))
	r := search(t, ix, "main", dir, q("giraffe"))
	if got := paths(r); !slices.Equal(got, []string{"memory/small.md"}) || r.Indexed != 1 {
		t.Errorf("after growing: %v, indexed %d", got, r.Indexed)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "memory/big.md is 1.0 MiB; files over 1.0 MiB are not indexed") {
		t.Errorf("warnings = %q", r.Warnings)
	}
	// Exactly the limit is indexed.
	write(t, dir, "memory/big.md", "giraffe\n"+strings.Repeat("x", MaxFileBytes-8))
	if r := search(t, ix, "main", dir, q("giraffe")); len(r.Results) != 2 || len(r.Warnings) != 0 {
		t.Errorf("at the limit: %v %q", paths(r), r.Warnings)
	}
}

func TestTooManyFiles(t *testing.T) {
	ix := open(t)
	dir := t.TempDir()
	for i := range MaxFiles + 1 {
		write(t, dir, fmt.Sprintf("memory/n%04d.md", i), fmt.Sprintf("note %d\n", i))
	}
	r := search(t, ix, "main", dir, q("note"))
	if r.Indexed != MaxFiles || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "the first left out is memory/n2000.md") {
		t.Errorf("indexed %d, warnings %q", r.Indexed, r.Warnings)
	}
}

func TestInjectionQueries(t *testing.T) {
	ix := open(t)
	dir := t.TempDir()
	write(t, dir, "memory/a.md", "alpha and beta together\n")
	write(t, dir, "memory/b.md", "only alpha here\n")
	write(t, dir, "memory/c.md", "text of gamma\n")
	write(t, dir, "memory/d.md", "betamax is not beta\n")
	for _, tc := range []struct {
		query string
		want  []string // paths in any order; nil for no results
	}{
		{`"`, nil},
		{`""`, nil},
		{`*`, nil},
		{`bet*`, nil},  // no prefix search: there is no word "bet"
		{`NEAR(`, nil}, // the word "near" occurs nowhere
		{`NEAR(alpha beta, 1)`, []string{"memory/a.md", "memory/b.md", "memory/d.md"}},
		{`alpha AND beta`, []string{"memory/a.md", "memory/b.md", "memory/d.md"}}, // "and" is a word of a.md
		{`alpha NOT beta`, []string{"memory/a.md", "memory/b.md", "memory/d.md"}}, // NOT excludes nothing
		{`-beta`, []string{"memory/a.md", "memory/d.md"}},
		{`text:gamma`, []string{"memory/c.md"}}, // no column filter: "text" and "gamma" are words
		{`{text}: alpha`, []string{"memory/a.md", "memory/b.md", "memory/c.md"}},
		{`^only`, []string{"memory/b.md"}},
		{`alpha" OR "gamma`, []string{"memory/a.md", "memory/b.md", "memory/c.md"}},
		{`'; DROP TABLE chunks; --`, nil},
		{"\x00alpha\xff", []string{"memory/a.md", "memory/b.md"}},
		{`(((`, nil},
		{`a:b:c`, nil},
	} {
		r := search(t, ix, "main", dir, q(tc.query))
		got := paths(r)
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("query %q: got %v, want %v", tc.query, got, tc.want)
		}
	}
	// The database is intact.
	if got := paths(search(t, ix, "main", dir, q("gamma"))); !slices.Equal(got, []string{"memory/c.md"}) {
		t.Errorf("after the queries: %v", got)
	}
}

func TestConcurrentSearches(t *testing.T) {
	ix := open(t)
	dirs := map[string]string{"a": t.TempDir(), "b": t.TempDir()}
	for agent, dir := range dirs {
		write(t, dir, "MEMORY.md", "# "+agent+"\n\nshared word lemur\n")
		for i := range 20 {
			write(t, dir, fmt.Sprintf("memory/%d.md", i), fmt.Sprintf("lemur %s %d\n", agent, i))
		}
	}
	// The goroutines report with errors, not t: FailNow belongs to the
	// test's own goroutine.
	st := tool(t, ix, "memory_search")
	errs := make(chan error, 16)
	for w := range 16 {
		agent := []string{"a", "b"}[w%2]
		other := []string{"b", "a"}[w%2]
		go func() {
			errs <- func() error {
				for i := range 10 {
					if w < 2 { // two writers change files while the others search
						p := filepath.Join(dirs[agent], "memory", fmt.Sprintf("w%d.md", i))
						if err := os.WriteFile(p, []byte("lemur "+agent+" extra\n"), 0o644); err != nil {
							return err
						}
					}
					env := &tools.Env{AgentID: agent, AgentDir: dirs[agent]}
					res, err := st.Run(context.Background(), env, json.RawMessage(`{"query":"lemur","maxResults":50}`))
					switch {
					case err != nil:
						return fmt.Errorf("agent %s: %w", agent, err)
					case res.IsError:
						return fmt.Errorf("agent %s: %s", agent, res.Text)
					case strings.Contains(res.Text, "lemur "+other):
						return fmt.Errorf("agent %s saw the other's memory: %s", agent, res.Text)
					}
				}
				return nil
			}()
		}()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	for agent, dir := range dirs {
		if r := search(t, ix, agent, dir, map[string]any{"query": "lemur", "maxResults": 50}); r.Indexed != 31 || len(r.Results) != 31 {
			t.Errorf("agent %s: indexed %d, %d results; want 31", agent, r.Indexed, len(r.Results))
		}
	}
}

func TestReopen(t *testing.T) {
	p := filepath.Join(t.TempDir(), "memory.sqlite")
	dir := t.TempDir()
	write(t, dir, "MEMORY.md", "quokka\n")
	ix, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	search(t, ix, "main", dir, q("quokka"))
	// A database of another schema version is rebuilt.
	if _, err := ix.w.Exec(`PRAGMA user_version = 99`); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	if ix, err = Open(p); err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	var n int
	ix.r.QueryRow(`SELECT count(*) FROM files`).Scan(&n)
	if n != 0 {
		t.Errorf("%d files survived the rebuild", n)
	}
	if r := search(t, ix, "main", dir, q("quokka")); len(r.Results) != 1 {
		t.Errorf("after rebuild: %+v", r)
	}
	for _, bad := range []string{"", "a?b"} {
		if _, err := Open(bad); err == nil {
			t.Errorf("Open(%q) succeeded", bad)
		}
	}
}
