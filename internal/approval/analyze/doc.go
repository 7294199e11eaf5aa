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
// The rules (which programs are shells, interpreters, command runners or writers, which
// wrappers are unwrapped, why grep -r outside the workdir needs approval) are listed in
// rules.go next to the tables that implement them.
//
// Concurrency: Analyze and the matching functions keep no state and may be called from many
// goroutines at once; a Plan is a value that is not changed after Analyze returns it.
package analyze
