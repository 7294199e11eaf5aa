package analyze

import (
	"fmt"
	"regexp"
	"strings"
)

// This file holds the rules and the tables that implement them; args.go holds the rules
// that read a program's arguments. A program named in no table is judged by the allowlist
// alone, so every program of coreutils, findutils, sed, grep, gawk/mawk, diffutils, tar,
// the gzip/bzip2/xz/zstd families and xxd is in one (TestFamiliesClassified lists them):
// the ones not named here neither write files nor run programs, whatever their arguments.
//
//   - Shells and interpreters (awk included: system()) are never safe, with or without -c:
//     a script file is code too.
//   - busybox, toybox and coreutils are multi-call binaries: the applet name decides what runs.
//   - Programs configured by files the agent can write — git (.git/config, hooks), make,
//     npm and the other build and package tools — are never safe by an allowlist entry:
//     their behaviour is set by files in the working tree or HOME (the workspace, on the
//     gateway host), so allowing the program would allow whatever the agent writes there.
//     Every run asks an operator, and allow-always is not offered for them.
//   - Command runners: xargs, parallel, watch, runcon, prlimit, setarch, find
//     -exec/-execdir/-ok/-okdir, pagers and editors (they have ! commands), debuggers and
//     tracers, sort --compress-program, diff3 and sdiff --diff-program.
//   - Privilege and namespace changers (sudo, doas, su, pkexec, chroot, unshare, …) are never
//     safe and are not unwrapped.
//   - Writers, always: cp, mv, ln, link, unlink, rm, rmdir, mkdir, mkfifo, mknod, mktemp,
//     touch, chmod, chown, chgrp, chcon, truncate, shred, install, split, csplit, tar, cpio,
//     rsync, patch and the compressors (gzip, bzip2, xz, zstd and their un-/cat forms that
//     are the same binary). Writers through their arguments: sort -o/-T, shuf -o, uniq IN
//     OUT, tee FILE, ptx -G IN OUT, xxd IN OUT, dd of=, sed -i (and sed without --sandbox,
//     whose w and e commands write files and run commands), sdiff -o, find
//     -delete/-fprint*/-fls, time -o. A write needs approval wherever it goes.
//   - Other processes and the system: kill, pkill, killall (the gateway runs as the same
//     user), renice, stty, and date -s or date with a time to set.
//   - Network clients (curl, wget, nc, ssh, scp, …) send data out and write files.
//   - Recursive reads: grep -R (follows every symlink) always needs approval; grep -r (and
//     -d recurse, rgrep), diff -r, zcat -r and rg need it when any operand resolves outside
//     the working directory, so `grep -r x /` cannot read the whole machine behind an
//     allowlisted grep. rg --pre and -z run programs.
//   - Options are read as the program reads them (getopt.go): long options by unique
//     prefix, short ones clustered or with attached values. An option the program would
//     reject (unknown, an ambiguous prefix, a missing value) is a reason.
//   - Wrappers env, nice, nohup, timeout, stdbuf, time, setsid and the builtins command and
//     exec are unwrapped to the program they run; their options are parsed the same way and
//     any option not understood, env -S/-C, and setting PATH or another loader variable are
//     reasons; env -i and env -u PATH make the program be found in the C library's default
//     path, as execvp does.
//   - Variables that change how programs parse options (POSIXLY_CORRECT, GZIP, TAR_OPTIONS,
//     …) are reasons like PATH: the rules above assume the default parsing.

var (
	shellRe       = regexp.MustCompile(`^(sh|bash|rbash|dash|ash|zsh|ksh|ksh93|mksh|pdksh|oksh|loksh|yash|posh|fish|csh|tcsh|elvish|nu|xonsh)[0-9.]*$`)
	interpreterRe = regexp.MustCompile(`^(python|pypy|perl|ruby|jruby|irb|php|php-cgi|lua|luajit|node|nodejs|deno|bun|tclsh|wish|expect|rscript|r|julia|pwsh|powershell|osascript|guile|racket|sbcl|ghci|runghc|runhaskell|java|jshell|groovy|scala|kotlin|dotnet|swift|ts-node|tsx|gawk|awk|mawk|nawk|busybox-awk|bc|dc|m4|gdb|octave|sqlite3|psql|mysql)[0-9.]*$`)
)

var multiCall = map[string]bool{"busybox": true, "toybox": true, "coreutils": true}

