package analyze

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fixture is a fake machine in a temp dir: root/usr/bin holds harmless-named programs,
// shells and interpreters (empty executable files; nothing here is run), root/bin links to
// usr/bin, and root/work is the working directory with a planted ./ls.
type fixture struct {
	root, bin, work, home string
	env                   Env
}

var fixturePrograms = []string{
	"ls", "cat", "echo", "grep", "sort", "find", "sed", "env", "busybox", "dash", "bash", "zsh",
	"python3", "python3.12", "perl", "ruby", "node", "php", "lua", "awk", "timeout", "nice",
	"nohup", "stdbuf", "xargs", "tee", "dd", "git", "cp", "mv", "install", "tar", "rsync",
	"sudo", "doas", "time", "true", "rg", "head", "wc", "curl", "make", "less", "toybox", "printf", "[",
	"shuf", "uniq", "xxd", "date", "ptx", "diff", "diff3", "sdiff", "zcat", "egrep", "rgrep", "zgrep",
	"kill", "pkill", "mktemp", "touch", "split", "truncate", "xz", "coreutils", "stty", "setsid",
	"npm", "npx", "yarn", "pnpm", "cargo", "go", "pip", "mvn", "gradle", "bundle", "rake", "composer", "hg",
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{root: tmp, bin: tmp + "/usr/bin", work: tmp + "/work", home: tmp + "/home"}
	for _, d := range []string{f.bin, f.work + "/bin", f.home + "/bin", tmp + "/evil", tmp + "/outside"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exe := func(p string) {
		if err := os.WriteFile(p, []byte("#!/bin/false\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range fixturePrograms {
		exe(f.bin + "/" + p)
	}
	exe(f.work + "/ls")      // planted, reached by ./ls
	exe(f.work + "/bin/ls")  // reached by bin/ls
	exe(f.home + "/bin/ls")  // reached by ~/bin/ls
	exe(tmp + "/evil/cat")   // a different program named cat
	exe(tmp + "/outside/ok") // not on PATH
	if err := os.WriteFile(f.work+"/a.txt", []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.bin+"/notexec", []byte(""), 0o644); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		tmp + "/bin":        "usr/bin",
		f.bin + "/sh":       "dash",
		tmp + "/evil/ls":    "../usr/bin/sh", // a symlink named ls that is really a shell
		tmp + "/evil/grep":  "../usr/bin/busybox",
		f.work + "/rootln":  "/",
		f.work + "/sub":     ".",
		f.bin + "/python":   "python3.12",
		f.bin + "/ll":       "ls", // an alias-like symlink to an allowed program
		tmp + "/evil/timeo": "../usr/bin/timeout",
		f.bin + "/xzcat":    "xz", // as Debian ships it
	}
	for name, target := range links {
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
	}
	f.env = Env{Dir: f.work, PATH: f.bin + ":" + tmp + "/bin", HOME: f.home, FS: HostFS{}}
	return f
}

// harmless is the allowlist of the issue: only programs that cannot run or write anything.
func (f *fixture) harmless() []string {
	return []string{f.bin + "/ls", f.bin + "/cat", f.bin + "/echo", f.bin + "/grep"}
}

// everything allows every program in usr/bin, so a miss under it shows the analyser, not
// the allowlist, refused the command.
func (f *fixture) everything() []string { return []string{f.bin + "/*", "*"} }

// expand replaces R, W, H in a test command with the fixture's root, work and home dirs.
func (f *fixture) expand(s string) string {
	return strings.NewReplacer("@R", f.root, "@W", f.work, "@H", f.home, "@B", f.bin).Replace(s)
}

func TestPositive(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		cmd   string
		paths []string
		argv  [][]string
	}{
		{"ls -la", []string{"ls"}, [][]string{{"ls", "-la"}}},
		{"cat a.txt | grep x", []string{"cat", "grep"}, [][]string{{"cat", "a.txt"}, {"grep", "x"}}},
		{"echo hi && ls", []string{"echo", "ls"}, [][]string{{"echo", "hi"}, {"ls"}}},
		{"echo 'a b' \"c d\" e\\ f", []string{"echo"}, [][]string{{"echo", "a b", "c d", "e f"}}},
		{"ls; ls || cat a.txt", []string{"ls", "ls", "cat"}, nil},
		{"(ls) && { cat a.txt; }", []string{"ls", "cat"}, nil},
		{"ls 2>/dev/null >/dev/null 2>&1", []string{"ls"}, nil},
		{"cat < a.txt", []string{"cat"}, nil},
		{"@B/ls", []string{"ls"}, nil},
		{"@R/bin/ls -l", []string{"ls"}, nil},
		{"ll", []string{"ls"}, [][]string{{"ll"}}},
		{"grep -rn x .", []string{"grep"}, nil},
		{"grep -r x sub", []string{"grep"}, nil},
		{"FOO=bar ls", []string{"ls"}, nil},
		{"ls &", []string{"ls"}, nil},
		{"! ls", []string{"ls"}, nil},
		{"time ls", []string{"ls"}, nil},
		{"ls \\\n -l", []string{"ls"}, [][]string{{"ls", "-l"}}},
		{"cat \"a\\\"b\" 'c\\d'", []string{"cat"}, [][]string{{"cat", `a"b`, `c\d`}}},
		{"ls ~/x", []string{"ls"}, [][]string{{"ls", "@H/x"}}},
	}
	for _, tt := range tests {
		cmd := f.expand(tt.cmd)
		t.Run(cmd, func(t *testing.T) {
			p := Analyze(cmd, f.env)
			if !p.Decidable() {
				t.Fatalf("not decidable: %v\nplan: %+v", p.AllReasons(), p)
			}
			var got []string
			for _, s := range p.Segments {
				got = append(got, s.Path)
			}
			var want []string
			for _, n := range tt.paths {
				want = append(want, f.bin+"/"+n)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("paths (-want +got):\n%s", d)
			}
			if tt.argv != nil {
				var argv [][]string
				for _, s := range p.Segments {
					argv = append(argv, s.Argv)
				}
				for _, a := range tt.argv {
					for i := range a {
						a[i] = f.expand(a[i])
					}
				}
				if d := cmp.Diff(tt.argv, argv); d != "" {
					t.Errorf("argv (-want +got):\n%s", d)
				}
			}
			if !MatchesAllowlist(p, f.harmless(), f.env) {
				t.Errorf("not a hit under %v", f.harmless())
			}
		})
	}
}

func TestUnwrap(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		cmd      string
		wrappers []string
		argv     []string
	}{
		{"env -u BAR FOO=1 ls -l", []string{"env"}, []string{"ls", "-l"}},
		{"env --unset=BAR --ignore-sig=INT -- FOO=1 ls", []string{"env"}, []string{"ls"}},
		{"nice -5 ls", []string{"nice"}, []string{"ls"}},
		{"nice --adj=3 timeout --fore --sig=KILL 5 ls", []string{"nice", "timeout"}, []string{"ls"}},
		{"setsid -f ls", []string{"setsid"}, []string{"ls"}},
		{"env time -f %e --quiet ls", []string{"env", "time"}, []string{"ls"}},
		{"nice -n 5 nohup timeout -s KILL 5 stdbuf -oL cat a.txt", []string{"nice", "nohup", "timeout", "stdbuf"}, []string{"cat", "a.txt"}},
		{"command ls", []string{"command"}, []string{"ls"}},
		{"exec ls", []string{"exec"}, []string{"ls"}},
		{"env -- ls", []string{"env"}, []string{"ls"}},
		{"timeout --kill-after=1 5s echo hi", []string{"timeout"}, []string{"echo", "hi"}},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			p := Analyze(tt.cmd, f.env)
			if !MatchesAllowlist(p, f.harmless(), f.env) {
				t.Fatalf("not a hit: %v", p.AllReasons())
			}
			s := p.Segments[0]
			var names []string
			for _, w := range s.Wrappers {
				names = append(names, w.Name)
			}
			if d := cmp.Diff(tt.wrappers, names); d != "" {
				t.Errorf("wrappers (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.argv, s.Argv); d != "" {
				t.Errorf("argv (-want +got):\n%s", d)
			}
		})
	}
}

