package sandbox

import (
	"fmt"
	"reflect"

	"talon/internal/policy"
)

// Looser says how the target plan confines less than the caller's, or ""
// when it confines at least as much. It is Talon's rule for one session
// making another act (sessions_send, sessions_spawn): a sandboxed session
// never drives a less-confined one, whatever the session-tool settings.
// The comparison is coarse on purpose, so that each refusal is one
// sentence:
//
//   - an unsandboxed caller is confined by nothing: every target passes;
//   - an unsandboxed target is looser than a sandboxed caller;
//   - another backend is looser (bwrap and docker are not ordered), and
//     so is, with docker, another docker block (image, binds, …);
//   - a network is looser unless it is none or the caller's own;
//   - a wider workspaceAccess is looser (none < ro < rw).
//
// Limits are not compared: they bound what a command may use, not what it
// can reach.
func Looser(caller, target *Plan) string {
	switch {
	case !caller.Sandboxed:
		return ""
	case !target.Sandboxed:
		return "it is not sandboxed: " + target.Reason
	case target.Backend.Value != caller.Backend.Value:
		return fmt.Sprintf("its sandbox backend is %q (%s), not this session's %q",
			target.Backend.Value, orDefault(target.Backend.Key), caller.Backend.Value)
	case target.Backend.Value == BackendDocker && !reflect.DeepEqual(target.BackendSettings, caller.BackendSettings):
		return "its docker settings (sandbox.docker) are not this session's"
	case target.Network.Value != "none" && target.Network.Value != caller.Network.Value:
		return fmt.Sprintf("its sandbox has network %q (%s), this session's %q",
			target.Network.Value, orDefault(target.Network.Key), caller.Network.Value)
	case accessRank(target.Access.Value) > accessRank(caller.Access.Value):
		return fmt.Sprintf("its workspaceAccess is %q (%s), wider than this session's %q",
			target.Access.Value, orDefault(target.Access.Key), caller.Access.Value)
	}
	return ""
}

// accessRank orders workspaceAccess by what it exposes of the agent
// workspace; an unknown value ranks widest.
func accessRank(a string) int {
	switch a {
	case policy.AccessNone:
		return 0
	case policy.AccessRO:
		return 1
	case policy.AccessRW:
		return 2
	}
	return 3
}