// configuredBy are programs whose behaviour files the agent can write decide, with those
// files. An allowlist entry for one of them would allow any program the agent names there.
var configuredBy = map[string]string{
	"git":  ".git/config, ~/.gitconfig and hooks (core.fsmonitor, core.pager, core.sshCommand, ! aliases, filters, diff.external)",
	"hg":   ".hg/hgrc and ~/.hgrc (hooks, aliases, extensions)",
	"svn":  "~/.subversion/config (diff-cmd, editor-cmd)",
	"make": "the Makefile", "gmake": "the Makefile", "bmake": "the Makefile",
	"ninja": "build.ninja", "cmake": "CMakeLists.txt", "meson": "meson.build", "just": "the justfile",
	"npm": "package.json scripts and .npmrc", "npx": "package.json and .npmrc", "yarn": "package.json scripts and .yarnrc",
	"pnpm": "package.json scripts and .npmrc", "corepack": "package.json",
	"cargo": "Cargo.toml build scripts and .cargo/config.toml", "go": "go.mod, go.env and the module's code (toolchain, cgo, generate)",
	"pip": "setup.py, pyproject.toml and pip.conf", "pip3": "setup.py, pyproject.toml and pip.conf",
	"pipx": "pyproject.toml and setup.py", "poetry": "pyproject.toml", "uv": "pyproject.toml and uv.toml",
	"pdm": "pyproject.toml", "hatch": "pyproject.toml", "tox": "tox.ini", "nox": "noxfile.py",
	"pytest": "conftest.py and the tests", "pre-commit": ".pre-commit-config.yaml",
	"mvn": "pom.xml", "gradle": "build.gradle and ~/.gradle", "ant": "build.xml", "sbt": "build.sbt", "lein": "project.clj",
	"bundle": "the Gemfile", "bundler": "the Gemfile", "rake": "the Rakefile", "gem": "gem extensions and ~/.gemrc",
	"composer": "composer.json scripts", "mix": "mix.exs", "cabal": "the .cabal file and Setup.hs", "stack": "stack.yaml",
	"direnv": ".envrc", "gpg": "~/.gnupg/gpg.conf (photo-viewer, exec-path)", "gpg2": "~/.gnupg/gpg.conf (photo-viewer, exec-path)",
}

var runsCommands = map[string]string{
	"xargs": "runs its input as commands", "parallel": "runs commands", "watch": "runs a command",
	"flock": "runs a command", "chrt": "runs a command", "taskset": "runs a command",
	"ionice": "runs a command", "script": "runs a shell", "strace": "runs a command",
	"ltrace": "runs a command", "valgrind": "runs a command", "systemd-run": "runs a command",
	"runcon": "runs a command", "prlimit": "runs a command", "setarch": "runs a command",
	"linux32": "runs a command", "linux64": "runs a command", "i386": "runs a command", "x86_64": "runs a command",
	"choom": "runs a command", "uclampset": "runs a command",
	"at": "schedules commands", "batch": "schedules commands", "crontab": "schedules commands",
	"run-parts": "runs every program in a directory", "tmux": "runs a shell", "screen": "runs a shell",
	"vi": "editor with ! commands", "vim": "editor with ! commands", "nvim": "editor with ! commands",
	"view": "editor with ! commands", "ex": "editor with ! commands", "ed": "editor with ! commands",
	"emacs": "editor that runs Lisp", "nano": "editor", "less": "pager with ! commands",
	"more": "pager with ! commands", "most": "pager", "man": "runs a pager and preprocessors",
	"zless": "runs less", "zmore": "runs more", "bzless": "runs less", "bzmore": "runs more",
	"xzless": "runs less", "xzmore": "runs more", "lzless": "runs less", "lzmore": "runs more", "zstdless": "runs less",
	// The wrappers, when reached under another name and so not unwrapped.
	"env": "runs a command", "nohup": "runs a command", "timeout": "runs a command", "nice": "runs a command",
	"stdbuf": "runs a command", "time": "runs a command", "setsid": "runs a command",
}

var privilege = map[string]bool{
	"sudo": true, "doas": true, "su": true, "pkexec": true, "runuser": true, "setpriv": true,
	"chroot": true, "unshare": true, "nsenter": true, "capsh": true, "sg": true, "newgrp": true,
	"setuidgid": true, "firejail": true, "bwrap": true, "docker": true, "podman": true, "pivot_root": true,
	"switch_root": true,
}

