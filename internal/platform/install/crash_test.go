package install

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"talon/internal/atomicfile"
	"talon/internal/platform/template"
	"talon/internal/store/catalog"
	"talon/internal/testtier"
)

// Environment of TestUpdateKill9's child process (see TestMain).
const (
	envChild     = "TALON_INSTALL_CRASH_CHILD" // state dir
	envTemplate  = "TALON_INSTALL_CRASH_TEMPLATE"
	envKillAfter = "TALON_INSTALL_CRASH_AFTER" // steps before SIGKILL
	// TALON_INSTALL_CRASH_ROUNDS sets the number of rounds (default 10 in
	// the fast tier, 50 in the full one: internal/testtier).
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

// catalogFile stands for the platform's catalog in the crash test: the
// installation's record, written after the update as the platform does.
func catalogFile(state string) string { return filepath.Join(state, "catalog.json") }

// effectiveRecord is the record a sync would start from: the pending one
// when an update left it unsettled, else the catalog's.
func effectiveRecord(state string) ([]catalog.ShippedFile, error) {
	if files, ok, err := Pending(state, "acme", "demo"); err != nil || ok {
		return files, err
	}
	data, err := os.ReadFile(catalogFile(state))
	if err != nil {
		return nil, err
	}
	var files []catalog.ShippedFile
	return files, json.Unmarshal(data, &files)
}

// crashChild syncs tenant "acme" to the template in envTemplate as the
// platform does — Recover, take the record, Update, store the record,
// Settle — and kills itself with SIGKILL after envKillAfter steps that
// change the disk.
func crashChild(state string) {
	die := func(err error) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	n, err := strconv.Atoi(os.Getenv(envKillAfter))
	if err != nil {
		die(err)
	}
	tp, err := template.Load(os.Getenv(envTemplate))
	if err != nil {
		die(err)
	}
	count := 0
	hook = func(string) {
		if count++; count == n {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // never go on past the kill
		}
	}
	if err := Recover(state, "acme"); err != nil {
		die(err)
	}
	record, err := effectiveRecord(state)
	if err != nil {
		die(err)
	}
	res, err := Update(state, "acme", tp, record)
	if err != nil {
		die(err)
	}
	data, _ := json.Marshal(res.Files)
	if err := atomicfile.Write(catalogFile(state), data, 0o600); err != nil {
		die(err)
	}
	step("catalog")
	if err := Settle(state, "acme", "demo", res.Files); err != nil {
		die(err)
	}
}

// TestUpdateKill9 kills a sync at every kind of point, again and again,
// alternating between two template versions, and checks after recovery
// that the employee's files are byte for byte what they were, that its
// edit of a template file both versions change is never lost (it is at
// AGENTS.md or in exactly one kept copy), that the template's files are
// wholly the old version or wholly the new one, and that the record a
// sync would start from is the one of the version on disk.
func TestUpdateKill9(t *testing.T) {
	rounds := testtier.Rounds(t, 10, 50)
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
	res, err := Install(state, "acme", tps[0])
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(res.Files)
	if err := atomicfile.Write(catalogFile(state), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Settle(state, "acme", "demo", res.Files); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(tn.Dir, "agents", "demo")
	binary := string([]byte{0, 1, 2, 255, 254, '\n'})
	const edit = "the employee's own AGENTS.md\n"
	writeFiles(t, ws, map[string]string{
		"memory/2026-01-01.md": "what we learned\n", "memory/a/b/c.bin": binary,
		"MEMORY.md": "tenant memory\n", "notes.md": "agent's own\n",
		"USER.md": "the user\n", "skills/mine/SKILL.md": "---\nname: mine\ndescription: Mine.\n---\n",
		"api-tools/own.yaml": "the employee's\n", "AGENTS.md": edit,
	})
	templatePaths := map[string]bool{}
	for _, tp := range tps {
		for _, f := range Shipped(tp) {
			templatePaths[f.Path] = true
		}
	}
	tenantOwned := func() map[string]string {
		all := readTree(t, ws)
		for p := range all {
			if templatePaths[p] || strings.Contains(p, LocalSuffix) {
				delete(all, p)
			}
		}
		return all
	}
	wantOwned := tenantOwned()
	if len(wantOwned) < 8 {
		t.Fatalf("setup: tenant files %v", wantOwned)
	}
	rng := rand.New(rand.NewPCG(1, uint64(rounds)))
	killed, current := 0, 0
	for round := range rounds {
		target := 1 - current
		after := 1 + rng.IntN(30) // a sync here takes about 20 steps
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
		where := fmt.Sprintf("round %d (killed after %d steps)", round, after)
		if err := Recover(state, "acme"); err != nil {
			t.Fatalf("%s: Recover: %v", where, err)
		}
		if d := cmp.Diff(wantOwned, tenantOwned()); d != "" {
			t.Fatalf("%s: tenant files changed (-want +got):\n%s", where, d)
		}
		tree := readTree(t, ws)
		var edits []string
		for p, body := range tree {
			if body == edit {
				edits = append(edits, p)
			}
		}
		if len(edits) != 1 || (edits[0] != "AGENTS.md" && !strings.HasPrefix(edits[0], "AGENTS.md"+LocalSuffix)) {
			t.Fatalf("%s: the employee's edit of AGENTS.md is at %v, want exactly one of AGENTS.md or a kept copy", where, edits)
		}
		version := -1
		for i, tp := range tps {
			if wholly(tree, tp, tps[1-i], edit) {
				version = i
			}
		}
		if version < 0 {
			t.Fatalf("%s: the workspace is neither v1 nor v2: %v", where, tree)
		}
		record, err := effectiveRecord(state)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(Shipped(tps[version]), record); d != "" {
			t.Fatalf("%s: the workspace is v%d but a sync would start from another record (-want +got):\n%s", where, version+1, d)
		}
		entries, _ := os.ReadDir(filepath.Join(tn.Dir, "agents"))
		if len(entries) != 1 {
			t.Fatalf("%s: leftovers in agents/: %v", where, entries)
		}
		if _, err := os.Lstat(filepath.Join(tn.Dir, ".install-demo.journal")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: journal left after recovery", where)
		}
		current = version
	}
	// Half the kill points fall inside the sync; far fewer means the step
	// hook stopped being reached and the test checks nothing.
	if killed < rounds/3 {
		t.Fatalf("only %d of %d rounds were killed mid-sync", killed, rounds)
	}
	t.Logf("%d rounds, %d killed mid-sync", rounds, killed)
}

// wholly reports whether tree holds every file of tp as tp ships it
// (AGENTS.md may still be the employee's edit, before the first update
// that kept it) and none of the files only other ships, as other ships
// them.
func wholly(tree map[string]string, tp, other *template.Template, edit string) bool {
	mine := map[string]bool{}
	for _, f := range tp.Files() {
		if f.Mode.IsDir() {
			continue
		}
		mine[f.Path] = true
		if got := tree[f.Path]; got != string(f.Data) && !(f.Path == "AGENTS.md" && got == edit) {
			return false
		}
	}
	for _, f := range other.Files() {
		if !f.Mode.IsDir() && !mine[f.Path] && tree[f.Path] == string(f.Data) {
			return false
		}
	}
	return true
}
