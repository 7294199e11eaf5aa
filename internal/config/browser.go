package config

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Browser is the `browser` section: the browser tool's. Talon reads
// enabled (false removes the tool, as OpenClaw's does) and
// executablePath (the Chromium to run; only the operator's root config
// may set it, internal/ceiling refuses it from a tenant). The rest —
// profiles, remote CDP, ports, SSRF policy (netguard is the rule),
// evaluateEnabled (act evaluate is not built), headless (always) — is
// kept and reported unused (unused.go).
type Browser struct {
	Enabled        *bool  `json:"enabled"`
	ExecutablePath string `json:"executablePath"`
	Rest           *Raw   `talon:"rest"`
}

// browser checks the browser section.
func (k *checker) browser(b *Browser) {
	if p := strings.TrimSpace(b.ExecutablePath); p != "" && !filepath.IsAbs(p) {
		k.fail("browser.executablePath", fmt.Sprintf("expected an absolute path to a Chromium executable (got %q)", p))
	}
}
