package exec

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"talon/internal/approval"
	"talon/internal/sandbox"
	"talon/internal/tools"
)

// adversarial are commands that would create the file "canary" in the
// workspace or change a file there, each behind something the allowlist
// below must not be fooled by: the bypasses of issue 6 (env sh -c,
// busybox sh -c, ./bin vs bin, sort -o, grep -R, find -exec) and issue 17
// (git configured by the workspace, abbreviated long options, writers'
// operands), quoting and escaping, $IFS, brace and glob expansion, PATH
// tricks, symlinked and planted binaries, look-alike characters, newlines
// and a very long line.
var adversarial = []string{
	"env sh -c 'touch canary'",
	"env -i sh -c 'touch canary'",
	"env -S 'sh -c \"touch canary\"'",
	"env PATH=. echo hi",
	"busybox sh -c 'touch canary'",
	"busybox touch canary",
	"./echo hi",
	"bin/echo hi",
	"./ls -c 'touch canary'",
	"sort -o canary /etc/hostname",
	"sort --output=canary /etc/hostname",
	"grep -R x / > canary",
	"find . -maxdepth 0 -exec touch canary ';'",
	"find . -maxdepth 0 -execdir touch canary ';'",
	"find . -maxdepth 0 -fprint canary",
	"echo $(touch canary)",
	"echo `touch canary`",
	"echo hi > canary",
	"echo hi >> canary",
	"cat > canary < /dev/null",
	"cat <<EOF > canary\nx\nEOF",
	"ls; touch canary",
	"ls && touch canary",
	"ls || touch canary",
	"ls | sh -c 'touch canary'",
	"ls & touch canary",
	"(touch canary)",
	"{ touch canary; }",
	"ls\ntouch canary",
	"touch${IFS}canary",
	"IFS=_ ; echo hi",
	"t''ouch canary",
	"t\\ouch canary",
	"ec''ho hi; t\"\"ouch canary",
	"echo {a,b}; touch canary",
	"ls *; touch canary",
	"ls ?anary; touch canary",
	"PATH=. echo hi",
	"LD_PRELOAD=/x.so echo hi; touch canary",
	"BASH_ENV=./script sh",
	"nice sh -c 'touch canary'",
	"nohup sh -c 'touch canary'",
	"timeout 5 sh -c 'touch canary'",
	"stdbuf -o0 sh -c 'touch canary'",
	"command sh -c 'touch canary'",
	"exec sh -c 'touch canary'",
	"eval 'touch canary'",
	". ./script",
	"bash -lc 'touch canary'",
	"python3 -c 'open(\"canary\", \"w\")'",
	"perl -e 'open F, \">canary\"'",
	"awk 'BEGIN { system(\"touch canary\") }'",
	"sed -n 'w canary' /etc/hostname",
	"tee canary < /dev/null",
	"xargs touch <<< canary",
	"printf canary | xargs touch",
	"dd if=/dev/null of=canary",
	"cp /dev/null canary",
	"mkdir canary",
	"ln -s x canary",
	"git -c core.pager='touch canary' log",
	"$(printf touch) canary",
	// Issue 17: git runs what a .git/config the agent wrote says (plant
	// writes one with an alias and core.fsmonitor), and writers hidden in
	// abbreviated options and operands of allowlisted programs.
	"git canary",
	"git status",
	"git -C . log",
	"nice git canary",
	"sort --outp=canary script",
	"sort --o canary script",
	"sort -mo canary script",
	"sort -ocanary script",
	"sort script --outp=canary",
	"sort --compress-prog=./script -S 1 script",
	"shuf -o canary script",
	"shuf --out=canary script",
	"uniq script canary",
	"uniq -c script canary",
	"printf 41 | xxd -r -p - canary",
	"xxd script canary",
	"sed --in-pl=.bak 1p script",
	"sed -ni 1p script",
	"sed --sand -i 1p script",
	"tee --app canary < /dev/null",
	"ptx --trad script canary",
	"env -iS'sh -c \"touch canary\"'",
	"timeout --sig=KILL 5 sh -c 'touch canary'",
	"\"$(printf sh)\" -c 'touch canary'",
	"\uff45cho hi; touch canary",                             // fullwidth e
	"ech\u200bo hi; touch canary",                            // zero-width space
	"echo \u202etouch canary",                                // right-to-left override
	"echo " + strings.Repeat("x", 60<<10) + "; touch canary", // a very long line
}

