// Package sandbox decides where an agent's commands run and runs them
// there: it resolves a session's sandbox (mode, scope, workspace access)
// into a Spec, lays out the sandbox workspaces under the state directory,
// and defines the Backend interface that bubblewrap (package bwrap), the
// Docker Engine (package docker) and the unisolated host (package host)
// implement. Backends register themselves by name; New builds one.
//
// Resolve turns a config and a session into a Plan (sandboxed or not and
// why, scope, workspace, mounts, backend, Spec); a Manager, one per
// gateway tenant, checks the plan's backend, lays out and seeds its
// workspace, and opens one sandbox per Spec.ID on the first command,
// shared by the runs of that scope. Explain is `talon sandbox explain`.
// Looser compares two plans: a sandboxed session never drives a session
// whose plan confines less (the session tools ask it).
//
// A configured sandbox that cannot start is an error naming the backend,
// the reason and the fix: Talon never falls back to running on the host.
//
// Everything here is safe for concurrent use.
package sandbox
