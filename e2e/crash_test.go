package e2e

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the driver the store uses, for PRAGMA integrity_check

	"talon/internal/config"
	"talon/internal/fakellm"
	"talon/internal/llm"
	"talon/internal/session"
	"talon/internal/store"
	"talon/internal/testtier"
)

// Crash test figures: rounds of load ended by SIGKILL (in the fast tier
// and in the full one), clients per round, and how many acknowledged turns
// a round waits for before the kill can come.
const (
	crashRoundsFast  = 2
	crashRounds      = 5
	crashClients     = 12
	crashMinAcked    = 8
	crashMaxKillWait = 500 * time.Millisecond
	crashRoundLimit  = time.Minute // bounds one round, against hanging
)

// ack is a turn the gateway acknowledged, and the reply the client got.
type ack struct {
	turn
	reply string
}

// TestKillDuringWrites: talon serve is killed with SIGKILL at a random
// moment while clients send turns on their own sessions, and restarted on
// the same state dir, crashRounds times (crashRoundsFast in the fast
// tier). After every kill, every turn a
// client got a complete reply for is in its session's transcript with that
// reply (a turn is fsynced before the client sees it), the SQLite file
// passes PRAGMA integrity_check and the config still parses. Exec
// approvals have no file yet: they come with issue 6, and this test will
// check that file then.
func TestKillDuringWrites(t *testing.T) {
	llm, err := fakellm.Start(fakellm.Options{Reply: "acknowledged and stored", Chunks: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer llm.Close()
	dir := t.TempDir()
	cfg := writeModelConfig(t, dir, map[string]string{"fake": llm.BaseURL()}, "fake/"+fakellm.Model)

	seed := uint64(time.Now().UnixNano())
	t.Logf("random seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, seed))
	var all []ack
	for round := 1; round <= testtier.Rounds(t, crashRoundsFast, crashRounds); round++ {
		acked := loadAndKill(t, dir, round, time.Duration(rnd.Int64N(int64(crashMaxKillWait))))
		if len(acked) < crashMinAcked {
			t.Fatalf("round %d: only %d turns acknowledged before the kill", round, len(acked))
		}
		all = append(all, acked...)
		checkAfterCrash(t, dir, cfg, all)
		if t.Failed() {
			t.Fatalf("round %d: state after the kill is not what was acknowledged", round)
		}
	}

	// The last restart serves the sessions it finds.
	p := startTalon(t, dir)
	c := &http.Client{Timeout: 30 * time.Second}
	reply, err := send(context.Background(), c, p.URL, turn{user: all[0].user, text: "still there?"})
	if err != nil || reply != "acknowledged and stored" {
		t.Errorf("a turn after the last restart: %q, %v", reply, err)
	}
	if err := p.Stop(shutdownTimeout); err != nil {
		t.Errorf("%v; its log:\n%s", err, p.Log)
	}
}

// loadAndKill starts talon serve on dir, has crashClients clients send
// turns until crashMinAcked are acknowledged, waits killAfter more, kills
// the process with SIGKILL and returns the acknowledged turns.
func loadAndKill(t *testing.T, dir string, round int, killAfter time.Duration) []ack {
	t.Helper()
	p := startTalon(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), crashRoundLimit)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: crashClients}}
	defer client.CloseIdleConnections()

	var (
		mu     sync.Mutex
		acked  []ack
		killed atomic.Bool
		enough = make(chan struct{})
		wg     sync.WaitGroup
	)
	for c := range crashClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				tr := turn{
					user:   fmt.Sprintf("crash-%d", c),
					text:   fmt.Sprintf("round %d, client %d, turn %d", round, c, i),
					stream: (c+i)%2 == 0,
				}
				reply, err := send(ctx, client, p.URL, tr)
				if err != nil {
					// After the kill every turn in flight fails; before it,
					// none may.
					if !killed.Load() && ctx.Err() == nil {
						t.Errorf("round %d: %s: %v", round, tr.text, err)
					}
					return
				}
				mu.Lock()
				acked = append(acked, ack{tr, reply})
				if len(acked) == crashMinAcked {
					close(enough)
				}
				mu.Unlock()
			}
		}()
	}
	select {
	case <-enough:
	case <-ctx.Done():
		t.Errorf("round %d: %d turns were not acknowledged within %v; talon's log:\n%s", round, crashMinAcked, crashRoundLimit, p.Log)
	}
	time.Sleep(killAfter)
	killed.Store(true)
	if err := p.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("round %d: sending SIGKILL: %v", round, err)
	}
	for {
		if done, _ := p.Exited(); done {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("round %d: talon serve still runs after SIGKILL", round)
		}
		time.Sleep(10 * time.Millisecond)
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	t.Logf("round %d: %d turns acknowledged, killed %v after the %dth", round, len(acked), killAfter, crashMinAcked)
	return acked
}

