package fs

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"talon/internal/tools"
)

// TestEscapes tries to leave the workspace through the file tools with
// the paths a model would try and the links a sandboxed command could
// plant: every attempt is refused, nothing outside is read or changed.
// (The same tools serve a sandbox's root; escapes through commands are
// internal/sandbox/bwrap's TestEscapes.)
func TestEscapes(t *testing.T) {
	// The host's /etc/hostname is an outside file every machine has; its
	// text is looked for in answers only when it is long enough not to
	// occur in a message by chance.
	hostname, _ := os.ReadFile("/etc/hostname")
	if len(strings.TrimSpace(string(hostname))) < 8 {
		hostname = nil
	}
	type plant func(w *ws) error
	link := func(target string) plant {
		return func(w *ws) error { return os.Symlink(target, filepath.Join(w.dir, "x")) }
	}
	cases := []struct {
		name  string
		plant plant
		path  string
	}{
		{"dot-dot", nil, "../outside/secret"},
		{"dot-dot deep", nil, "a/../../outside/secret"},
		{"absolute host path", nil, "/etc/hostname"},
		{"absolute proc root", nil, "/proc/self/root/etc/hostname"},
		{"symlink out, absolute", link("/etc/hostname"), "x"},
		{"symlink out, relative", link("../outside/secret"), "x"},
		{"symlink to proc root", link("/proc/self/root/etc/hostname"), "x"},
		{"symlink to a device", link("/dev/zero"), "x"},
		{"symlinked directory", link("../outside"), "x/secret"},
		{"hard link out", func(w *ws) error {
			return os.Link(filepath.Join(w.outside, "secret"), filepath.Join(w.dir, "x"))
		}, "x"},
		{"device node", func(w *ws) error {
			// /dev/zero's numbers; only root may make one, and then the
			// tools must still refuse it.
			err := syscall.Mknod(filepath.Join(w.dir, "x"), syscall.S_IFCHR|0o666, 1<<8|5)
			if err != nil && os.Geteuid() != 0 {
				return nil // the planting itself is refused: nothing to read
			}
			return err
		}, "x"},
	}
	for _, tc := range cases {
		for _, tool := range []string{"read", "edit", "apply_patch"} {
			t.Run(tc.name+"/"+tool, func(t *testing.T) {
				w := newWS(t)
				if tc.plant != nil {
					if err := tc.plant(w); err != nil {
						t.Fatalf("planting: %v", err)
					}
				}
				var res tools.Result
				switch tool {
				case "read":
					res = w.run(NewRead(), obj{"path": tc.path})
				case "edit":
					res = w.run(NewEdit(), obj{"path": tc.path, "old_string": "top secret", "new_string": "pwned"})
				case "apply_patch":
					res = w.run(NewApplyPatch(), obj{"input": "*** Begin Patch\n*** Update File: " + tc.path + "\n-top secret\n+pwned\n*** End Patch"})
				}
				if !res.IsError {
					t.Fatalf("%s %q was not refused: %.200q", tool, tc.path, res.Text)
				}
				for _, leak := range []string{secret, strings.TrimSpace(string(hostname))} {
					if leak != "" && strings.Contains(res.Text, leak) {
						t.Fatalf("the refusal shows outside content %q: %q", leak, res.Text)
					}
				}
				w.checkOutside()
			})
		}
	}
}
