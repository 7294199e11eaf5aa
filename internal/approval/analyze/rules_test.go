package analyze

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"talon/internal/testtier"
)

// families are the programs Debian's coreutils, findutils, sed, grep, gawk, mawk,
// diffutils, tar, gzip, bzip2, xz-utils, zstd and xxd packages install (dpkg -L), with
// the class the analyser puts each in: "" is a program that writes nothing and runs
// nothing whatever its arguments, "args" one whose arguments decide (argRules), else the
// reason code every run of it gets.
var families = map[string]string{
	// coreutils
	"[": "", "arch": "", "b2sum": "", "base32": "", "base64": "", "basename": "", "basenc": "",
	"cat": "", "chcon": CodeWrites, "chgrp": CodeWrites, "chmod": CodeWrites, "chown": CodeWrites,
	"chroot": CodePrivilege, "cksum": "", "comm": "", "cp": CodeWrites, "csplit": CodeWrites, "cut": "",
	"date": "args", "dd": "args", "df": "", "dir": "", "dircolors": "", "dirname": "", "du": "",
	"echo": "", "env": CodeRunsCmds, "expand": "", "expr": "", "factor": "", "false": "", "fmt": "",
	"fold": "", "groups": "", "head": "", "hostid": "", "id": "", "install": CodeWrites, "join": "",
	"kill": CodeProcesses, "link": CodeWrites, "ln": CodeWrites, "logname": "", "ls": "", "md5sum": "",
	"md5sum.textutils": "", "mkdir": CodeWrites, "mkfifo": CodeWrites, "mknod": CodeWrites,
	"mktemp": CodeWrites, "mv": CodeWrites, "nice": CodeRunsCmds, "nl": "", "nohup": CodeRunsCmds,
	"nproc": "", "numfmt": "", "od": "", "paste": "", "pathchk": "", "pinky": "", "pr": "",
	"printenv": "", "printf": "", "ptx": "args", "pwd": "", "readlink": "", "realpath": "",
	"rm": CodeWrites, "rmdir": CodeWrites, "runcon": CodeRunsCmds, "seq": "", "sha1sum": "",
	"sha224sum": "", "sha256sum": "", "sha384sum": "", "sha512sum": "", "shred": CodeWrites,
	"shuf": "args", "sleep": "", "sort": "args", "split": CodeWrites, "stat": "", "stdbuf": CodeRunsCmds,
	"stty": CodeSystem, "sum": "", "sync": "", "tac": "", "tail": "", "tee": "args", "test": "",
	"timeout": CodeRunsCmds, "touch": CodeWrites, "tr": "", "true": "", "truncate": CodeWrites,
	"tsort": "", "tty": "", "uname": "", "unexpand": "", "uniq": "args", "unlink": CodeWrites,
	"users": "", "vdir": "", "wc": "", "who": "", "whoami": "", "yes": "", "coreutils": CodeMultiCall,
	// findutils, sed, grep, awk
	"find": "args", "xargs": CodeRunsCmds, "sed": "args", "grep": "args", "egrep": "args",
	"fgrep": "args", "rgrep": "args", "gawk": CodeInterpreter, "mawk": CodeInterpreter,
	"awk": CodeInterpreter,
	// diffutils, tar
	"cmp": "", "diff": "args", "diff3": "args", "sdiff": "args", "tar": CodeWrites,
	"rmt-tar": CodeWrites, "tarcat": "",
	// gzip
	"gzip": CodeWrites, "gunzip": CodeWrites, "uncompress": CodeWrites, "gzexe": CodeWrites,
	"zforce": CodeWrites, "znew": CodeWrites, "zcat": "args", "zcmp": "", "zdiff": "args",
	"zgrep": "args", "zegrep": "args", "zfgrep": "args", "zless": CodeRunsCmds, "zmore": CodeRunsCmds,
	// bzip2 (bzcat is bzip2 under another name, which never writes a file as bzcat)
	"bzip2": CodeWrites, "bunzip2": CodeWrites, "bzip2recover": CodeWrites, "bzexe": CodeWrites,
	"bzcat": "", "bzcmp": "", "bzdiff": "args", "bzgrep": "args", "bzegrep": "args",
	"bzfgrep": "args", "bzless": CodeRunsCmds, "bzmore": CodeRunsCmds,
	// xz-utils
	"xz": CodeWrites, "unxz": CodeWrites, "xzcat": CodeWrites, "lzma": CodeWrites,
	"unlzma": CodeWrites, "lzcat": CodeWrites, "lzmainfo": "", "xzcmp": "", "xzdiff": "args",
	"xzgrep": "args", "xzegrep": "args", "xzfgrep": "args", "xzless": CodeRunsCmds,
	"xzmore": CodeRunsCmds,
	// zstd, xxd
	"zstd": CodeWrites, "unzstd": CodeWrites, "zstdcat": CodeWrites, "zstdmt": CodeWrites,
	"pzstd": CodeWrites, "zstdgrep": "args", "zstdless": CodeRunsCmds, "xxd": "args",
}

