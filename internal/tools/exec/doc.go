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
// On the gateway host the working directory must resolve, symlinks
// included, inside the workspace (host.Sandbox.Dir): "/", "/root", ".."
// out of it or a link out is refused before the policy is consulted,
// whatever the policy, so the analysis's rules about the working directory
// hold and a command's relative paths stay in the workspace.
//
// Every command passes the exec approval policy first (approval.Resolve
// and Decide, spec §4.3–4.4), for where it actually runs: the session's
// sandbox, or the gateway host when the session has none (the host
// backend), where the built-in default is an allowlist that asks on a
// miss. The command is analysed (approval/analyze) as that place would
// run it — the host's files, or the sandbox's mounts — and allowlist hits
// are stamped in the approvals file. A denied command is refused with the
// policy and what to change. A command that needs approval is registered
// with the approvals Manager: when nobody can approve (no operator
// connected, or no approvals service) askFallback applies at once and the
// call returns the outcome; otherwise the call returns approval-pending
// at once and the command waits in the background (approval.Service.Go),
// runs after allow-once or allow-always, and its outcome — "Exec finished
// (gateway id=…, session=…, code N)" with the output's tail, or "Exec
// denied (gateway id=…, reason): command" — goes to the session as a
// system event (approval.Service.Post). A command running a program
// configured by files the agent can write (git, make, npm, …) always
// asks, and allow-always is not offered for it. Nothing runs on the host
// silently unless the policy says security full.
//
// The tools are safe for concurrent use; a Jobs table is too.
package exec