// writers write files whatever their arguments; the value, when set, says more than
// "writes files".
var writers = map[string]string{
	"cp": "", "mv": "", "ln": "", "link": "", "unlink": "", "rm": "", "rmdir": "", "mkdir": "",
	"mkfifo": "", "mknod": "", "mktemp": "creates files", "touch": "", "chmod": "", "chown": "", "chgrp": "",
	"chcon": "", "truncate": "", "shred": "", "patch": "", "rsync": "", "cpio": "", "pax": "",
	"install": "writes files, and --strip-program runs a program", "split": "writes files, and --filter runs a shell",
	"csplit": "", "tar": "writes files, and --to-command, -I and --use-compress-program run programs",
	"rmt": "", "rmt-tar": "", "unzip": "", "zip": "", "7z": "",
	"gzip": "", "gunzip": "", "uncompress": "", "gzexe": "", "zforce": "renames files", "znew": "",
	"bzip2": "", "bunzip2": "", "bzip2recover": "", "bzexe": "",
	"xz": "writes and deletes files", "unxz": "", "xzcat": "is xz, which writes and deletes files",
	"lzma": "", "unlzma": "", "lzcat": "is xz, which writes and deletes files",
	"zstd": "", "unzstd": "", "zstdmt": "", "pzstd": "", "zstdcat": "is zstd, whose -o writes files",
	"lz4": "", "unlz4": "", "lz4cat": "is lz4, which writes files",
}

var network = map[string]bool{
	"curl": true, "wget": true, "nc": true, "ncat": true, "netcat": true, "socat": true, "ssh": true,
	"scp": true, "sftp": true, "telnet": true, "ftp": true, "rsh": true,
}

// processes act on other processes, the gateway's included on the gateway host.
var processes = map[string]string{
	"kill": "sends signals to other processes", "pkill": "sends signals to other processes",
	"killall": "sends signals to other processes", "skill": "sends signals to other processes",
	"snice": "changes other processes' priority", "renice": "changes other processes' priority",
}

// system change the machine rather than files.
var system = map[string]string{
	"stty": "changes terminal settings", "hwclock": "sets the hardware clock", "timedatectl": "sets the clock",
}

// shellOnly are builtins with no program behind them; each changes the shell or runs code.
var shellOnly = map[string]string{
	"eval": "runs its arguments as shell code", ".": "runs a file as shell code", "source": "runs a file as shell code",
	"alias": "defines an alias", "unalias": "changes aliases", "cd": "changes the working directory for later commands",
	"pushd": "changes the working directory", "popd": "changes the working directory",
	"set": "changes shell options", "shopt": "changes shell options", "unset": "changes the environment",
	"export": "changes the environment", "readonly": "changes variables", "local": "changes variables",
	"declare": "changes variables", "typeset": "changes variables", "trap": "runs code on signals",
	"builtin": "runs a builtin by name", "enable": "changes builtins", "hash": "changes command lookup",
	"type": "inspects command lookup", "read": "changes variables from input", "mapfile": "changes variables",
	"readarray": "changes variables", "getopts": "changes variables", "let": "evaluates arithmetic",
	"shift": "changes positional parameters", "exit": "ends the shell", "return": "returns from a function",
	"break": "control flow", "continue": "control flow", "wait": "waits for jobs", "ulimit": "changes limits",
	"umask": "changes the file mode mask", "jobs": "job control", "fg": "job control", "bg": "job control",
	"disown": "job control", "times": "shell times", "fc": "runs history", "history": "history",
	"bind": "key bindings", "complete": "completion", "compgen": "completion", "caller": "call stack",
	"suspend": "job control", "logout": "ends the shell", "help": "help", "dirs": "directory stack",
	":": "a no-op builtin that still expands its arguments", "coproc": "runs a coprocess",
}

