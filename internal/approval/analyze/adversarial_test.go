package analyze

import (
	"strings"
	"testing"
)

// TestAdversarial runs commands that bypassed first-word approvals elsewhere, or try to,
// under an allowlist of only harmless programs: every one must be a miss. Most must also
// be a miss when every program in usr/bin is allowed, which shows the analyser refused
// them; the few marked pathOnly are misses because they resolve to a program the harmless
// allowlist does not name (a planted ./ls, a copy named cat), which is the point.
func TestAdversarial(t *testing.T) {
	f := newFixture(t)
	long := "ls " + strings.Repeat("a", MaxCommandBytes)
	tests := []struct {
		cmd      string
		pathOnly bool // a miss only because the resolved path is not allowlisted
		code     string
	}{
		// The named bypasses.
		{cmd: "env sh -c 'id'", code: CodeShell},
		{cmd: "busybox sh -c id", code: CodeMultiCall},
		{cmd: "toybox sh", code: CodeMultiCall},
		{cmd: "./ls", pathOnly: true},
		{cmd: "bin/ls", pathOnly: true},
		{cmd: "sort -o /etc/passwd a.txt", code: CodeWrites},
		{cmd: "sort --output=x a.txt", code: CodeWrites},
		{cmd: "sort -ro x a.txt", code: CodeWrites},
		{cmd: "sort --compress-program=sh a.txt", code: CodeWrites},
		{cmd: "grep -R pattern /", code: CodeReadsOut},
		{cmd: "grep -r pattern /etc", code: CodeReadsOut},
		{cmd: "grep -r pattern ../..", code: CodeReadsOut},
		{cmd: "grep -r pattern rootln/etc", code: CodeReadsOut},
		{cmd: "grep --recursive x @R/outside", code: CodeReadsOut},
		{cmd: "find . -exec sh -c id \\;", code: CodeRunsCmds},
		{cmd: "find . -execdir id +", code: CodeRunsCmds},
		{cmd: "find . -delete", code: CodeWrites},
		{cmd: "find . -fprint out", code: CodeWrites},
		// Shells and interpreters, however they are reached.
		{cmd: "bash -lc ls", code: CodeShell},
		{cmd: "sh", code: CodeShell},
		{cmd: "dash -c ls", code: CodeShell},
		{cmd: "zsh -c ls", code: CodeShell},
		{cmd: "python3 -c 'import os'", code: CodeInterpreter},
		{cmd: "python3.12 x.py", code: CodeInterpreter},
		{cmd: "python -c 1", code: CodeInterpreter},
		{cmd: "perl -e 'system(1)'", code: CodeInterpreter},
		{cmd: "ruby -e 1", code: CodeInterpreter},
		{cmd: "node -e 1", code: CodeInterpreter},
		{cmd: "php -r 1", code: CodeInterpreter},
		{cmd: "lua -e 1", code: CodeInterpreter},
		{cmd: "awk 'BEGIN{system(\"id\")}'", code: CodeInterpreter},
		{cmd: "xargs sh -c id", code: CodeRunsCmds},
		{cmd: "echo id | xargs", code: CodeRunsCmds},
		{cmd: "sed -i s/a/b/ a.txt", code: CodeWrites},
		{cmd: "sed 1e a.txt", code: CodeRunsCmds},
		{cmd: "tee out.txt", code: CodeWrites},
		{cmd: "dd if=a.txt of=b", code: CodeWrites},
		{cmd: "cp a.txt b", code: CodeWrites},
		{cmd: "mv a.txt b", code: CodeWrites},
		{cmd: "install a.txt b", code: CodeWrites},
		{cmd: "tar -xf x.tar", code: CodeWrites},
		{cmd: "rsync a b", code: CodeWrites},
		{cmd: "git -c core.pager=id log", code: CodeRunsCmds},
		{cmd: "git --config-env=core.editor=X commit", code: CodeRunsCmds},
		{cmd: "sudo ls", code: CodePrivilege},
		{cmd: "doas ls", code: CodePrivilege},
		{cmd: "curl -o x http://example.com", code: CodeNetwork},
		{cmd: "make", code: CodeRunsCmds},
		{cmd: "less a.txt", code: CodeRunsCmds},
		{cmd: "rg --pre sh x", code: CodeRunsCmds},
		{cmd: "rg x /", code: CodeReadsOut},
		// Wrappers hiding the real program.
		{cmd: "env -S 'sh -c id'", code: CodeWrapper},
		{cmd: "env -C / ls", code: CodeWrapper},
		{cmd: "env PATH=@R/evil ls", code: CodeAssignment},
		{cmd: "env LD_PRELOAD=/tmp/x.so ls", code: CodeAssignment},
		{cmd: "nice -n 5 sh", code: CodeShell},
		{cmd: "nohup bash", code: CodeShell},
		{cmd: "timeout 5 python3 -c 1", code: CodeInterpreter},
		{cmd: "stdbuf -oL sh", code: CodeShell},
		{cmd: "command sh", code: CodeShell},
		{cmd: "command -p ls", code: CodeWrapper},
		{cmd: "command -v ls", code: CodeWrapper},
		{cmd: "exec sh", code: CodeShell},
		{cmd: "exec -a ls sh", code: CodeWrapper},
		{cmd: "time -o out ls", code: CodeNotFound}, // bash keyword: -o is the command
		{cmd: "env time -o out ls", code: CodeWrites},
		{cmd: "@R/evil/timeo 5 ls", code: CodeRunsCmds}, // timeout reached under another name
		{cmd: "env env env env env env env env env env env env env env env env env env ls", code: CodeLimit},
		{cmd: "env", code: CodeWrapper},
		{cmd: "timeout 5", code: CodeWrapper},
		// Quoting and escaping.
		{cmd: "'s'h -c id", code: CodeShell},
		{cmd: "\\sh -c id", code: CodeShell},
		{cmd: "\"s\"\"h\" -c id", code: CodeShell},
		{cmd: "\"$(echo sh)\" -c id", code: CodeNonLiteral},
		{cmd: "`echo sh` -c id", code: CodeNonLiteral},
		{cmd: "$'\\x73h' -c id", code: CodeNonLiteral},
		{cmd: "ls $'\\x41'", code: CodeNonLiteral},
		{cmd: "s\\\nh -c id", code: CodeShell},
		// Expansions.
		{cmd: "$SHELL -c id", code: CodeNonLiteral},
		{cmd: "ls${IFS}-la", code: CodeNonLiteral},
		{cmd: "IFS=,; ls", code: CodeAssignment},
		{cmd: "${x:-sh} -c id", code: CodeNonLiteral},
		{cmd: "ls $((1+1))", code: CodeNonLiteral},
		{cmd: "cat *", code: CodeGlob},
		{cmd: "/usr/bin/s? -c id", code: CodeGlob},
		{cmd: "@B/l[s]", code: CodeGlob},
		{cmd: "@B/l[s\"]\"", code: CodeGlob},
		{cmd: "ls [a]", code: CodeGlob},
		{cmd: "cat @(a.txt)", code: CodeGlob},
		{cmd: "{sh,-c,id}", code: CodeBrace},
		{cmd: "cat a{.txt,}", code: CodeBrace},
		{cmd: "ls ~root", code: CodeTilde},
		{cmd: "ls a=~/x", code: CodeTilde},
		// PATH and definition tricks.
		{cmd: "PATH=@R/evil:$PATH ls", code: CodeAssignment},
		{cmd: "PATH=@R/evil; ls", code: CodeAssignment},
		{cmd: "export PATH=@R/evil; ls", code: CodeCompound}, // declare-like clauses
		{cmd: "cd @R/evil && ./ls", code: CodeBuiltin},
		{cmd: "@R/evil/ls -c id", code: CodeShell},    // a symlink named ls to sh
		{cmd: "@R/evil/grep sh", code: CodeMultiCall}, // a symlink named grep to busybox
		{cmd: "@R/evil/cat a.txt", pathOnly: true},    // a different program named cat
		{cmd: "ls() { sh; }; ls", code: CodeFunction},
		{cmd: "alias ls=sh; ls", code: CodeBuiltin},
		{cmd: "eval sh", code: CodeBuiltin},
		{cmd: ". ./x.sh", code: CodeBuiltin},
		{cmd: "source x.sh", code: CodeBuiltin},
		{cmd: "ls; sh", code: CodeShell},
		{cmd: "ls | sh", code: CodeShell},
		{cmd: "ls || sh &", code: CodeShell},
		{cmd: "(sh)", code: CodeShell},
		{cmd: "{ sh; }", code: CodeShell},
		{cmd: "ls $(sh)", code: CodeShell},
		{cmd: "cat <(sh)", code: CodeShell},
		{cmd: "if true; then ls; fi", code: CodeCompound},
		{cmd: "for x in a; do ls; done", code: CodeCompound},
		{cmd: "notexec", code: CodeNotFound},
		{cmd: "nosuchprogram", code: CodeNotFound},
		{cmd: "ls > out.txt", code: CodeRedirect},
		{cmd: "ls >> ~/.bashrc", code: CodeRedirect},
		{cmd: "ls &> out", code: CodeRedirect},
		{cmd: "ls >&out", code: CodeRedirect},
		{cmd: "(ls) > out", code: CodeRedirect},
		{cmd: "cat <<EOF\nid\nEOF", code: CodeHeredoc},
		{cmd: "cat <<< id", code: CodeHeredoc},
		{cmd: "cat < /dev/tcp/example.com/80", code: CodeNetwork},
		{cmd: "> out", code: CodeEmpty},
		// Unicode look-alikes, control characters, newlines, size.
		{cmd: "ѕh -c id", code: CodeNonASCII}, // Cyrillic dze
		{cmd: "lѕ", code: CodeNonASCII},
		{cmd: "ls\u200b", code: CodeControl},
		{cmd: "ls\u202e", code: CodeControl},
		{cmd: "ls\x00; sh", code: CodeControl},
		{cmd: "ls\rsh", code: CodeControl},
		{cmd: "ls\x1b[2Ksh", code: CodeControl},
		{cmd: "ls\nsh", code: CodeShell},
		{cmd: "ls 'a\nb'", code: CodeNewline},
		{cmd: "ls \xff", code: CodeControl},
		{cmd: long, code: CodeTooLong},
		{cmd: "ls 'unterminated", code: CodeParse},
		{cmd: "ls ((", code: CodeParse},
	}
	if len(tests) < 50 {
		t.Fatalf("the adversarial suite needs at least 50 commands, has %d", len(tests))
	}
	for _, tt := range tests {
		cmd := f.expand(tt.cmd)
		name := cmd
		if len(name) > 60 {
			name = name[:60]
		}
		t.Run(name, func(t *testing.T) {
			p := Analyze(cmd, f.env)
			if MatchesAllowlist(p, f.harmless(), f.env) {
				t.Fatalf("a hit under the harmless allowlist: %+v", p)
			}
			if tt.pathOnly {
				return
			}
			if p.Decidable() || MatchesAllowlist(p, f.everything(), f.env) {
				t.Fatalf("decidable or a hit when everything is allowed: %+v", p)
			}
			var codes []string
			for _, r := range p.AllReasons() {
				codes = append(codes, r.Code)
			}
			if tt.code != "" && !containsStr(codes, tt.code) {
				t.Errorf("reasons %v lack %q: %v", codes, tt.code, p.AllReasons())
			}
		})
	}
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