// checkAfterCrash checks the state dir of a killed gateway: the database's
// integrity, the config, and every acknowledged turn.
func checkAfterCrash(t *testing.T, dir string, cfg []byte, acked []ack) {
	t.Helper()
	dbPath := filepath.Join(dir, "talon.db")

	// The file as the kill left it (SQLite replays the WAL on open), before
	// anything of talon's opens it.
	db, err := sql.Open("sqlite", dbPath+"?_pragma=query_only(1)")
	if err != nil {
		t.Fatalf("opening %s: %v", dbPath, err)
	}
	var rows []string
	res, err := db.Query("PRAGMA integrity_check")
	if err != nil {
		t.Fatalf("PRAGMA integrity_check: %v", err)
	}
	for res.Next() {
		var s string
		if err := res.Scan(&s); err != nil {
			t.Fatalf("PRAGMA integrity_check: %v", err)
		}
		rows = append(rows, s)
	}
	if err := errors.Join(res.Err(), res.Close(), db.Close()); err != nil {
		t.Fatalf("PRAGMA integrity_check: %v", err)
	}
	if len(rows) != 1 || rows[0] != "ok" {
		t.Errorf("PRAGMA integrity_check on %s: %q, want ok", dbPath, rows)
	}

	// The config: talon does not write it yet, but a kill must never leave
	// it half written once it does (config.patch).
	path := filepath.Join(dir, "talon.json")
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the config: %v", err)
	}
	if _, err := config.Load(path); err != nil || string(got) != string(cfg) {
		t.Errorf("the config after the kill: %v; %d bytes, %d written", err, len(got), len(cfg))
	}

	// Every acknowledged turn: the user's message, and right after it the
	// reply the client got, in the order the client sent them.
	st, err := store.Open(dbPath)
	if err != nil {
		t.Fatalf("opening the store: %v", err)
	}
	defer st.Close()
	transcripts := map[string][]llm.Message{}
	next := map[string]int{} // where to look for a session's next turn
	for _, a := range acked {
		key := session.OpenAIUser("main", a.user)
		msgs, ok := transcripts[key]
		if !ok {
			e, err := st.GetSession(context.Background(), "main", key)
			if err != nil {
				t.Errorf("session %s of acknowledged turn %q: %v", key, a.text, err)
				continue
			}
			if msgs, err = st.Transcript(context.Background(), e.SessionID, 0); err != nil {
				t.Fatalf("reading the transcript of %s: %v", key, err)
			}
			transcripts[key] = msgs
		}
		i := next[key]
		for i < len(msgs) && !(msgs[i].Role == llm.RoleUser && msgs[i].Content == a.text) {
			i++
		}
		if i == len(msgs) {
			t.Errorf("%s: acknowledged turn %q is not in the transcript (after message %d)", key, a.text, next[key])
			continue
		}
		if i+1 == len(msgs) || msgs[i+1].Role != llm.RoleAssistant || msgs[i+1].Content != a.reply || msgs[i+1].StopReason != "" {
			t.Errorf("%s: acknowledged turn %q: the message after it is not the reply %q: %+v", key, a.text, a.reply, msgs[i+1:])
			continue
		}
		next[key] = i + 2
	}
	checkLedgerAfterCrash(t, dbPath, st, transcripts)
}

// checkLedgerAfterCrash: each model answer a session's transcript stores
// has exactly one usage ledger row, with the tokens stored with the
// answer (they are written in one commit), so an acknowledged turn is
// counted once, a kill loses none and a restart doubles none.
func checkLedgerAfterCrash(t *testing.T, dbPath string, st *store.DB, sessions map[string][]llm.Message) {
	t.Helper()
	db, err := sql.Open("sqlite", dbPath+"?_pragma=query_only(1)")
	if err != nil {
		t.Fatalf("opening %s: %v", dbPath, err)
	}
	defer db.Close()
	for key := range sessions {
		e, err := st.GetSession(context.Background(), "main", key)
		if err != nil {
			t.Fatalf("session %s: %v", key, err)
		}
		recs, err := st.TranscriptRecords(context.Background(), e.SessionID, 0)
		if err != nil {
			t.Fatalf("reading the transcript of %s: %v", key, err)
		}
		var answers, in, out int64
		for _, r := range recs {
			if r.Kind == store.KindMessage && r.Message.Role == llm.RoleAssistant {
				answers++
				in += r.Usage.Input
				out += r.Usage.Output
			}
		}
		var calls, lin, lout int64
		if err := db.QueryRow(`SELECT count(*), coalesce(sum(input), 0), coalesce(sum(output), 0) FROM usage WHERE session_key = ? AND kind = 'turn'`, key).Scan(&calls, &lin, &lout); err != nil {
			t.Fatalf("reading the ledger of %s: %v", key, err)
		}
		if calls != answers || lin != in || lout != out || calls == 0 {
			t.Errorf("%s: the ledger has %d calls (%d in, %d out), the transcript %d answers (%d in, %d out)", key, calls, lin, lout, answers, in, out)
		}
	}
}
