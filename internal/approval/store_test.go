package approval

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"talon/internal/config"
	"talon/internal/testtier"
)

// TestMain lets the crash test re-run this binary as a writer that saves
// in a loop until it is killed.
func TestMain(m *testing.M) {
	if dir := os.Getenv("TALON_APPROVAL_CRASH_WRITER"); dir != "" {
		crashWriter(dir)
		return
	}
	os.Exit(m.Run())
}

// versionFile is the i-th file the crash writer saves; its allowlist is
// long so that a write takes more than one syscall.
func versionFile(i int) *File {
	f := Empty()
	a := &Agent{Security: SecurityAllowlist}
	for j := 0; j < 200; j++ {
		a.Allowlist = append(a.Allowlist, Entry{ID: fmt.Sprintf("e%d", j), Pattern: fmt.Sprintf("/opt/v%d/bin/tool%d", i, j)})
	}
	f.Agents["main"] = a
	return f
}

func crashWriter(dir string) {
	s, err := NewStore(dir)
	if err != nil {
		os.Exit(2)
	}
	for i := 1; ; i++ {
		snap := s.Load()
		if _, err := s.Save(context.Background(), versionFile(i), snap.Hash); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
	}
}

func TestSaveAndLoad(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	s, err := NewStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	snap := s.Load()
	if snap.Exists || snap.Corrupt != nil || snap.Hash != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Fatalf("missing file snapshot = %+v", snap)
	}
	f := Empty()
	f.Agents["main"] = &Agent{Security: SecurityAllowlist, Allowlist: []Entry{{Pattern: "/usr/bin/git"}}}
	out, err := s.Save(context.Background(), f, "")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(s.Path())
	if out.Hash != config.Hash(raw) {
		t.Errorf("returned hash %s is not the hash of the bytes on disk", out.Hash)
	}
	if fi, _ := os.Stat(s.Path()); fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, want 0600", fi.Mode().Perm())
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v, want 0700", fi.Mode().Perm())
	}
	got := s.Load()
	if got.Hash != out.Hash || got.Corrupt != nil || got.File.Agents["main"].Allowlist[0].ID == "" {
		t.Errorf("reloaded = %+v", got)
	}

	// Existing file: baseHash required, and must match.
	if _, err := s.Save(context.Background(), f, ""); err != ErrBaseHashRequired {
		t.Errorf("no baseHash: err = %v", err)
	}
	if _, err := s.Save(context.Background(), f, snap.Hash); err == nil || err.Error() != "exec approvals changed since last load; re-run exec.approvals.get and retry" {
		t.Errorf("stale baseHash: err = %v", err)
	}
	// Socket kept from the current file when the submission has none.
	withSock := got.File.Clone()
	withSock.Socket = &Socket{Path: "/s", Token: "t"}
	o2, err := s.Save(context.Background(), withSock, got.Hash)
	if err != nil {
		t.Fatal(err)
	}
	o3, err := s.Save(context.Background(), Empty(), o2.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if o3.File.Socket == nil || o3.File.Socket.Token != "t" {
		t.Errorf("socket not kept: %+v", o3.File.Socket)
	}
}

func TestCorruptFailsClosed(t *testing.T) {
	for name, content := range map[string]string{"garbage": "{not json", "version 2": `{"version":2}`} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s, _ := NewStore(dir)
			os.WriteFile(s.Path(), []byte(content), 0o600)
			snap := s.Load()
			if snap.Corrupt == nil || !strings.Contains(snap.Corrupt.Error(), "exec is denied until it is fixed") {
				t.Fatalf("Corrupt = %v", snap.Corrupt)
			}
			if snap.File.Defaults != FailClosed().Defaults {
				t.Errorf("policy = %+v, want fail-closed", snap.File.Defaults)
			}
			eff, err := Resolve(PolicyInput{Global: ExecSettings{Security: "full", Ask: "off"}, File: snap.File})
			if err != nil || eff.Security != SecurityDeny || Decide(eff, Verdict{Decidable: true, AllowlistHit: true}, DecideOptions{}).Outcome != OutcomeDeny {
				t.Errorf("effective on a corrupt file = %+v, %v; want deny", eff, err)
			}
			if _, err := s.Update(context.Background(), func(*File) error { return nil }); err == nil {
				t.Error("Update wrote over a corrupt file")
			}
			// The operator can repair it with its hash.
			if _, err := s.Save(context.Background(), Empty(), snap.Hash); err != nil {
				t.Errorf("repair: %v", err)
			}
		})
	}
}

