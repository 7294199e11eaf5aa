package fs

import "talon/internal/tools"

// All returns the four file tools: read, write, edit and apply_patch.
func All() []tools.Tool {
	return []tools.Tool{NewRead(), NewWrite(), NewEdit(), NewApplyPatch()}
}
