package analyze

import (
	"path"
	"strings"
	"testing"
	"time"
)

// FuzzAnalyze checks that Analyze never panics, finishes quickly, and never reports a hit
// unless every segment resolved to an absolute path inside the allowlist with no reasons.
func FuzzAnalyze(f *testing.F) {
	for _, s := range []string{
		"ls -la", "cat a.txt | grep x", "echo hi && ls", "env sh -c id", "busybox sh", "./ls",
		"sort -o x", "grep -R x /", "find . -exec sh \\;", "'s'h", "\\sh", "\"$(echo sh)\"",
		"ls${IFS}x", "{a,b}", "cat *", "PATH=/x ls", "ѕh", "ls\nsh", "ls <<EOF\nx\nEOF",
		"f() { ls; }; f", "(ls) > x", "timeout 5 nice -n 1 ls", "ls $(ls `ls`) <(ls)",
		"sort --outp=F a", "sort -mo F", "grep --dir=rec x /", "grep -d", "xxd -c", "xxd -r - F",
		"uniq a -c b", "sed --in-pl x", "env --=x ls", "env -u", "nice -5 --adj", "date --se x",
	} {
		f.Add(s)
	}
	fx := newFixture(f)
	allow := []string{fx.bin + "/ls", fx.bin + "/cat", fx.bin + "/echo", fx.bin + "/grep", fx.bin + "/l?"}
	f.Fuzz(func(t *testing.T, cmd string) {
		start := time.Now()
		p := Analyze(cmd, fx.env)
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("analysis took %v", d)
		}
		hit := MatchesAllowlist(p, allow, fx.env)
		if !hit {
			return
		}
		if !p.Decidable() || len(p.Reasons) > 0 || len(p.Segments) == 0 {
			t.Fatalf("hit for an undecidable plan: %+v", p)
		}
		for _, s := range p.Segments {
			if len(s.Reasons) > 0 || !path.IsAbs(s.Path) || s.Argv == nil {
				t.Fatalf("hit with an unresolved segment: %+v", s)
			}
			if !strings.HasPrefix(s.Path, fx.bin+"/") || !containsStr([]string{"ls", "cat", "echo", "grep"}, path.Base(s.Path)) {
				t.Fatalf("hit with a segment outside the allowlist: %s", s.Path)
			}
		}
	})
}
