package exec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"talon/internal/approval"
	"talon/internal/approval/analyze"
	"talon/internal/sandbox"
	"talon/internal/sandbox/bwrap"
	"talon/internal/sandbox/host"
	"talon/internal/tools"
)

// TestView: where a command runs and how its programs are looked up, for
// the sandboxes a test can build without a manager (the runner's sandbox
// sessions are covered through the runner in internal/agent).
func TestView(t *testing.T) {
	if host.Path != bwrap.Path || commandPath != host.Path {
		t.Fatalf("PATHs differ: host %q, bwrap %q, analysed with %q", host.Path, bwrap.Path, commandPath)
	}
	r := newRig(t, DefaultLimits())
	type viewCase struct {
		name    string
		env     *tools.Env
		workdir string
		host    approval.Host
		dir     string
		mount   bool   // resolved in an empty MountFS: nothing is found
		err     string // the working directory is refused
	}
	if err := os.Mkdir(filepath.Join(r.dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []viewCase{
		{"host, workspace", r.env, "", approval.HostGateway, r.dir, false, ""},
		{"host, a subdirectory", r.env, "/workspace/sub", approval.HostGateway, filepath.Join(r.dir, "sub"), false, ""},
		{"host, an absolute path", r.env, "/tmp", approval.HostGateway, "", false, `working directory "/tmp" is outside the workspace`},
	}
	if err := requireBwrap(t); err == nil {
		b, err := sandbox.New("bwrap", nil)
		if err != nil {
			t.Fatal(err)
		}
		boxed := rigOn(t, b, DefaultLimits())
		// A bwrap sandbox opened outside a manager has no plan to say what
		// it binds: nothing can be resolved, so nothing is a hit.
		cases = append(cases, viewCase{"a sandbox without a plan", boxed.env, "/workspace/x", approval.HostSandbox, "/workspace/x", true, ""})
		// In a sandbox, / is the sandbox's: nothing to refuse.
		cases = append(cases, viewCase{"a sandbox's /", boxed.env, "/", approval.HostSandbox, "/", true, ""})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := viewOf(c.env, c.workdir)
			if v.host != c.host || v.env.Dir != c.dir || v.env.PATH != commandPath {
				t.Errorf("view %+v", v)
			}
			if (c.err == "") != (v.err == nil) || v.err != nil && !strings.Contains(v.err.Error(), c.err) {
				t.Errorf("err = %v, want %q", v.err, c.err)
			}
			if _, empty := v.env.FS.(analyze.MountFS); empty != c.mount {
				t.Errorf("FS %T", v.env.FS)
			}
		})
	}
}
