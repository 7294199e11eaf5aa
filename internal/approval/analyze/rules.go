package analyze

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// This file holds the rules. A program that is not named here is judged only by the
// allowlist; these tables catch programs someone might allowlist that can still run other
// programs, write files, or read outside the workdir through their arguments.
//
//   - Shells and interpreters are never safe, with or without -c: a script file is code too.
//   - busybox and toybox are multi-call binaries: the applet name decides what runs.
//   - Command runners: xargs, parallel, watch, find -exec/-execdir/-ok/-okdir, pagers and
//     editors (they have ! commands), build tools (make, npm, go, cargo, pip run project code),
//     debuggers and tracers.
//   - Privilege and namespace changers (sudo, doas, su, pkexec, chroot, unshare, …) are never
//     safe and are not unwrapped.
//   - Writes through arguments: sort -o/--output/--compress-program, tee FILE, sed -i (and sed
//     without --sandbox, whose w and e commands write files and run commands), dd of=, find
//     -delete/-fprint*, cp, mv, install, ln, rm, mkdir, touch, chmod, chown, tar, rsync,
//     archivers, patch, split, time -o; git -c/--config-env/--exec-path/--upload-pack/
//     --receive-pack (config can name programs git runs).
//   - Network clients (curl, wget, nc, ssh, scp, …) send data out and write files.
//   - Recursive reads: grep -R (follows every symlink) always needs approval; grep -r and rg
//     need it when any operand resolves outside the working directory, so `grep -r x /`
//     cannot read the whole machine behind an allowlisted grep. rg --pre and -z run programs.
//   - Wrappers env, nice, nohup, timeout, stdbuf, time, setsid and the builtins command and
//     exec are unwrapped to the program they run; their options are parsed and any option
//     not understood, env -S/-C/-P, and setting PATH or another loader variable are reasons.

var (
	shellRe       = regexp.MustCompile(`^(sh|bash|rbash|dash|ash|zsh|ksh|ksh93|mksh|pdksh|oksh|loksh|yash|posh|fish|csh|tcsh|elvish|nu|xonsh)[0-9.]*$`)
	interpreterRe = regexp.MustCompile(`^(python|pypy|perl|ruby|jruby|irb|php|php-cgi|lua|luajit|node|nodejs|deno|bun|tclsh|wish|expect|rscript|r|julia|pwsh|powershell|osascript|guile|racket|sbcl|ghci|runghc|runhaskell|java|jshell|groovy|scala|kotlin|dotnet|swift|ts-node|tsx|gawk|awk|mawk|nawk|busybox-awk|bc|dc|m4|gdb|octave|sqlite3|psql|mysql)[0-9.]*$`)
)

var multiCall = map[string]bool{"busybox": true, "toybox": true}

var runsCommands = map[string]string{
	"xargs": "runs its input as commands", "parallel": "runs commands", "watch": "runs a command",
	"flock": "runs a command", "chrt": "runs a command", "taskset": "runs a command",
	"ionice": "runs a command", "script": "runs a shell", "strace": "runs a command",
	"ltrace": "runs a command", "valgrind": "runs a command", "systemd-run": "runs a command",
	"at": "schedules commands", "batch": "schedules commands", "crontab": "schedules commands",
	"run-parts": "runs every program in a directory", "tmux": "runs a shell", "screen": "runs a shell",
	"make": "runs Makefile recipes", "gmake": "runs Makefile recipes", "ninja": "runs build commands",
	"npm": "runs package scripts", "npx": "runs packages", "yarn": "runs package scripts", "pnpm": "runs package scripts",
	"pip": "runs setup code", "pip3": "runs setup code", "cargo": "runs build scripts", "go": "runs and builds code",
	"vi": "editor with ! commands", "vim": "editor with ! commands", "nvim": "editor with ! commands",
	"view": "editor with ! commands", "ex": "editor with ! commands", "ed": "editor with ! commands",
	"emacs": "editor that runs Lisp", "nano": "editor", "less": "pager with ! commands",
	"more": "pager with ! commands", "most": "pager", "man": "runs a pager and preprocessors",
	"env": "runs a command", "nohup": "runs a command", "timeout": "runs a command", "nice": "runs a command",
	"stdbuf": "runs a command", "time": "runs a command", "setsid": "runs a command",
}