func TestSymlinksAndDirRefused(t *testing.T) {
	dir := t.TempDir()
	s, _ := NewStore(dir)
	target := filepath.Join(t.TempDir(), "elsewhere.json")
	os.WriteFile(target, []byte(`{"version":1}`), 0o600)
	if err := os.Symlink(target, s.Path()); err != nil {
		t.Fatal(err)
	}
	if snap := s.Load(); snap.Corrupt == nil || !strings.Contains(snap.Corrupt.Error(), "symlink") || snap.File.Defaults.Security != SecurityDeny {
		t.Errorf("Load through symlink = %+v", snap)
	}
	if _, err := s.Save(context.Background(), Empty(), config.Hash([]byte(`{"version":1}`))); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("Save through symlink: err = %v", err)
	}

	open := filepath.Join(t.TempDir(), "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777)
	s2, _ := NewStore(open)
	if _, err := s2.Save(context.Background(), Empty(), ""); err == nil || !strings.Contains(err.Error(), "writable by other users") {
		t.Errorf("Save into a world-writable dir: err = %v", err)
	}
}

func TestTwoWritersOneBaseHash(t *testing.T) {
	dir := t.TempDir()
	for round := 0; round < 20; round++ {
		base := (&Store{path: filepath.Join(dir, FileName)}).Load().Hash
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Separate Stores: the flock, not the mutex, must decide.
				s, _ := NewStore(dir)
				f := Empty()
				// Distinct bytes each round: hashes are content addresses, so
				// rewriting identical bytes would (rightly) not be a change.
				f.Agents[fmt.Sprintf("w%d-r%d", w, round)] = &Agent{Security: SecurityDeny}
				_, errs[w] = s.Save(context.Background(), f, base)
			}()
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, ErrChanged):
				t.Fatalf("round %d: loser got %v, want ErrChanged", round, err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d writers won, want exactly 1 (%v)", round, won, errs)
		}
	}
}

func TestKillDuringWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns writers")
	}
	dir := t.TempDir()
	s, _ := NewStore(dir)
	valid := map[string]bool{}
	for i := 1; i <= 5000; i++ { // far more saves than a writer manages in 65 ms
		b, _ := versionFile(i).Marshal()
		valid[config.Hash(b)] = true
	}
	for round := range testtier.Rounds(t, 5, 15) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "TALON_APPROVAL_CRASH_WRITER="+dir)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(5+rand.IntN(60)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: writer ended with %v before the kill: %s", round, err, stderr.String())
		}
		snap := s.Load()
		if !snap.Exists {
			continue // killed before its first rename
		}
		if snap.Corrupt != nil {
			t.Fatalf("round %d: file torn by kill -9: %v", round, snap.Corrupt)
		}
		if !valid[snap.Hash] {
			t.Fatalf("round %d: file is whole but not one of the written versions", round)
		}
	}
	// The file must still be writable: the killed writer's flock is gone.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := s.Save(ctx, Empty(), s.Load().Hash); err != nil {
		t.Fatalf("save after the kills: %v", err)
	}
}

func TestSaveHonoursContextWhileLocked(t *testing.T) {
	dir := t.TempDir()
	s, _ := NewStore(dir)
	unlock, err := (&Store{path: s.Path()}).lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.Save(ctx, Empty(), ""); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the deadline while another holds the lock", err)
	}
}

func TestSnapshotView(t *testing.T) {
	f := Empty()
	f.Socket = &Socket{Path: "/s", Token: "secret"}
	snap := &Snapshot{Path: "/p", Exists: true, Hash: "h", File: f, Warnings: []string{"file"}}
	v := snap.View("submitted")
	if v.File.Socket.Token != "" || f.Socket.Token != "secret" || v.Corrupt != "" || strings.Join(v.Warnings, ",") != "submitted,file" || v.Hash != "h" {
		t.Errorf("view %+v", v)
	}
	snap.Corrupt = errors.New("broken")
	if v := snap.View(); v.Corrupt != "broken" {
		t.Errorf("corrupt view %+v", v)
	}
}