// dangerousVar reports variables that change which program runs, what it loads, or how
// it reads its options (the argument rules assume the default).
func dangerousVar(name string) (Reason, bool) {
	switch name {
	case "POSIXLY_CORRECT", "_POSIX2_VERSION", "GZIP", "BZIP", "BZIP2", "XZ_OPT", "XZ_DEFAULTS",
		"TAR_OPTIONS", "GREP_OPTIONS", "ZSTD_CLEVEL", "ZSTD_NBTHREADS":
		return Reason{CodeAssignment, fmt.Sprintf("setting %s changes how programs read their options", name)}, true
	}
	switch {
	case name == "PATH", name == "IFS", name == "ENV", name == "BASH_ENV", name == "SHELLOPTS",
		name == "BASHOPTS", name == "PS4", name == "CDPATH", name == "GCONV_PATH", name == "HOSTALIASES",
		name == "NODE_OPTIONS", name == "RUBYOPT", name == "PERL5OPT", name == "PERL5LIB",
		name == "PERLLIB", name == "PYTHONSTARTUP", name == "PYTHONPATH", name == "PYTHONHOME",
		name == "PAGER", name == "EDITOR", name == "VISUAL", name == "GIT_SSH", name == "GIT_SSH_COMMAND",
		name == "GIT_EXEC_PATH", name == "GIT_EDITOR", name == "GIT_PAGER", name == "GIT_CONFIG_GLOBAL",
		name == "GIT_CONFIG_SYSTEM", name == "GIT_CONFIG_PARAMETERS", name == "GIT_CONFIG_COUNT",
		name == "LESSOPEN", name == "LESSCLOSE", name == "MANPAGER", name == "BROWSER", name == "HOME",
		name == "TMPDIR", name == "SHELL",
		strings.HasPrefix(name, "LD_"), strings.HasPrefix(name, "DYLD_"), strings.HasPrefix(name, "BASH_FUNC_"),
		strings.HasPrefix(name, "GIT_CONFIG_KEY_"), strings.HasPrefix(name, "GIT_CONFIG_VALUE_"):
		return Reason{CodeAssignment, fmt.Sprintf("setting %s changes which program runs or what it loads", name)}, true
	}
	return Reason{}, false
}

// unwrapBuiltin parses the options of the exec and command builtins.
func unwrapBuiltin(name string, args []string) ([]string, []Reason) {
	i := 1
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		return nil, []Reason{{CodeWrapper, fmt.Sprintf("%s option %q changes what runs or does not run it", name, a)}}
	}
	if i >= len(args) {
		return nil, []Reason{{CodeBuiltin, fmt.Sprintf("%s with no command changes the shell itself", name)}}
	}
	return args[i:], nil
}

// wrapperFunc parses a wrapper's own options and returns the wrapped argv, a new PATH when
// the wrapper changes where the command is looked up, and reasons.
type wrapperFunc func(args []string) (rest []string, newPATH *string, rs []Reason)

// defaultPATH is where execvp looks for a program when PATH is unset (glibc's _CS_PATH),
// as after env -i or env -u PATH.
const defaultPATH = "/bin:/usr/bin"

var wrappers map[string]wrapperFunc

var (
	envOpts = getopt("+0iu:C:S:v", "i|ignore-environment", "0|null", "u|unset:", "C|chdir:", "S|split-string:",
		"block-signal::", "default-signal::", "ignore-signal::", "list-signal-handling", "v|debug", "help", "version")
	niceOpts    = getopt("+n:", "n|adjustment:", "help", "version")
	timeOpts    = getopt("+af:o:pqvhV", "a|append", "f|format:", "o|output:", "p|portability", "q|quiet", "v|verbose", "h|help", "V|version")
	timeoutOpts = getopt("+k:s:v", "preserve-status", "foreground", "k|kill-after:", "s|signal:", "v|verbose", "help", "version")
)

func init() {
	wrappers = map[string]wrapperFunc{
		"env":     unwrapEnv,
		"nice":    unwrapNice,
		"nohup":   unwrapWith("nohup", getopt("+", "help", "version"), 0, nil),
		"timeout": unwrapWith("timeout", timeoutOpts, 1, nil),
		"stdbuf":  unwrapWith("stdbuf", getopt("+i:o:e:", "i|input:", "o|output:", "e|error:", "help", "version"), 0, nil),
		"time":    unwrapWith("time", timeOpts, 0, timeWrites),
		"setsid":  unwrapWith("setsid", getopt("+cfwhV", "c|ctty", "f|fork", "w|wait", "h|help", "V|version"), 0, nil),
	}
}

// unwrapWith builds a parser for wrappers of the form `w [options] [positional…] cmd`
// from the wrapper's option table; npos positionals (timeout's DURATION) precede the
// command, and check, when set, turns the wrapper's options into reasons.
func unwrapWith(name string, t *optTable, npos int, check func(parsedArgs) []Reason) wrapperFunc {
	return func(args []string) ([]string, *string, []Reason) {
		p, err := t.parse(name, args[1:])
		if err != nil {
			return nil, nil, []Reason{{CodeWrapper, err.Error()}}
		}
		if check != nil {
			if rs := check(p); len(rs) > 0 {
				return nil, nil, rs
			}
		}
		rest := p.operands[min(npos, len(p.operands)):]
		return rest, nil, nil
	}
}