var privilege = map[string]bool{
	"sudo": true, "doas": true, "su": true, "pkexec": true, "runuser": true, "setpriv": true,
	"chroot": true, "unshare": true, "nsenter": true, "capsh": true, "sg": true, "newgrp": true,
	"setuidgid": true, "firejail": true, "bwrap": true, "docker": true, "podman": true,
}

var writers = map[string]bool{
	"cp": true, "mv": true, "install": true, "ln": true, "rm": true, "rmdir": true, "mkdir": true,
	"touch": true, "chmod": true, "chown": true, "chgrp": true, "truncate": true, "shred": true,
	"rsync": true, "tar": true, "cpio": true, "unzip": true, "zip": true, "gzip": true, "gunzip": true,
	"bzip2": true, "bunzip2": true, "xz": true, "unxz": true, "zstd": true, "7z": true, "patch": true,
	"split": true, "csplit": true, "mkfifo": true, "mknod": true, "link": true, "unlink": true,
}

var network = map[string]bool{
	"curl": true, "wget": true, "nc": true, "ncat": true, "netcat": true, "socat": true, "ssh": true,
	"scp": true, "sftp": true, "telnet": true, "ftp": true, "rsh": true,
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

// dangerousVar reports variables that change which program runs or what it loads.
func dangerousVar(name string) (Reason, bool) {
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
// the wrapper sets one (never, today: setting PATH is a reason), and reasons.
type wrapperFunc func(args []string) (rest []string, newPATH *string, rs []Reason)

var wrappers map[string]wrapperFunc

func init() {
	wrappers = map[string]wrapperFunc{
		"env":     unwrapEnv,
		"nice":    optsThen("nice", "n", []string{"--adjustment"}, nil, 0),
		"nohup":   optsThen("nohup", "", nil, nil, 0),
		"timeout": optsThen("timeout", "ks", []string{"--kill-after", "--signal"}, []string{"--preserve-status", "--foreground", "--verbose", "-v"}, 1),
		"stdbuf":  optsThen("stdbuf", "ioe", []string{"--input", "--output", "--error"}, nil, 0),
		"time":    unwrapTime,
		"setsid":  optsThen("setsid", "", nil, []string{"-c", "--ctty", "-f", "--fork", "-w", "--wait"}, 0),
	}
}

// optsThen builds a parser for wrappers of the form `w [options] [positional…] cmd`:
// short options in withArg take a value (attached or next), long ones in longArg take
// --x=v or --x v, flags are value-less, and npos positionals (timeout's DURATION) follow.
func optsThen(name, withArg string, longArg, flags []string, npos int) wrapperFunc {
	return func(args []string) ([]string, *string, []Reason) {
		i := 1
	loop:
		for i < len(args) {
			a := args[i]
			switch {
			case a == "--":
				i++
				break loop
			case !strings.HasPrefix(a, "-") || a == "-":
				break loop
			case contains(flags, a):
				i++
			case strings.HasPrefix(a, "--"):
				key, _, hasVal := strings.Cut(a, "=")
				if !contains(longArg, key) {
					return nil, nil, []Reason{{CodeWrapper, fmt.Sprintf("%s option %q is not understood", name, a)}}
				}
				i++
				if !hasVal {
					i++
				}
			case name == "nice" && len(a) > 1 && isDigits(a[1:]):
				i++ // legacy nice -10
			case len(a) >= 2 && strings.ContainsRune(withArg, rune(a[1])):
				i++
				if len(a) == 2 {
					i++
				}
			default:
				return nil, nil, []Reason{{CodeWrapper, fmt.Sprintf("%s option %q is not understood", name, a)}}
			}
		}
		i += npos
		if i > len(args) {
			i = len(args)
		}
		return args[i:], nil, nil
	}
}

// unwrapEnv parses env: -i, -u NAME, NAME=value. -S splits a string like a shell, -C
// changes directory and -P searches another path, so they are reasons.
func unwrapEnv(args []string) ([]string, *string, []Reason) {
	var rs []Reason
	i := 1
	for ; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			i++
			for i < len(args) && strings.Contains(args[i], "=") {
				rs = append(rs, envAssign(args[i])...)
				i++
			}
			return args[i:], nil, rs
		case a == "-" || a == "-i" || a == "--ignore-environment" || a == "-v" || a == "--debug":
		case a == "-u" || a == "--unset":
			i++
		case strings.HasPrefix(a, "-u") || strings.HasPrefix(a, "--unset="):
		case strings.HasPrefix(a, "-"):
			return nil, nil, []Reason{{CodeWrapper, fmt.Sprintf("env option %q is not understood or changes how the command is found", a)}}
		case strings.Contains(a, "="):
			rs = append(rs, envAssign(a)...)
		default:
			return args[i:], nil, rs
		}
	}
	return nil, nil, rs
}

