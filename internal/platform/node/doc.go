// Package node is the node API: what the workforce platform asks of a
// `talon gateway` that serves some of its tenants when tenants are spread
// over several machines. The Handler is mounted on the gateway at /node/
// (gateway.Options.Node) when TALON_NODE_TOKEN is set; the Client is the
// platform's side, one per node, with the method set of platform.Node.
//
// Every route takes the operator's node token (Authorization: Bearer),
// compared in constant time under the gateway's failed-auth throttle. It
// is never a tenant's token, and a tenant's token is never it: the node
// API creates and deletes tenants, installs employees (install.* on the
// node's state dir), reads a tenant's gateway token and usage, and moves
// a tenant: Drain (refuse new work, finish or abort runs, close its
// handles), Export (a tar of the drained directory), Import (unpacked
// beside tenants/ and renamed into place, a hostile archive refused) and
// Resume (undo a drain).
//
// Templates travel as a tar of the template the platform loaded (its
// template.yaml, files and seed), unpacked on the node into a private
// temporary directory and loaded with template.Load, every check applied.
//
// Errors keep their meaning across the wire: a refusal carries a code,
// and the client's *Error wraps the sentinel it names (install.ErrNoTenant,
// install.ErrExists, ErrMoving …, or an *install.PluginError), so the
// platform maps a remote node's errors as it maps a local one's.
//
// Concurrency: a Handler and a Client are safe for concurrent use.
// Operations on one tenant's files are serialised by package install.
package node
