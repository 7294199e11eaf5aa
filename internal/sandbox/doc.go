// Package sandbox decides where an agent's commands run and runs them
// there: it resolves a session's sandbox (mode, scope, workspace access)
// into a Spec, lays out the sandbox workspaces under the state directory,
// and defines the Backend interface that bubblewrap (package bwrap), the
// Docker Engine (package docker) and the unisolated host (package host)
// implement. Backends register themselves by name; New builds one.
//
// A configured sandbox that cannot start is an error naming the backend,
// the reason and the fix: Talon never falls back to running on the host.
//
// Everything here is safe for concurrent use.
package sandbox