func envAssign(a string) []Reason {
	name, _, _ := strings.Cut(a, "=")
	if r, bad := dangerousVar(name); bad {
		return []Reason{r}
	}
	return nil
}

// unwrapTime parses GNU time; -o writes a file.
func unwrapTime(args []string) ([]string, *string, []Reason) {
	i := 1
	for ; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return args[i+1:], nil, nil
		case a == "-p" || a == "-v" || a == "-q" || a == "--portability" || a == "--verbose" || a == "--quiet":
		case a == "-f" || a == "--format":
			i++
		case strings.HasPrefix(a, "--format="):
		case a == "-o" || a == "-a" || strings.HasPrefix(a, "--output") || a == "--append":
			return nil, nil, []Reason{{CodeWrites, fmt.Sprintf("time %s writes a file", a)}}
		case strings.HasPrefix(a, "-"):
			return nil, nil, []Reason{{CodeWrapper, fmt.Sprintf("time option %q is not understood", a)}}
		default:
			return args[i:], nil, nil
		}
	}
	return nil, nil, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
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
	case runsCommands[lower] != "":
		return []Reason{{CodeRunsCmds, fmt.Sprintf("%s %s", base, runsCommands[lower])}}
	case writers[lower]:
		return []Reason{{CodeWrites, fmt.Sprintf("%s writes files", base)}}
	case network[lower]:
		return []Reason{{CodeNetwork, fmt.Sprintf("%s talks to the network", base)}}
	}
	var rs []Reason
	opts := args[1:]
	switch lower {
	case "find":
		for _, o := range opts {
			switch o {
			case "-exec", "-execdir", "-ok", "-okdir":
				rs = append(rs, Reason{CodeRunsCmds, fmt.Sprintf("find %s runs commands", o)})
			case "-delete", "-fprint", "-fprint0", "-fprintf", "-fls":
				rs = append(rs, Reason{CodeWrites, fmt.Sprintf("find %s writes or deletes files", o)})
			}
		}
	case "sort":
		for _, o := range optionWords(opts) {
			if strings.HasPrefix(o, "--output") || strings.HasPrefix(o, "--compress-program") ||
				(!strings.HasPrefix(o, "--") && strings.ContainsRune(o, 'o')) {
				rs = append(rs, Reason{CodeWrites, fmt.Sprintf("sort %s writes a file or runs a program", o)})
			}
		}
	case "tee":
		for _, o := range opts {
			if o != "--" && (!strings.HasPrefix(o, "-") || o == "-") {
				rs = append(rs, Reason{CodeWrites, fmt.Sprintf("tee writes %q", o)})
			}
		}
	case "sed":
		sandbox := false
		for _, o := range optionWords(opts) {
			if o == "--sandbox" {
				sandbox = true
			}
			if strings.HasPrefix(o, "--in-place") || (!strings.HasPrefix(o, "--") && strings.ContainsRune(o, 'i')) {
				rs = append(rs, Reason{CodeWrites, fmt.Sprintf("sed %s edits files in place", o)})
			}
		}
		if !sandbox {
			rs = append(rs, Reason{CodeRunsCmds, "sed without --sandbox can write files (w) and run commands (e)"})
		}
	case "dd":
		for _, o := range opts {
			if strings.HasPrefix(o, "of=") {
				rs = append(rs, Reason{CodeWrites, fmt.Sprintf("dd %s writes a file", o)})
			}
		}
	case "git":
		for _, o := range opts {
			if o == "-c" || strings.HasPrefix(o, "--config-env") || strings.HasPrefix(o, "--exec-path") ||
				strings.HasPrefix(o, "--upload-pack") || strings.HasPrefix(o, "--receive-pack") || (strings.HasPrefix(o, "-c") && !strings.HasPrefix(o, "--")) {
				rs = append(rs, Reason{CodeRunsCmds, fmt.Sprintf("git %s can name programs git runs", o)})
			}
		}
	case "grep", "egrep", "fgrep", "rgrep":
		recursive := lower == "rgrep"
		for i, o := range opts {
			if o == "-d" && i+1 < len(opts) && opts[i+1] == "recurse" {
				recursive = true
			}
		}
		for _, o := range optionWords(opts) {
			switch {
			case o == "-R" || o == "--dereference-recursive" || (!strings.HasPrefix(o, "--") && strings.ContainsRune(o, 'R')):
				rs = append(rs, Reason{CodeReadsOut, "grep -R follows every symlink, so it can read anything"})
			case o == "--recursive" || o == "--directories=recurse" || (!strings.HasPrefix(o, "--") && strings.ContainsRune(o, 'r')):
				recursive = true
			}
		}
		if recursive {
			rs = append(rs, a.outside(base, opts)...)
		}
	case "rg":
		for _, o := range opts {
			if strings.HasPrefix(o, "--pre") || o == "-z" || o == "--search-zip" || o == "-L" || o == "--follow" {
				rs = append(rs, Reason{CodeRunsCmds, fmt.Sprintf("rg %s runs programs or follows symlinks", o)})
			}
		}
		rs = append(rs, a.outside(base, opts)...)
	}
	return rs
}

