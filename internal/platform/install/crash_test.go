package install

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"talon/internal/platform/template"
)

// Environment of TestUpdateKill9's child process (see TestMain).
const (
	envChild     = "TALON_INSTALL_CRASH_CHILD" // state dir
	envTemplate  = "TALON_INSTALL_CRASH_TEMPLATE"
	envKillAfter = "TALON_INSTALL_CRASH_AFTER" // steps before SIGKILL
	// TALON_INSTALL_CRASH_ROUNDS raises the number of rounds (default 50).
	envRounds = "TALON_INSTALL_CRASH_ROUNDS"
)

// TestMain runs crashChild instead of the tests when started as
// TestUpdateKill9's child process.
func TestMain(m *testing.M) {
	if state := os.Getenv(envChild); state != "" {
		crashChild(state)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// crashChild updates tenant "acme" to the template in envTemplate and
// kills itself with SIGKILL after envKillAfter steps that change the disk.
func crashChild(state string) {
	n, err := strconv.Atoi(os.Getenv(envKillAfter))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	tp, err := template.Load(os.Getenv(envTemplate))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	count := 0
	hook = func(string) {
		if count++; count == n {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // never go on past the kill
		}
	}
	if err := Update(state, "acme", tp); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// TestUpdateKill9 kills an update at every kind of point, again and again,
// and checks after recovery that memory/ and the tenant's other files are
// byte for byte what they were, and that the template's files are wholly
// the old version or wholly the new one.
func TestUpdateKill9(t *testing.T) {
	rounds := 50
	if s := os.Getenv(envRounds); s != "" {
		var err error
		if rounds, err = strconv.Atoi(s); err != nil {
			t.Fatalf("%s: %v", envRounds, err)
		}
	}
	state := t.TempDir()
	tn, err := CreateTenant(state, "acme", nil)
	if err != nil {
		t.Fatal(err)
	}
	tps := []*template.Template{loadVersion(t, v1), loadVersion(t, v2)}
	if err := Install(state, "acme", tps[0]); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(tn.Dir, "agents", "demo")
	binary := string([]byte{0, 1, 2, 255, 254, '\n'})
	writeFiles(t, ws, map[string]string{
		"memory/2026-01-01.md": "what we learned\n", "memory/a/b/c.bin": binary,
		"MEMORY.md": "tenant memory\n", "notes.md": "agent's own\n",
	})
	tenantOwned := func() map[string]string {
		all := readTree(t, ws)
		for p := range all {
			if top, _, _ := cutTop(p); template.Managed(top) {
				delete(all, p)
			}
		}
		return all
	}
	wantOwned := tenantOwned()
	if len(wantOwned) < 5 {
		t.Fatalf("setup: tenant files %v", wantOwned)
	}
	rng := rand.New(rand.NewPCG(1, uint64(rounds)))
	killed, current := 0, 0
	for round := range rounds {
		target := 1 - current
		after := 1 + rng.IntN(30) // an update here takes about 25 steps
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), envChild+"="+state, envTemplate+"="+tps[target].Dir,
			envKillAfter+"="+strconv.Itoa(after))
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL:
			killed++
		default:
			t.Fatalf("round %d: child failed: %v\n%s", round, err, out)
		}
		if err := Recover(state, "acme"); err != nil {
			t.Fatalf("round %d (killed after %d steps): Recover: %v", round, after, err)
		}
		if d := cmp.Diff(wantOwned, tenantOwned()); d != "" {
			t.Fatalf("round %d (killed after %d steps): tenant files changed (-want +got):\n%s", round, after, d)
		}
		version := -1
		for i, tp := range tps {
			var ch Changes
			if err := diffFiles(&ch, ws, tp.Files()); err != nil {
				t.Fatal(err)
			}
			if ch.Empty() {
				version = i
			}
		}
		if version < 0 {
			t.Fatalf("round %d (killed after %d steps): the workspace is neither v1 nor v2: %v", round, after, readTree(t, ws))
		}
		entries, _ := os.ReadDir(filepath.Join(tn.Dir, "agents"))
		if len(entries) != 1 {
			t.Fatalf("round %d: leftovers in agents/: %v", round, entries)
		}
		if _, err := os.Lstat(filepath.Join(tn.Dir, ".install-demo.journal")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("round %d: journal left after recovery", round)
		}
		current = version
	}
	// Half the kill points fall inside the update; far fewer means the
	// step hook stopped being reached and the test checks nothing.
	if killed < rounds/3 {
		t.Fatalf("only %d of %d rounds were killed mid-update", killed, rounds)
	}
	t.Logf("%d rounds, %d killed mid-update", rounds, killed)
}

func cutTop(p string) (string, string, bool) {
	for i := 0; i < len(p); i++ {
		if p[i] == '/' {
			return p[:i], p[i+1:], true
		}
	}
	return p, "", false
}