func TestResolution(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		cmd, path string
	}{
		{"./ls", "@W/ls"},
		{"bin/ls", "@W/bin/ls"},
		{"ls", "@B/ls"},
		{"~/bin/ls", "@H/bin/ls"},
		{"sub/sub/./ls", "@W/ls"},
		{"@R/evil/ls", "@B/dash"},
		{"@R/evil/grep", "@B/busybox"},
		{"python", "@B/python3.12"},
		{"sh", "@B/dash"},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			p := Analyze(f.expand(tt.cmd), f.env)
			if len(p.Segments) != 1 {
				t.Fatalf("segments: %+v", p)
			}
			if got, want := p.Segments[0].Path, f.expand(tt.path); got != want {
				t.Errorf("path = %q, want %q (reasons %v)", got, want, p.AllReasons())
			}
		})
	}
}

func TestStructure(t *testing.T) {
	f := newFixture(t)
	p := Analyze("ls $(cat `echo a.txt`) <(grep x a.txt) > out.txt <<EOF\nhi\nEOF", f.env)
	var where []string
	for _, s := range p.Segments {
		where = append(where, filepathBase(s.Path)+"@"+s.Where)
	}
	want := []string{"cat@cmdsubst", "echo@cmdsubst/cmdsubst", "grep@procsubst", "ls@"}
	if d := cmp.Diff(want, sortedCopy(where)); d != "" {
		t.Errorf("segments (-want +got):\n%s", d)
	}
	ls := p.Segments[len(p.Segments)-1]
	if ls.Argv != nil {
		t.Errorf("argv of a non-literal command should be nil, got %q", ls.Argv)
	}
	var codes []string
	for _, r := range ls.Reasons {
		codes = append(codes, r.Code)
	}
	for _, c := range []string{CodeNonLiteral, CodeRedirect, CodeHeredoc} {
		if !strings.Contains(strings.Join(codes, " "), c) {
			t.Errorf("reasons %v lack %s", codes, c)
		}
	}
	if len(ls.Redirects) != 2 || !ls.Redirects[0].Write || ls.Redirects[0].Target != "out.txt" {
		t.Errorf("redirects = %+v", ls.Redirects)
	}
}

