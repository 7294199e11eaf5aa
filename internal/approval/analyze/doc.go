// Package analyze turns a shell command, as the exec tool runs it with /bin/sh -c, into an
// execution plan: every segment it would run, each with its executable resolved to an
// absolute path as the host or sandbox sees it, its literal argv, its redirections, and the
// reasons the segment cannot be trusted.
//
// The analyser is pure: it never runs anything; it reads the file system only through the
// FS interface to look up executables and resolve symlinks. Its contract is that analysis
// which cannot decide is a miss, never a hit: Plan.Decidable is false as soon as anything is
// not understood, and MatchesAllowlist and Plan.Hit return false for every such plan.
//
// Usage, for a command the gateway host runs:
//
//	plan := analyze.Analyze(cmd, analyze.Env{Dir: cwd, PATH: path, HOME: home})
//	if analyze.MatchesAllowlist(plan, patterns, env) { run } else { prompt or deny }
//
// For a sandbox, Env.FS is a MountFS of the sandbox's mounts and Dir, PATH and HOME are
// the values inside it. Callers that also accept safe bins or skill bins use Plan.Hit with
// their own per-segment test; plan.AllReasons explains a miss.
//
// The rules (which programs are shells, interpreters, command runners or writers, which
// are configured by files the agent can write, which wrappers are unwrapped, why grep -r
// outside the workdir needs approval) are listed in rules.go next to the tables that
// implement them. args.go holds the rules that read a program's arguments, and getopt.go
// reads them as GNU getopt_long does — long options by unique prefix, clustered short
// options, values attached or not — so `sort --outp=F` is `sort -o F` to the analyser as
// it is to sort; an option the program would reject is a reason, never a pass.
//
// Concurrency: Analyze and the matching functions keep no state and may be called from many
// goroutines at once; a Plan is a value that is not changed after Analyze returns it.
package analyze
