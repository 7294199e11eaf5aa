package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"talon/internal/channel"
	"talon/internal/gateway"
	"talon/internal/store"
)

// legacyCredentials writes an OpenClaw credentials directory with good,
// bad and foreign pairing files, and returns it with the files' contents.
func legacyCredentials(t *testing.T) (string, map[string]string) {
	t.Helper()
	base := t.TempDir()
	dir := filepath.Join(base, "credentials")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	iso := func(ago time.Duration) string { return time.Now().Add(-ago).UTC().Format("2006-01-02T15:04:05.000Z") }
	files := map[string]string{
		"telegram-pairing.json": `{"version":1,"requests":[
			{"id":"58466","code":"ABCD2345","createdAt":"` + iso(10*time.Minute) + `","meta":{"accountId":"work","username":"ann"}},
			{"id":"777","code":"abcd2345","createdAt":"` + iso(5*time.Minute) + `"},
			{"id":"778","code":"WXYZ2345","createdAt":"` + iso(2*time.Hour) + `"},
			{"id":"779","code":"EFGH2345","createdAt":"` + iso(time.Minute) + `","lastSeenAt":"` + iso(0) + `"},
			{"code":"JKLM2345","createdAt":"` + iso(time.Minute) + `"}]}`,
		"telegram-allowFrom.json":         `["telegram:100", "tg:200", 300, "*", ""]`,
		"slack-team-allowFrom.json":       `{"version":1,"allowFrom":["slack:U1","user:U2","U1"]}`,
		"discord-allowFrom.json":          `["<@!123>"]`,
		"whatsapp-pairing.json":           `{"requests":[]}`,
		"whatsapp-default-allowFrom.json": `["+15550100"]`,
		"slack-pairing.json":              `{"requests":`,
		"oauth.json":                      `{"token":"x"}`,
		"telegram-big-allowFrom.json":     `["` + strings.Repeat("9", 1<<20) + `"]`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	outside := filepath.Join(base, "outside.json")
	if err := os.WriteFile(outside, []byte(`["666"]`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "discord-out-allowFrom.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("discord-allowFrom.json", filepath.Join(dir, "discord-in-allowFrom.json")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "slack-fifo-allowFrom.json"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, files
}

func TestPairingImport(t *testing.T) {
	creds, files := legacyCredentials(t)
	state := t.TempDir()
	config := `{channels: {telegram: {defaultAccount: "work", accounts: {work: {botToken: "1:a"}}}}}`
	if err := os.WriteFile(filepath.Join(state, "talon.json"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(filepath.Join(state, gateway.StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()

	report := func(verb string, requests, pending, telegram, slack, discord, discordIn, already string) string {
		return strings.Join([]string{
			"discord-allowFrom.json: " + verb + " " + discord + " into discord/default" + already,
			"discord-in-allowFrom.json: " + verb + " " + discordIn,
			"discord-out-allowFrom.json: not imported: reading: openat discord-out-allowFrom.json: path escapes from parent",
			"slack-fifo-allowFrom.json: not imported: reading: not a regular file",
			"slack-pairing.json: not imported: parsing slack-pairing.json: not a JSON object: unexpected end of JSON input",
			"slack-team-allowFrom.json: " + verb + " " + slack,
			"telegram-allowFrom.json: " + verb + " " + telegram,
			`  allowFrom[3]: skipped: "*" (anyone) is not imported: dmPolicy "open" in the config says that`,
			"telegram-big-allowFrom.json: not imported: reading: 1048580 bytes, more than 1 MiB",
			"telegram-pairing.json: " + verb + " " + requests + pending + ", 1 expired, 2 skipped",
			"  requests[1]: skipped: code ABCD2345 is in use by another pending telegram request",
			"  requests[4]: skipped: no id",
			`whatsapp-default-allowFrom.json: skipped: "whatsapp-default" is not a channel Talon runs (telegram, slack, discord)`,
			`whatsapp-pairing.json: skipped: "whatsapp" is not a channel Talon runs (telegram, slack, discord)`,
		}, "\n") + "\n"
	}
	steps := []struct {
		name            string
		args            []string
		out             string
		requests, allow int // in the database after the step
	}{
		{"dry run writes nothing", []string{"--dry-run"},
			report("would import", "2 requests", "", "3 allowed senders into telegram/work, 1 skipped",
				"2 allowed senders into slack/team", "1 allowed sender", "1 allowed sender into discord/in", "") +
				"Would import 2 pairing requests and 7 allowed senders from " + creds + ". Nothing was written (--dry-run).\n",
			0, 0},
		{"import", nil,
			report("imported", "2 requests", "", "3 allowed senders into telegram/work, 1 skipped",
				"2 allowed senders into slack/team", "1 allowed sender", "1 allowed sender into discord/in", "") +
				"Imported 2 pairing requests and 7 allowed senders from " + creds + ". The files are left as they are.\n",
			2, 7},
		{"again: nothing new", nil,
			report("imported", "0 requests", ", 2 already pending", "0 allowed senders into telegram/work, 3 already allowed, 1 skipped",
				"0 allowed senders into slack/team, 2 already allowed", "0 allowed senders", "0 allowed senders into discord/in, 1 already allowed", ", 1 already allowed") +
				"Imported 0 pairing requests and 0 allowed senders from " + creds + ". The files are left as they are.\n",
			2, 7},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			out, errOut, code := talon(t, "", append([]string{"pairing", "import", creds, "--state-dir", state}, s.args...)...)
			want := "talon: pairing import: 4 files could not be read or parsed; the others were imported\n"
			if len(s.args) > 0 {
				want = "talon: pairing import: 4 files could not be read or parsed; nothing was written (--dry-run)\n"
			}
			if code != 1 || errOut != want {
				t.Errorf("exit %d, stderr %q; want 1 for the four bad files, %q", code, errOut, want)
			}
			if d := cmp.Diff(s.out, out); d != "" {
				t.Errorf("report (-want +got):\n%s", d)
			}
			reqs, err := db.PairingRequests(ctx, "", "", time.Now(), channel.PairingTTL)
			if err != nil {
				t.Fatal(err)
			}
			allowed := 0
			for _, ca := range [][2]string{{"telegram", "work"}, {"slack", "team"}, {"discord", "default"}, {"discord", "in"}, {"telegram", "default"}} {
				ids, err := db.PairingAllowList(ctx, ca[0], ca[1])
				if err != nil {
					t.Fatal(err)
				}
				allowed += len(ids)
			}
			if len(reqs) != s.requests || allowed != s.allow {
				t.Errorf("database holds %d requests and %d allowed senders, want %d and %d", len(reqs), allowed, s.requests, s.allow)
			}
		})
	}

	t.Run("what was imported", func(t *testing.T) {
		reqs, err := db.PairingRequests(ctx, "telegram", "", time.Now(), channel.PairingTTL)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range reqs {
			got = append(got, r.AccountID+" "+r.SenderID+" "+r.Code+" "+string(r.Meta))
		}
		want := []string{`work 58466 ABCD2345 {"accountId":"work","username":"ann"}`, `default 779 EFGH2345 {"accountId":"default"}`}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("requests (-want +got):\n%s", d)
		}
		for _, c := range []struct {
			ch, account string
			want        []string
		}{
			{"telegram", "work", []string{"100", "200", "300"}},
			{"slack", "team", []string{"U1", "U2"}},
			{"discord", "default", []string{"123"}},
		} {
			ids, err := db.PairingAllowList(ctx, c.ch, c.account)
			if d := cmp.Diff(c.want, ids); d != "" || err != nil {
				t.Errorf("%s/%s allow list (-want +got):\n%s %v", c.ch, c.account, d, err)
			}
		}
		out, _, code := talon(t, "", "pairing", "approve", "telegram", "efgh2345", "--state-dir", state)
		if code != 0 || !strings.Contains(out, "Approved telegram sender 779 on account default") {
			t.Errorf("approving an imported code: %d %s", code, out)
		}
	})

	t.Run("the files are left as they were", func(t *testing.T) {
		for name, body := range files {
			got, err := os.ReadFile(filepath.Join(creds, name))
			if err != nil || string(got) != body {
				t.Errorf("%s changed (%v)", name, err)
			}
		}
	})

	for _, c := range []struct {
		name string
		args []string
		err  string
	}{
		{"--account is refused", []string{"pairing", "import", creds, "--state-dir", state, "--account", "work"},
			"talon: pairing import: --account does not apply: the files name their accounts\n"},
		{"a missing directory", []string{"pairing", "import", filepath.Join(creds, "nope"), "--state-dir", state},
			"talon: pairing import: opening " + filepath.Join(creds, "nope") + ": open " + filepath.Join(creds, "nope") + ": no such file or directory\n"},
		{"no database", []string{"pairing", "import", creds, "--state-dir", t.TempDir()}, "no channel database at "},
		{"an unknown tenant", []string{"pairing", "import", creds, "--state-dir", state, "--tenant", "acme"}, `talon: no tenant "acme" under ` + state + "\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, errOut, code := talon(t, "", c.args...)
			if code != 2 || !strings.Contains(errOut, c.err) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errOut, c.err)
			}
		})
	}
}

func TestPairingImportTenantEmptyDir(t *testing.T) {
	state := t.TempDir()
	tenant := filepath.Join(state, "tenants", "acme")
	db, err := store.Open(filepath.Join(tenant, gateway.StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	creds := t.TempDir()
	if err := os.WriteFile(filepath.Join(creds, "oauth.json"), []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := talon(t, "", "pairing", "import", creds, "--state-dir", state, "--tenant", "acme")
	want := "No OpenClaw pairing files (<channel>-pairing.json, <channel>[-<account>]-allowFrom.json) in " + creds + ".\n"
	if code != 0 || out != want {
		t.Errorf("exit %d, out %q, stderr %q; want 0 and %q", code, out, errOut, want)
	}
}