// TestAdversarial: under an allowlist of harmless programs — and sort,
// grep and find, harmless only without their dangerous flags — none of the
// commands runs silently. With nobody to approve each is refused; with an
// operator connected each waits for approval. The canary never appears,
// and a harmless command does run, so the setup denies only what it must.
func TestAdversarial(t *testing.T) {
	if len(adversarial) < 50 {
		t.Fatalf("only %d adversarial commands", len(adversarial))
	}
	var harmless []string
	for _, p := range []string{"ls", "cat", "echo", "printf", "sort", "grep", "find", "git", "shuf", "uniq", "xxd", "sed", "tee", "ptx"} {
		harmless = append(harmless, program(t, p))
	}
	for _, approvers := range []int{0, 1} {
		a := newApprovals(t, approvers)
		a.save(fileWith(map[string]*approval.Agent{"main": allow(harmless...)}, approval.Defaults{}))
		plant(t, a.dir)
		if res := a.run(a.exec, a.env, map[string]any{"command": "ls -a | grep -c script"}); res.IsError || !strings.HasPrefix(res.Text, "1\n") {
			t.Fatalf("a harmless command did not run: %+v", res)
		}
		before := listing(t, a.dir)
		for _, cmd := range adversarial {
			res := a.run(a.exec, a.env, map[string]any{"command": cmd})
			switch {
			case approvers == 0 && !(res.IsError && strings.Contains(res.Text, "Exec denied (gateway id=")):
				t.Errorf("%q: not refused: %s", cmd, res.Text)
			case approvers == 1 && !strings.HasPrefix(res.Text, "Approval required (id "):
				t.Errorf("%q: did not wait for approval: %s", cmd, res.Text)
			}
			if _, err := os.Lstat(filepath.Join(a.dir, "canary")); err == nil {
				t.Fatalf("%q ran: the canary exists", cmd)
			}
			if d := cmp.Diff(before, listing(t, a.dir)); d != "" {
				t.Fatalf("%q changed the workspace (-before +after):\n%s", cmd, d)
			}
		}
		if approvers == 1 {
			if n := len(a.svc.Pending()); n != len(adversarial) {
				t.Errorf("%d approvals pending, want %d", n, len(adversarial))
			}
			a.svc.Close() // every pending one ends denied
			for range adversarial {
				if e := a.event(); !strings.HasPrefix(e, "Exec denied (") {
					t.Errorf("event %q", e)
				}
			}
			if _, err := os.Lstat(filepath.Join(a.dir, "canary")); err == nil {
				t.Fatal("the canary exists after shutdown")
			}
		}
	}
}

// plant puts in the workspace what the PATH and relative-path tricks use:
// ./echo and bin/echo scripts that touch the canary, ./ls linked to a
// shell, and a script to source.
func plant(t *testing.T, dir string) {
	t.Helper()
	script := "#!/bin/sh\ntouch " + filepath.Join(dir, "canary") + "\n"
	for _, p := range []string{"echo", "bin/echo", "script"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/bin/sh", filepath.Join(dir, "ls")); err != nil {
		t.Fatal(err)
	}
	// A repository whose config runs the canary: as an alias, and as the
	// fsmonitor hook every git status calls.
	gitConfig := "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = touch canary\n[alias]\n\tcanary = !touch canary\n"
	for name, body := range map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/config": gitConfig} {
		if err := os.MkdirAll(filepath.Join(dir, ".git/objects"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, ".git/refs/heads"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// listing is every file under dir with its size, mode and modification
// time, to show a command changed nothing.
func listing(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out[p] = fmt.Sprintf("%d %v %d", fi.Size(), fi.Mode(), fi.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestHostWorkdir: on the gateway host the working directory must resolve
// inside the workspace, so `grep -r x .` allowlisted cannot read the
// machine from workdir "/", whatever the policy: "/", "/root", ".." out
// and a symlink out are refused before any decision, with a message that
// says what and why, and nothing runs or waits for approval.
func TestHostWorkdir(t *testing.T) {
	for _, approvers := range []int{0, 1} {
		a := newApprovals(t, approvers)
		a.save(fileWith(map[string]*approval.Agent{"main": allow(program(t, "grep"), program(t, "pwd"))}, approval.Defaults{}))
		if err := os.Symlink("/", filepath.Join(a.dir, "out")); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(a.dir, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		outside := "is outside the workspace; on the gateway host"
		linkOut := "leads out of the workspace through a symbolic link"
		full := *a.env
		full.ExecPolicy = hostFull // security full: the working directory is refused all the same
		for _, env := range []*tools.Env{a.env, &full} {
			for _, c := range []struct{ workdir, want string }{
				{"/", outside},
				{"/root", outside},
				{"/etc", outside},
				{"../..", outside},
				{"..", outside},
				{"/workspace/../..", outside},
				{"sub/../../..", outside},
				{"out", linkOut},
				{"out/root", linkOut},
				{"/workspace/out/etc", linkOut},
			} {
				res := a.run(a.exec, env, map[string]any{"command": "grep -r root .", "workdir": c.workdir})
				// Named as the tool resolved it against /workspace.
				want := fmt.Sprintf("exec: working directory %q ", path.Join(sandbox.Workdir, c.workdir))
				if path.IsAbs(c.workdir) {
					want = fmt.Sprintf("exec: working directory %q ", path.Clean(c.workdir))
				}
				if !res.IsError || !strings.HasPrefix(res.Text, want) || !strings.Contains(res.Text, c.want) ||
					!strings.HasSuffix(res.Text, "; the command did not run") {
					t.Errorf("workdir %q: %+v", c.workdir, res)
				}
			}
		}
		if n := len(a.svc.Pending()); n != 0 {
			t.Errorf("%d approvals pending for refused working directories", n)
		}
		// Inside the workspace the allowlist decides as before.
		if res := a.run(a.exec, a.env, map[string]any{"command": "pwd", "workdir": "sub"}); res.IsError || !strings.HasPrefix(res.Text, filepath.Join(a.dir, "sub")+"\n") {
			t.Errorf("a working directory inside the workspace: %+v", res)
		}
	}
}