// TestFamiliesClassified: every program of the families is in the class the rules say,
// so a program added to or dropped from a table is a decision, not an accident.
func TestFamiliesClassified(t *testing.T) {
	a := &analyzer{env: newFixture(t).env}
	for name, want := range families {
		t.Run(name, func(t *testing.T) {
			_, hasRule := argRules[name]
			rs := a.classify(name, []string{name})
			switch want {
			case "":
				if len(rs) > 0 || hasRule {
					t.Errorf("want nothing to refuse, got %v (argument rule %v)", rs, hasRule)
				}
			case "args":
				if !hasRule {
					t.Error("want an argument rule, there is none")
				}
			default:
				if len(rs) == 0 || rs[0].Code != want {
					t.Errorf("want %s, got %v", want, rs)
				}
			}
		})
	}
}

// TestRealProgramsAgree runs the programs of this machine with the arguments the rules
// read, in a scratch directory, and checks that the analyser says "writes" exactly when
// the real program wrote the file F: abbreviations, clusters and operands mean to the
// analyser what they mean to GNU sort, shuf, uniq, tee, sed, ptx, xxd and dd.
func TestRealProgramsAgree(t *testing.T) {
	tests := []struct {
		argv  []string
		stdin string
	}{
		{[]string{"sort", "--outp=F", "in"}, ""},
		{[]string{"sort", "--o", "F", "in"}, ""},
		{[]string{"sort", "-mo", "F", "in"}, ""},
		{[]string{"sort", "-rnoF", "in"}, ""},
		{[]string{"sort", "in", "--outp=F"}, ""},
		{[]string{"sort", "--rev", "in"}, ""},
		{[]string{"sort", "--", "-oF"}, ""}, // reads a missing file named -oF: writes nothing
		{[]string{"shuf", "--out=F", "in"}, ""},
		{[]string{"shuf", "-reo", "F", "-n", "1", "a"}, ""},
		{[]string{"shuf", "-n", "1", "in"}, ""},
		{[]string{"uniq", "in", "F"}, ""},
		{[]string{"uniq", "in", "-c", "F"}, ""},
		{[]string{"uniq", "-", "F"}, "a\n"},
		{[]string{"uniq", "-c", "in", "-"}, ""},
		{[]string{"tee", "--app", "F"}, "a\n"},
		{[]string{"tee", "-a"}, "a\n"},
		{[]string{"xxd", "-r", "-p", "-", "F"}, "41\n"},
		{[]string{"xxd", "-c", "8", "in", "F"}, ""},
		{[]string{"xxd", "-c", "8", "in"}, ""},
		{[]string{"xxd", "in", "-"}, ""},
		{[]string{"ptx", "--trad", "in", "F"}, ""},
		{[]string{"ptx", "in", "in"}, ""},
		{[]string{"dd", "if=in", "of=F"}, ""},
		{[]string{"dd", "if=in"}, ""},
		{[]string{"sed", "-n", "--sandbox", "w F", "in"}, ""}, // refused by sed: nothing written
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.argv, " "), func(t *testing.T) {
			bin, err := exec.LookPath(tt.argv[0])
			if err != nil {
				testtier.Unavailable(t, "%s is not installed: %v", tt.argv[0], err)
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "in"), []byte("b\na\na\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, tt.argv[1:]...)
			cmd.Dir, cmd.Stdin, cmd.Env = dir, strings.NewReader(tt.stdin), []string{"LC_ALL=C"}
			_ = cmd.Run() // a program that fails writes nothing, which the check below sees
			_, statErr := os.Stat(filepath.Join(dir, "F"))
			wrote := statErr == nil
			rule := argRules[tt.argv[0]]
			a := &analyzer{env: Env{Dir: dir, FS: HostFS{}}}
			said := false
			for _, r := range rule(a, tt.argv[0], tt.argv[1:]) {
				said = said || r.Code == CodeWrites
			}
			if wrote != said {
				t.Errorf("the program wrote F: %v; the analyser says it writes: %v", wrote, said)
			}
		})
	}
}
