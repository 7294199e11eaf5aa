package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestApprovalsGetSet(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	out, errs, code := talon(t, "", "approvals", "get", "--state-dir", dir, "--json")
	if code != 0 {
		t.Fatalf("get on a missing file: %d %s", code, errs)
	}
	var view struct {
		Exists bool
		Hash   string
	}
	if err := json.Unmarshal([]byte(out), &view); err != nil || view.Exists || view.Hash != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Fatalf("get = %s (%v)", out, err)
	}

	file := `{"version":1,"socket":{"path":"/s","token":"secret"},"agents":{"main":{"security":"allowlist","ask":"nope","allowlist":["/usr/bin/git"]}}}`
	out, errs, code = talon(t, file, "approvals", "set", "--state-dir", dir)
	if code != 0 || !strings.Contains(out, "hash: ") || !strings.Contains(errs, `agents.main.ask: unknown value "nope" dropped`) {
		t.Fatalf("set: %d\n%s\n%s", code, out, errs)
	}
	hash := strings.TrimSpace(strings.SplitN(out, "hash: ", 2)[1])

	out, _, code = talon(t, "", "approvals", "get", "--state-dir", dir)
	if code != 0 || !strings.Contains(out, "hash: "+hash) || !strings.Contains(out, `"pattern": "/usr/bin/git"`) || strings.Contains(out, "secret") {
		t.Fatalf("get after set: %d\n%s", code, out)
	}

	_, errs, code = talon(t, file, "approvals", "set", "--state-dir", dir)
	if code != 2 || !strings.Contains(errs, "exec approvals base hash required") {
		t.Errorf("set without --base-hash: %d %s", code, errs)
	}
	_, errs, code = talon(t, file, "approvals", "set", "--state-dir", dir, "--base-hash", strings.Repeat("0", 64))
	if code != 2 || !strings.Contains(errs, "exec approvals changed since last load; re-run exec.approvals.get and retry") {
		t.Errorf("set with a stale --base-hash: %d %s", code, errs)
	}
	_, errs, code = talon(t, `{"version":2}`, "approvals", "set", "--state-dir", dir, "--base-hash", hash)
	if code != 2 || !strings.Contains(errs, "version must be 1") {
		t.Errorf("set of a bad file: %d %s", code, errs)
	}
	if _, errs, code = talon(t, `{"version":1}`, "approvals", "set", "--state-dir", dir, "--base-hash", hash); code != 0 {
		t.Errorf("set with the right hash: %d %s", code, errs)
	}

	os.WriteFile(filepath.Join(dir, "exec-approvals.json"), []byte("{oops"), 0o600)
	out, errs, code = talon(t, "", "approvals", "get", "--state-dir", dir)
	if code != 1 || !strings.Contains(errs, "exec is denied until it is fixed") || !strings.Contains(out, `"security": "deny"`) {
		t.Errorf("get of a corrupt file: %d\n%s\n%s", code, out, errs)
	}
}
