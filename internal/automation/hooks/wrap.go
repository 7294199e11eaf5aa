package hooks

import "talon/internal/untrusted"

// wrapExternal puts an untrusted hook message between boundary markers
// after the security notice, as OpenClaw does for webhook content.
func wrapExternal(content, name string) string {
	return untrusted.Wrap(content, untrusted.Block{Source: untrusted.SourceWebhook, Task: name, Warning: true})
}