func TestMatchPattern(t *testing.T) {
	env := Env{HOME: "/home/u", FS: HostFS{}}
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"/usr/bin/ls", "/usr/bin/ls", true},
		{"/usr/bin/ls", "/usr/bin/lsx", false},
		{"ls", "/usr/bin/ls", false}, // bare names never match
		{"*", "/usr/bin/ls", true},
		{"/usr/bin/*", "/usr/bin/ls", true},
		{"/usr/*", "/usr/bin/ls", false}, // * stops at /
		{"/usr/**", "/usr/bin/ls", true},
		{"/usr/bin/l?", "/usr/bin/ls", true},
		{"/usr/bin/l?", "/usr/bin/l/", false},
		{"~/Projects/**/bin/rg", "/home/u/Projects/x/y/bin/rg", true},
		{"~/Projects/**/bin/rg", "/home/v/Projects/x/bin/rg", false},
		{"/USR/BIN/LS", "/usr/bin/ls", false}, // case-sensitive on POSIX
		{"/usr/bin/l.", "/usr/bin/ls", false}, // . is literal
		{"/usr/bin/ls", "ls", false},          // the target must be absolute
		{"", "/usr/bin/ls", false},
	}
	for _, tt := range tests {
		if got := MatchPattern(tt.pattern, tt.path, env); got != tt.want {
			t.Errorf("MatchPattern(%q, %q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}

func TestPatternRealpath(t *testing.T) {
	f := newFixture(t)
	// root/bin is a symlink to usr/bin, so a literal pattern through it names the same file.
	p := Analyze("ls", f.env)
	if !MatchesAllowlist(p, []string{f.root + "/bin/ls"}, f.env) {
		t.Errorf("pattern through a symlinked dir should match: %v", p.AllReasons())
	}
}

func TestNilAndEmpty(t *testing.T) {
	var p *Plan
	if p.Decidable() || p.Hit(func(Segment) bool { return true }) {
		t.Error("nil plan must not be decidable")
	}
	f := newFixture(t)
	for _, cmd := range []string{"", "   ", "# comment", "\n\n"} {
		p := Analyze(cmd, f.env)
		if p.Decidable() || MatchesAllowlist(p, []string{"*"}, f.env) {
			t.Errorf("%q: empty command must be a miss", cmd)
		}
	}
	if (&Plan{Segments: []Segment{{Path: "/usr/bin/ls", Argv: []string{"ls"}}}}).Hit(nil) {
		t.Error("nil satisfied must be a miss")
	}
}

func filepathBase(p string) string { return filepath.Base(p) }

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestRulesAllow shows the rules are not blanket bans: the safe forms of programs with
// dangerous flags are hits when the allowlist names them.
func TestRulesAllow(t *testing.T) {
	f := newFixture(t)
	for _, cmd := range []string{
		"sort -r a.txt",
		"sort -k 2 -t , a.txt",
		"find . -name '*.go' -type f",
		"sort -rn a.txt",
		"sort --rev --key=2 a.txt",
		"sort --check=quiet a.txt",
		"sort -- -o a.txt", // -o is an input file after --
		"sed --sandbox -n 1p a.txt",
		"sed --sand -n 1p a.txt",
		"sed --sandbox -e s/a/b/ -- a.txt",
		"grep -rn x .",
		"grep -r x sub",
		"grep -d read x a.txt",
		"grep --dir=skip x a.txt",
		"grep -e x -- -r", // a file named -r
		"grep -c o a.txt", // an o that is no option
		"egrep 'a|b' a.txt",
		"rg TODO",
		"tee",
		"tee -a",
		"shuf -n 1 a.txt",
		"shuf -e a b",
		"uniq a.txt",
		"uniq -c a.txt -",
		"uniq -5 a.txt",
		"xxd a.txt",
		"xxd -c 8 -g 2 a.txt",
		"xxd -r -p a.txt",
		"xxd -ps a.txt -",
		"date +%s",
		"date -u -d yesterday +%F",
		"ptx a.txt a.txt",
		"diff -u a.txt a.txt",
		"diff -r sub .",
		"sdiff a.txt a.txt",
		"diff3 a.txt a.txt a.txt",
		"zcat a.gz",
		"dd if=a.txt",
		"timeout 5 sort a.txt",
		"timeout --sig=KILL --fore 5 sort a.txt",
		"nice -n 5 ls",
		"nice --adj=3 ls",
		"stdbuf -oL --err=0 cat a.txt",
		"env time -p ls",
		"head -n 1 a.txt | wc -l",
		"[ -f a.txt ] && cat a.txt",
	} {
		t.Run(cmd, func(t *testing.T) {
			p := Analyze(cmd, f.env)
			if !MatchesAllowlist(p, f.everything(), f.env) {
				t.Errorf("not a hit under %v: %v", f.everything(), p.AllReasons())
			}
		})
	}
}

// TestHost resolves against this machine, as production does with HostFS.
func TestHost(t *testing.T) {
	ls, err := filepath.EvalSymlinks("/usr/bin/ls")
	if err != nil {
		t.Skip("no /usr/bin/ls here")
	}
	env := Env{Dir: t.TempDir(), PATH: "/usr/local/bin:/usr/bin:/bin", HOME: "/root"}
	p := Analyze("ls -la", env)
	if !p.Decidable() || p.Segments[0].Path != ls {
		t.Fatalf("ls -la: %+v", p)
	}
	if !MatchesAllowlist(p, []string{"/usr/bin/ls"}, env) {
		t.Errorf("ls -la should match /usr/bin/ls")
	}
	if sh, err := filepath.EvalSymlinks("/bin/sh"); err == nil {
		p := Analyze("sh -c id", env)
		if p.Decidable() || p.Segments[0].Path != sh {
			t.Errorf("sh -c id: %+v", p)
		}
	}
}

// TestVars: the exec call's own environment is judged like assignments in
// the command text — PATH or a loader variable there is a miss, whatever
// the allowlist says; harmless variables change nothing.
func TestVars(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		vars []string
		hit  bool
	}{
		{nil, true},
		{[]string{"OPENCLAW_SHELL=exec", "LANG=C", "COLOR=1"}, true},
		{[]string{"PATH=" + f.root + "/evil"}, false},
		{[]string{"LD_PRELOAD=/tmp/x.so"}, false},
		{[]string{"BASH_ENV=/tmp/x"}, false},
		{[]string{"GIT_SSH_COMMAND=id"}, false},
		{[]string{"A=1", "HOME=/"}, false},
	}
	for _, c := range cases {
		env := f.env
		env.Vars = c.vars
		p := Analyze("ls -la", env)
		if got := MatchesAllowlist(p, f.everything(), env); got != c.hit {
			t.Errorf("vars %v: hit = %v, want %v (%v)", c.vars, got, c.hit, p.AllReasons())
		}
		if !c.hit && !strings.Contains(p.AllReasons()[0].Detail, "the call's environment") {
			t.Errorf("vars %v: reason %v does not say where the variable came from", c.vars, p.AllReasons())
		}
	}
}
