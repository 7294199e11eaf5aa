package template

import "testing"

// FuzzParseManifest feeds arbitrary bytes to the template.yaml parser: it
// must return an error or a manifest that passes its own checks, never panic.
func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(validManifest))
	f.Add([]byte(validManifest + "requiredTools: {alsoAllow: [web_fetch], plugins: [api-tools]}\nsandbox: {mode: all, backend: bwrap}\n"))
	f.Add([]byte("type: [\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseManifest(data)
		if err == nil && (m.Type == "" || m.Name == "") {
			t.Fatalf("accepted a manifest without type or name: %q", data)
		}
	})
}