// timeWrites: GNU time -o writes its report to a file.
func timeWrites(p parsedArgs) []Reason {
	if o, ok := p.has("o"); ok {
		return []Reason{{CodeWrites, fmt.Sprintf("time %s writes the file %q", o.word, o.value)}}
	}
	return nil
}

// unwrapNice skips nice's legacy -N, --N and -+N adjustments (read before its options),
// then parses the rest.
func unwrapNice(args []string) ([]string, *string, []Reason) {
	i := 1
	for i < len(args) && legacyNice(args[i]) {
		i++
	}
	return unwrapWith("nice", niceOpts, 0, nil)(append([]string{args[0]}, args[i:]...))
}

func legacyNice(s string) bool {
	if len(s) < 2 || s[0] != '-' {
		return false
	}
	j := 1
	if s[1] == '-' || s[1] == '+' {
		j = 2
	}
	return j < len(s) && s[j] >= '0' && s[j] <= '9'
}

// unwrapEnv parses env: options, then NAME=value operands, then the command. -S splits a
// string like a shell and -C changes directory, so they are reasons; -i, a leading "-"
// operand and -u PATH leave PATH unset, so execvp searches its default path.
func unwrapEnv(args []string) ([]string, *string, []Reason) {
	p, err := envOpts.parse("env", args[1:])
	if err != nil {
		return nil, nil, []Reason{{CodeWrapper, err.Error()}}
	}
	var newPATH *string
	unsetPATH := func() { s := defaultPATH; newPATH = &s }
	for _, o := range p.opts {
		switch o.name {
		case "S", "C":
			return nil, nil, []Reason{{CodeWrapper, fmt.Sprintf("env option %q splits a string like a shell or changes the directory", o.word)}}
		case "i":
			unsetPATH()
		case "u":
			if o.value == "PATH" {
				unsetPATH()
			}
		}
	}
	rest := p.operands
	if len(rest) > 0 && rest[0] == "-" {
		unsetPATH()
		rest = rest[1:]
	}
	var rs []Reason
	for len(rest) > 0 && strings.Contains(rest[0], "=") {
		rs = append(rs, envAssign(rest[0])...)
		rest = rest[1:]
	}
	return rest, newPATH, rs
}

func envAssign(a string) []Reason {
	name, _, _ := strings.Cut(a, "=")
	if r, bad := dangerousVar(name); bad {
		return []Reason{r}
	}
	return nil
}

// classify returns the reasons the program called base, run with args, is unsafe.
func (a *analyzer) classify(base string, args []string) []Reason {
	lower := strings.ToLower(base)
	switch {
	case shellRe.MatchString(lower):
		return []Reason{{CodeShell, fmt.Sprintf("%s is a shell", base)}}
	case multiCall[lower]:
		return []Reason{{CodeMultiCall, fmt.Sprintf("%s is a multi-call binary whose applet decides what runs", base)}}
	case interpreterRe.MatchString(lower):
		return []Reason{{CodeInterpreter, fmt.Sprintf("%s is an interpreter", base)}}
	case privilege[lower]:
		return []Reason{{CodePrivilege, fmt.Sprintf("%s runs as another user or in another namespace", base)}}
	case configuredBy[lower] != "":
		return []Reason{{CodeConfigured, fmt.Sprintf("%s is configured by %s, which the agent can write to make it run any program, so an allowlist entry alone never allows it", base, configuredBy[lower])}}
	case runsCommands[lower] != "":
		return []Reason{{CodeRunsCmds, fmt.Sprintf("%s %s", base, runsCommands[lower])}}
	case network[lower]:
		return []Reason{{CodeNetwork, fmt.Sprintf("%s talks to the network", base)}}
	case processes[lower] != "":
		return []Reason{{CodeProcesses, fmt.Sprintf("%s %s", base, processes[lower])}}
	case system[lower] != "":
		return []Reason{{CodeSystem, fmt.Sprintf("%s %s", base, system[lower])}}
	}
	if detail, ok := writers[lower]; ok {
		if detail == "" {
			detail = "writes files"
		}
		return []Reason{{CodeWrites, fmt.Sprintf("%s %s", base, detail)}}
	}
	if rule, ok := argRules[lower]; ok {
		return rule(a, base, args[1:])
	}
	return nil
}