// optionWords returns the arguments before "--" that look like options.
func optionWords(opts []string) []string {
	var out []string
	for _, o := range opts {
		if o == "--" {
			break
		}
		if strings.HasPrefix(o, "-") && o != "-" {
			out = append(out, o)
		}
	}
	return out
}

// outside reports operands of a recursive reader that resolve outside the working
// directory. Every non-option word is treated as a path, the pattern included: a pattern
// that looks like an outside path costs a prompt, never a silent read.
func (a *analyzer) outside(base string, opts []string) []Reason {
	dir, err := a.env.FS.EvalSymlinks(a.env.Dir)
	if err != nil {
		return []Reason{{CodeReadsOut, fmt.Sprintf("resolving the working directory %s: %v", a.env.Dir, err)}}
	}
	var rs []Reason
	for _, o := range opts {
		if strings.HasPrefix(o, "-") {
			continue
		}
		p := o
		if !path.IsAbs(p) {
			p = a.env.Dir + "/" + p
		}
		real, err := a.env.FS.EvalSymlinks(p)
		if err != nil {
			real = path.Clean(p) // a word that is no file (the pattern) is judged lexically
		}
		if real != dir && !strings.HasPrefix(real, strings.TrimSuffix(dir, "/")+"/") {
			rs = append(rs, Reason{CodeReadsOut, fmt.Sprintf("%s reads %q recursively, outside the working directory", base, o)})
		}
	}
	return rs
}
