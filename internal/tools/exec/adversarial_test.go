package exec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"talon/internal/approval"
)

// adversarial are commands that would create the file "canary" in the
// workspace, each behind something the allowlist below must not be fooled
// by: the bypasses of issue 6 (env sh -c, busybox sh -c, ./bin vs bin,
// sort -o, grep -R, find -exec), quoting and escaping, $IFS, brace and
// glob expansion, PATH tricks, symlinked and planted binaries, look-alike
// characters, newlines and a very long line.
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
	for _, p := range []string{"ls", "cat", "echo", "printf", "sort", "grep", "find"} {
		harmless = append(harmless, program(t, p))
	}
	for _, approvers := range []int{0, 1} {
		a := newApprovals(t, approvers)
		a.save(fileWith(map[string]*approval.Agent{"main": allow(harmless...)}, approval.Defaults{}))
		plant(t, a.dir)
		if res := a.run(a.exec, a.env, map[string]any{"command": "ls -a | grep -c script"}); res.IsError || !strings.HasPrefix(res.Text, "1\n") {
			t.Fatalf("a harmless command did not run: %+v", res)
		}
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
}
