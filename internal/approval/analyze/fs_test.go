package analyze

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMountFS resolves commands as a bubblewrap sandbox sees them: a root with /bin linked
// to usr/bin, /usr from another host dir, the workspace at /workspace, and an absolute
// symlink that must be read inside the sandbox, not on the host.
func TestMountFS(t *testing.T) {
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root, usr, work := tmp+"/root", tmp+"/usr", tmp+"/work"
	for _, d := range []string{root, usr + "/bin", work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{usr + "/bin/ls", usr + "/bin/dash", work + "/ls"} {
		if err := os.WriteFile(p, nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range map[string]string{
		root + "/bin":     "usr/bin",
		usr + "/bin/sh":   "/usr/bin/dash", // absolute: inside the sandbox, not the host's /usr
		usr + "/bin/gone": "/nowhere/x",
		usr + "/bin/loop": "loop",
		work + "/up":      "../usr/bin/ls",
	} {
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
	}
	mfs := MountFS{Mounts: []Mount{{Source: root, Target: "/"}, {Source: usr, Target: "/usr"}, {Source: work, Target: "/workspace"}}}
	env := Env{Dir: "/workspace", PATH: "/bin:/usr/bin", HOME: "/home/agent", FS: mfs}
	tests := []struct {
		cmd, path string
		hit       bool
	}{
		{"ls", "/usr/bin/ls", true},
		{"/bin/ls", "/usr/bin/ls", true},
		{"./up", "/usr/bin/ls", true},
		{"./ls", "/workspace/ls", false},
		{"sh -c id", "/usr/bin/dash", false},
		{"gone", "", false},
		{"loop", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			p := Analyze(tt.cmd, env)
			if got := p.Segments[0].Path; got != tt.path {
				t.Errorf("path = %q, want %q (%v)", got, tt.path, p.AllReasons())
			}
			if got := MatchesAllowlist(p, []string{"/usr/bin/ls", "/bin/ls"}, env); got != tt.hit {
				t.Errorf("hit = %v, want %v (%v)", got, tt.hit, p.AllReasons())
			}
		})
	}
	if _, err := mfs.EvalSymlinks("relative"); err == nil {
		t.Error("a relative path should fail")
	}
}
