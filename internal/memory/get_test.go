package memory

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"talon/internal/tools"
)

func TestGet(t *testing.T) {
	ix := open(t)
	get := tool(t, ix, "memory_get")
	dir, outside := t.TempDir(), t.TempDir()
	var lines []string
	for i := 1; i <= 2500; i++ {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	write(t, dir, "MEMORY.md", strings.Join(lines, "\n")+"\n")
	write(t, dir, "memory/sub/day.md", "one\r\ntwo\r\nthree")
	write(t, dir, "memory/empty.md", "")
	write(t, dir, "memory/big.md", strings.Repeat("x", MaxFileBytes+1))
	write(t, dir, "memory/dir.md/x.md", "x")
	write(t, dir, "notes.md", "not memory")
	write(t, outside, "secret.md", "secret")
	if err := os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(dir, "memory/link.md")); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name       string
		args       map[string]any
		from, to   int
		total      int
		first, end string // first and last line of the text
	}{
		{"defaults", map[string]any{"path": "MEMORY.md"}, 1, 200, 2500, "line 1", "line 200"},
		{"range", map[string]any{"path": "MEMORY.md", "from": 10, "lines": 3}, 10, 12, 2500, "line 10", "line 12"},
		{"max lines", map[string]any{"path": "MEMORY.md", "from": 2, "lines": 2000}, 2, 2001, 2500, "line 2", "line 2001"},
		{"past the end", map[string]any{"path": "MEMORY.md", "from": 2499, "lines": 10}, 2499, 2500, 2500, "line 2499", "line 2500"},
		{"crlf, no final newline", map[string]any{"path": "memory/sub/day.md"}, 1, 3, 3, "one", "three"},
		{"cleaned path", map[string]any{"path": "memory/./sub//day.md", "from": 2}, 2, 3, 3, "two", "three"},
		{"empty file", map[string]any{"path": "memory/empty.md"}, 1, 0, 0, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := call(t, get, "main", dir, tc.args)
			if res.IsError {
				t.Fatal(res.Text)
			}
			var g getResult
			if err := json.Unmarshal([]byte(res.Text), &g); err != nil {
				t.Fatal(err)
			}
			ls := strings.Split(g.Text, "\n")
			if g.Text == "" {
				ls = []string{""}
			}
			if g.From != tc.from || g.To != tc.to || g.TotalLines != tc.total || ls[0] != tc.first || ls[len(ls)-1] != tc.end {
				t.Errorf("got from %d to %d of %d, %q…%q; want %d-%d of %d, %q…%q",
					g.From, g.To, g.TotalLines, ls[0], ls[len(ls)-1], tc.from, tc.to, tc.total, tc.first, tc.end)
			}
			if g.Text != "" && len(ls) != g.To-g.From+1 {
				t.Errorf("%d lines of text for range %d-%d", len(ls), g.From, g.To)
			}
		})
	}

	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{}, `missing required argument "path"`},
		{map[string]any{"path": ""}, `"path" must not be empty`},
		{map[string]any{"path": "/etc/passwd"}, "is absolute"},
		{map[string]any{"path": filepath.Join(dir, "MEMORY.md")}, "is absolute"},
		{map[string]any{"path": "../MEMORY.md"}, "contains .."},
		{map[string]any{"path": "memory/../MEMORY.md"}, "contains .."},
		{map[string]any{"path": "memory/../../etc/x.md"}, "contains .."},
		{map[string]any{"path": `memory\x.md`}, "backslash"},
		{map[string]any{"path": "notes.md"}, "is not a memory file"},
		{map[string]any{"path": "memory/x.txt"}, "is not a memory file"},
		{map[string]any{"path": "memory/"}, "is not a memory file"},
		{map[string]any{"path": "memory"}, "is not a memory file"},
		{map[string]any{"path": "Memory.md"}, "is not a memory file"},
		{map[string]any{"path": "mem\x00ory/x.md"}, "NUL"},
		{map[string]any{"path": "memory/nope.md"}, "memory/nope.md: no such memory file"},
		{map[string]any{"path": "memory/link.md"}, "memory/link.md: is a symbolic link"},
		{map[string]any{"path": "memory/dir.md"}, "memory/dir.md: is a directory"},
		{map[string]any{"path": "memory/big.md"}, "memory files are read up to 1.0 MiB"},
		{map[string]any{"path": "MEMORY.md", "from": 0}, `"from" must be an integer of at least 1`},
		{map[string]any{"path": "MEMORY.md", "from": 2501}, `"from" is 2501 but MEMORY.md has 2500 lines`},
		{map[string]any{"path": "memory/empty.md", "from": 2}, `"from" is 2 but memory/empty.md has 0 lines`},
		{map[string]any{"path": "MEMORY.md", "lines": 0}, `"lines" must be an integer from 1 to 2000`},
		{map[string]any{"path": "MEMORY.md", "lines": 2001}, `"lines" must be an integer from 1 to 2000`},
		{map[string]any{"path": "MEMORY.md", "offset": 1}, `unknown argument "offset"`},
	} {
		res := call(t, get, "main", dir, tc.args)
		if !res.IsError || !strings.Contains(res.Text, tc.want) {
			t.Errorf("%q: got %+v, want an error containing %q", tc.args, res, tc.want)
		}
	}
	for _, tc := range []struct{ dir, want string }{
		{"", "no workspace directory"},
		{filepath.Join(dir, "gone"), "the agent workspace does not exist"},
	} {
		if res := call(t, get, "main", tc.dir, map[string]any{"path": "MEMORY.md"}); !res.IsError || !strings.Contains(res.Text, tc.want) {
			t.Errorf("workspace %q: got %+v, want %q", tc.dir, res, tc.want)
		}
	}
}

func TestSchemas(t *testing.T) {
	ix := open(t)
	for _, tl := range ix.Tools(Options{}) {
		if err := tools.LintSchema(tl.Schema()); err != nil {
			t.Errorf("%s: %v", tl.Name(), err)
		}
		if !tools.ValidName(tl.Name()) || tl.Description() == "" {
			t.Errorf("%s: bad name or no description", tl.Name())
		}
	}
	if _, err := tools.NewRegistry(ix.Tools(Options{})...); err != nil {
		t.Error(err)
	}
}
