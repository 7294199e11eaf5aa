package protocol

// Roles.
const (
	RoleOperator = "operator"
	RoleNode     = "node"
)

// Operator scopes. Admin satisfies every scope; Write satisfies Read.
const (
	ScopeRead      = "operator.read"
	ScopeWrite     = "operator.write"
	ScopeAdmin     = "operator.admin"
	ScopeApprovals = "operator.approvals"
	ScopePairing   = "operator.pairing"
)

// Scopes are the operator scopes Talon grants on request.
var Scopes = []string{ScopeRead, ScopeWrite, ScopeAdmin, ScopeApprovals, ScopePairing}

// Event names.
const (
	EventChallenge        = "connect.challenge"
	EventTick             = "tick"
	EventShutdown         = "shutdown"
	EventPresence         = "presence"
	EventChat             = "chat"
	EventAgent            = "agent"
	EventApprovalRequest  = "exec.approval.requested"
	EventApprovalResolved = "exec.approval.resolved"
	EventSessionsChanged  = "sessions.changed"
)
