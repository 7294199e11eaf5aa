package memory

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"talon/internal/tools"
)

// open opens an index in a temporary directory.
func open(t testing.TB) *Index {
	t.Helper()
	ix, err := Open(filepath.Join(t.TempDir(), "state", "memory.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ix.Close(); err != nil {
			t.Error(err)
		}
	})
	return ix
}

// write creates a file under dir, with its parent directories.
func write(t testing.TB, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tool returns the index's tool of that name.
func tool(t testing.TB, ix *Index, name string) tools.Tool {
	t.Helper()
	for _, tl := range ix.Tools(Options{}) {
		if tl.Name() == name {
			return tl
		}
	}
	t.Fatalf("no tool %s", name)
	return nil
}

// call runs a tool and returns its result; an error return fails the test.
func call(t testing.TB, tl tools.Tool, agent, dir string, args any) tools.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tl.Run(context.Background(), &tools.Env{AgentID: agent, AgentDir: dir}, raw)
	if err != nil {
		t.Fatalf("%s %s: %v", tl.Name(), raw, err)
	}
	return res
}

// search runs memory_search and decodes its answer; a Result error fails
// the test.
func search(t testing.TB, ix *Index, agent, dir string, args any) searchResult {
	t.Helper()
	res := call(t, tool(t, ix, "memory_search"), agent, dir, args)
	if res.IsError {
		t.Fatalf("memory_search %v: %s", args, res.Text)
	}
	var out searchResult
	if err := json.Unmarshal([]byte(res.Text), &out); err != nil {
		t.Fatalf("memory_search answer %s: %v", res.Text, err)
	}
	if out.Results == nil || out.Warnings == nil {
		t.Fatalf("memory_search answer has null lists: %s", res.Text)
	}
	return out
}

// q is a memory_search call with just a query.
func q(query string) map[string]any { return map[string]any{"query": query} }

// paths lists the results' paths.
func paths(r searchResult) []string {
	var ps []string
	for _, h := range r.Results {
		ps = append(ps, h.Path)
	}
	return ps
}

// mustRoot opens dir as an os.Root, closed when the test ends.
func mustRoot(t testing.TB, dir string) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}
