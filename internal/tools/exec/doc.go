// Package exec holds the exec and process tools. exec runs a shell command
// (/bin/sh -c) in the session's sandbox (tools.Env.Sandbox) and returns its
// output, bounded and with the cut marked, its exit code and duration; a
// command still running after yieldMs, or started with background, becomes
// a job in a Jobs table, which process lists, polls, reads, writes to,
// kills and removes.
//
// Jobs belong to the session that started them (agent, session key and
// workspace, which tells tenants apart): process never shows another
// session's job, and answers "no such job" for one. The table is bounded
// in jobs per session, jobs in all and output per job, and forgets
// finished jobs after a TTL.
//
// exec refuses to run commands in a sandbox that does not isolate (the
// host backend) unless tools.Env.HostExec is set (config
// tools.exec.security "full"): until exec approvals exist, a model's
// command never runs on the host silently. Check says why exec cannot run.
//
// The tools are safe for concurrent use; a Jobs table is too.
package exec
