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
		{cmd: "sort --compress-program=sh a.txt", code: CodeRunsCmds},
		{cmd: "grep -R pattern /", code: CodeReadsOut},
		{cmd: "grep -r pattern /etc", code: CodeReadsOut},
		{cmd: "grep -r pattern ../..", code: CodeReadsOut},
		{cmd: "grep -r pattern rootln/etc", code: CodeReadsOut},
		{cmd: "grep --recursive x @R/outside", code: CodeReadsOut},
		{cmd: "find . -exec sh -c id \\;", code: CodeRunsCmds},
		{cmd: "find . -execdir id +", code: CodeRunsCmds},
		{cmd: "find . -delete", code: CodeWrites},
		{cmd: "find . -fprint out", code: CodeWrites},
		// Issue 17: programs configured by files the agent can write. .git/config can name
		// core.fsmonitor, core.pager, ! aliases, hooks, core.sshCommand, diff.external and
		// filters, so no git command is safe, however it is reached.
		{cmd: "git status", code: CodeConfigured},
		{cmd: "git log --oneline", code: CodeConfigured},
		{cmd: "git diff", code: CodeConfigured},
		{cmd: "git -C sub status", code: CodeConfigured},
		{cmd: "git --no-pager log", code: CodeConfigured},
		{cmd: "git rev-parse HEAD", code: CodeConfigured},
		{cmd: "@B/git status", code: CodeConfigured},
		{cmd: "env git status", code: CodeConfigured},
		{cmd: "command git status", code: CodeConfigured},
		{cmd: "nice -n 1 timeout 5 git status", code: CodeConfigured},
		{cmd: "ls && git status", code: CodeConfigured},
		{cmd: "hg status", code: CodeConfigured},
		{cmd: "make -n", code: CodeConfigured},
		{cmd: "npm test", code: CodeConfigured},
		{cmd: "npm --version", code: CodeConfigured},
		{cmd: "npx tsc", code: CodeConfigured},
		{cmd: "yarn build", code: CodeConfigured},
		{cmd: "pnpm install", code: CodeConfigured},
		{cmd: "cargo build", code: CodeConfigured},
		{cmd: "go test ./...", code: CodeConfigured},
		{cmd: "go version", code: CodeConfigured},
		{cmd: "pip install .", code: CodeConfigured},
		{cmd: "python3 -m pip install .", code: CodeInterpreter},
		{cmd: "mvn package", code: CodeConfigured},
		{cmd: "gradle build", code: CodeConfigured},
		{cmd: "bundle exec rake", code: CodeConfigured},
		{cmd: "rake", code: CodeConfigured},
		{cmd: "composer install", code: CodeConfigured},
		// Issue 17: GNU long options abbreviated to any unique prefix, in every form.
		{cmd: "sort --outp=F a.txt", code: CodeWrites},
		{cmd: "sort --outp F a.txt", code: CodeWrites},
		{cmd: "sort --o=F a.txt", code: CodeWrites},
		{cmd: "sort --output F a.txt", code: CodeWrites},
		{cmd: "sort a.txt --outp=F", code: CodeWrites}, // options after operands
		{cmd: "sort -mo F a.txt", code: CodeWrites},
		{cmd: "sort -oF a.txt", code: CodeWrites},
		{cmd: "sort -rnoF a.txt", code: CodeWrites},
		{cmd: "sort -k 1 -o F a.txt", code: CodeWrites},
		{cmd: "sort -t o -o F a.txt", code: CodeWrites}, // an o that is -t's value, then -o
		{cmd: "sort --compress-prog=sh a.txt", code: CodeRunsCmds},
		{cmd: "sort --compress=sh a.txt", code: CodeRunsCmds},
		{cmd: "sort --co sh a.txt", code: CodeRunsCmds},
		{cmd: "sort --c=sh a.txt", code: CodeOption}, // --check or --compress-program: ambiguous
		{cmd: "sort -T /etc a.txt", code: CodeWrites},
		{cmd: "sort --temp=/etc a.txt", code: CodeWrites},
		{cmd: "sort --nope a.txt", code: CodeOption},
		{cmd: "sort -q a.txt", code: CodeOption},
		{cmd: "sed --in-pl s/a/b/ a.txt", code: CodeWrites},
		{cmd: "sed --in=.bak s/a/b/ a.txt", code: CodeWrites},
		{cmd: "sed --in-place=.bak --sandbox s/a/b/ a.txt", code: CodeWrites},
		{cmd: "sed --sand -i s/a/b/ a.txt", code: CodeWrites},
		{cmd: "sed -ni 1p a.txt", code: CodeWrites},
		{cmd: "sed -in 1p a.txt", code: CodeWrites},
		{cmd: "sed -i.bak 1p a.txt", code: CodeWrites},
		{cmd: "sed -n -e 1p -i a.txt", code: CodeWrites},
		{cmd: "sed 1p a.txt --in-pl", code: CodeWrites},
		{cmd: "sed --s 1p a.txt", code: CodeOption}, // --sandbox, --separate or --silent
		{cmd: "sed -n 'w out' a.txt", code: CodeRunsCmds},
		{cmd: "grep --recur x /", code: CodeReadsOut},
		{cmd: "grep --rec x /etc", code: CodeReadsOut},
		{cmd: "grep --deref x .", code: CodeReadsOut},
		{cmd: "grep --dereference-r x .", code: CodeReadsOut},
		{cmd: "grep -nr x /", code: CodeReadsOut},
		{cmd: "grep -e x -r /", code: CodeReadsOut},
		{cmd: "grep x / -r", code: CodeReadsOut},
		{cmd: "grep -d recurse x /", code: CodeReadsOut},
		{cmd: "grep -drecurse x /", code: CodeReadsOut},
		{cmd: "grep --directories=rec x /", code: CodeReadsOut},
		{cmd: "grep --dir=recurse x /", code: CodeReadsOut},
		{cmd: "grep --dir rec x /", code: CodeReadsOut},
		{cmd: "grep -d re x /", code: CodeOption}, // read or recurse: ambiguous
		{cmd: "grep -Rx x", code: CodeReadsOut},
		{cmd: "egrep -r x /etc", code: CodeReadsOut},
		{cmd: "rgrep x /etc", code: CodeReadsOut},
		{cmd: "zgrep --recur x /", code: CodeReadsOut},
		{cmd: "grep --frobnicate x a.txt", code: CodeOption},
		{cmd: "diff -r / sub", code: CodeReadsOut},
		{cmd: "diff --recur /etc .", code: CodeReadsOut},
		{cmd: "diff -r --from-file=/etc sub", code: CodeReadsOut},
		{cmd: "zcat -r /etc", code: CodeReadsOut},
		{cmd: "zcat --rec /etc", code: CodeReadsOut},
		// Issue 17: writers through their operands and options.
		{cmd: "shuf -o F a.txt", code: CodeWrites},
		{cmd: "shuf -oF a.txt", code: CodeWrites},
		{cmd: "shuf --out=F a.txt", code: CodeWrites},
		{cmd: "shuf --output F a.txt", code: CodeWrites},
		{cmd: "shuf -e a b -o F", code: CodeWrites},
		{cmd: "shuf -reo F a", code: CodeWrites},
		{cmd: "uniq a.txt F", code: CodeWrites},
		{cmd: "uniq - F", code: CodeWrites},
		{cmd: "uniq -c a.txt F", code: CodeWrites},
		{cmd: "uniq a.txt -c F", code: CodeWrites},
		{cmd: "uniq -f 1 a.txt F", code: CodeWrites},
		{cmd: "uniq -- a.txt F", code: CodeWrites},
		{cmd: "uniq --all-rep a.txt F", code: CodeWrites},
		{cmd: "xxd -r -p - F", code: CodeWrites},
		{cmd: "xxd -r - F", code: CodeWrites},
		{cmd: "xxd -rp - F", code: CodeWrites},
		{cmd: "xxd --revert -ps - F", code: CodeWrites},
		{cmd: "xxd a.txt F", code: CodeWrites},
		{cmd: "xxd -c 8 a.txt F", code: CodeWrites},
		{cmd: "xxd -c8 a.txt F", code: CodeWrites},
		{cmd: "xxd -cols 8 a.txt F", code: CodeWrites}, // counted as one operand too many
		{cmd: "xxd -- a.txt F", code: CodeWrites},
		{cmd: "xxd -Z a.txt", code: CodeOption},
		{cmd: "tee -a F", code: CodeWrites},
		{cmd: "tee --app F", code: CodeWrites},
		{cmd: "tee -- -a", code: CodeWrites},
		{cmd: "tee -", code: CodeWrites}, // GNU tee writes a file named -
		{cmd: "ptx -G a.txt F", code: CodeWrites},
		{cmd: "ptx --trad a.txt F", code: CodeWrites},
		{cmd: "dd of=F", code: CodeWrites},
		{cmd: "sdiff -o F a.txt a.txt", code: CodeWrites},
		{cmd: "sdiff --out=F a.txt a.txt", code: CodeWrites},
		{cmd: "sdiff --diff-prog=sh a.txt a.txt", code: CodeRunsCmds},
		{cmd: "diff3 --diff-program=sh a.txt a.txt a.txt", code: CodeRunsCmds},
		{cmd: "diff3 --diff=sh a.txt a.txt a.txt", code: CodeRunsCmds},
		{cmd: "env time --out=F ls", code: CodeWrites},
		{cmd: "env time -oF ls", code: CodeWrites},
		{cmd: "mktemp", code: CodeWrites},
		{cmd: "touch F", code: CodeWrites},
		{cmd: "split a.txt", code: CodeWrites},
		{cmd: "truncate -s 0 a.txt", code: CodeWrites},
		{cmd: "xzcat a.xz", code: CodeWrites}, // xz itself, which can write and delete
		{cmd: "coreutils --coreutils-prog=rm a.txt", code: CodeMultiCall},
		// Other processes and the machine.
		{cmd: "kill 1", code: CodeProcesses},
		{cmd: "kill -9 -1", code: CodeProcesses},
		{cmd: "pkill talon", code: CodeProcesses},
		{cmd: "date -s 2030-01-01", code: CodeSystem},
		{cmd: "date --set=2030-01-01", code: CodeSystem},
		{cmd: "date --se 2030-01-01", code: CodeSystem},
		{cmd: "date 010100002030", code: CodeSystem},
		{cmd: "stty -F /dev/tty1 raw", code: CodeSystem},
		// Wrappers' abbreviated options.
		{cmd: "env --split-string='sh -c id'", code: CodeWrapper},
		{cmd: "env --sp='sh -c id'", code: CodeWrapper},
		{cmd: "env -iS'sh -c id'", code: CodeWrapper},
		{cmd: "env --chd=/ ls", code: CodeWrapper},
		{cmd: "env --ign=INT ls", code: CodeWrapper}, // ambiguous for env too
		{cmd: "env -i PATH=@R/evil ls", code: CodeAssignment},
		{cmd: "env POSIXLY_CORRECT=1 uniq a.txt -c", code: CodeAssignment},
		{cmd: "POSIXLY_CORRECT=1 uniq a.txt -c", code: CodeAssignment},
		{cmd: "GZIP=-r zcat /etc", code: CodeAssignment},
		{cmd: "timeout --sig=KILL 5 sh", code: CodeShell},
		{cmd: "timeout --fore 5 sh", code: CodeShell},
		{cmd: "timeout --k=1 5 sh", code: CodeShell},
		{cmd: "timeout --nope 5 ls", code: CodeWrapper},
		{cmd: "nice --adj=5 sh", code: CodeShell},
		{cmd: "nice -5 sh", code: CodeShell},
		{cmd: "stdbuf --out=L sh", code: CodeShell},
		{cmd: "setsid --fork sh", code: CodeShell},
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
		{cmd: "git -c core.pager=id log", code: CodeConfigured},
		{cmd: "git --config-env=core.editor=X commit", code: CodeConfigured},
		{cmd: "sudo ls", code: CodePrivilege},
		{cmd: "doas ls", code: CodePrivilege},
		{cmd: "curl -o x http://example.com", code: CodeNetwork},
		{cmd: "make", code: CodeConfigured},
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
