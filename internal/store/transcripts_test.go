package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"talon/internal/llm"
)

func user(s string) llm.Message { return llm.Message{Role: llm.RoleUser, Content: s} }

func TestAppendAndRead(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	msgs := []llm.Message{
		user("one"),
		{Role: llm.RoleAssistant, Content: "calling", ToolCalls: []llm.ToolCall{{ID: "c1", Name: "exec", Arguments: `{"cmd":"ls"`}}},
		{Role: llm.RoleTool, ToolCallID: "c1", Name: "exec", Content: "boom", IsError: true},
		{Role: llm.RoleAssistant, Content: "unicode ✓ \u2028 and \x00 bytes"},
	}
	if err := db.AppendMessages(ctx, "s1", msgs[:1]...); err != nil {
		t.Fatal(err)
	}
	db.Now = fixedClock(t0.Add(time.Second))
	if err := db.AppendMessages(ctx, "s1", msgs[1:]...); err != nil {
		t.Fatal(err)
	}
	if err := db.AppendMessages(ctx, "s2", user("other")); err != nil {
		t.Fatal(err)
	}
	if err := db.AppendMessages(ctx, "s1"); err != nil { // nothing to append
		t.Fatal(err)
	}

	cases := []struct {
		limit int
		want  []llm.Message
	}{
		{0, msgs},
		{-5, msgs},
		{10, msgs},
		{4, msgs},
		{2, msgs[2:]},
		{1, msgs[3:]},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("limit=%d", c.limit), func(t *testing.T) {
			got, err := db.Transcript(ctx, "s1", c.limit)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("transcript (-want +got):\n%s", d)
			}
		})
	}

	recs, err := db.TranscriptRecords(ctx, "s1", 0)
	if err != nil {
		t.Fatal(err)
	}
	type sc struct{ Seq, CreatedAt int64 }
	var gotSC []sc
	for _, r := range recs {
		gotSC = append(gotSC, sc{r.Seq, r.CreatedAt})
	}
	ms0 := t0.UnixMilli()
	wantSC := []sc{{1, ms0}, {2, ms0 + 1000}, {3, ms0 + 1000}, {4, ms0 + 1000}}
	if d := cmp.Diff(wantSC, gotSC); d != "" {
		t.Errorf("seq/created_at (-want +got):\n%s", d)
	}
	if got, err := db.Transcript(ctx, "nope", 0); err != nil || len(got) != 0 {
		t.Errorf("unknown session: %v, %v", got, err)
	}
	if err := db.AppendMessages(ctx, "", user("x")); err == nil {
		t.Error("AppendMessages accepted an empty session id")
	}
}

func TestTranscriptAppendOnly(t *testing.T) {
	db := openTest(t)
	if err := db.AppendMessages(context.Background(), "s", user("x")); err != nil {
		t.Fatal(err)
	}
	_, err := db.w.Exec("UPDATE transcripts SET message = '{}'")
	if err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Errorf("UPDATE of a transcript row: %v, want the append-only trigger", err)
	}
	_, err = db.w.Exec("INSERT INTO transcripts (session_id, seq, created_at, role, message) VALUES ('s', 1, 0, 'user', '{}')")
	if err == nil {
		t.Error("a second row with the same (session_id, seq) was accepted")
	}
}

// A batch that fails part-way leaves nothing behind, and the next append
// continues the numbering without a gap.
func TestAppendIsAtomic(t *testing.T) {
	batch := []llm.Message{user("a"), user("b"), user("c")}
	cases := []struct {
		name  string
		run   func(db *DB) error
		wantE string
	}{
		{
			name: "invalid message mid-batch",
			run: func(db *DB) error {
				return db.AppendMessages(context.Background(), "s", user("a"), user("b"), llm.Message{Role: "system", Content: "c"})
			},
			wantE: `message 2: invalid role "system"`,
		},
		{
			name: "context cancelled mid-transaction",
			run: func(db *DB) error {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				testHookAppended = func(i int) {
					if i == 1 {
						cancel()
					}
				}
				defer func() { testHookAppended = nil }()
				return db.AppendMessages(ctx, "s", batch...)
			},
			wantE: "context canceled",
		},
		{
			name: "context cancelled before",
			run: func(db *DB) error {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return db.AppendMessages(ctx, "s", batch...)
			},
			wantE: "context canceled",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			db := openTest(t)
			if err := db.AppendMessages(ctx, "s", user("before")); err != nil {
				t.Fatal(err)
			}
			err := c.run(db)
			if err == nil || !strings.Contains(err.Error(), c.wantE) {
				t.Fatalf("error = %v, want one containing %q", err, c.wantE)
			}
			if c.wantE == "context canceled" && !errors.Is(err, context.Canceled) {
				t.Errorf("error %v is not context.Canceled", err)
			}
			if got, _ := db.Transcript(ctx, "s", 0); !cmp.Equal(got, []llm.Message{user("before")}) {
				t.Errorf("after the failed batch the transcript is %v", got)
			}
			if err := db.AppendMessages(ctx, "s", user("after")); err != nil {
				t.Fatalf("append after the failure: %v", err)
			}
			recs, _ := db.TranscriptRecords(ctx, "s", 0)
			if len(recs) != 2 || recs[1].Seq != 2 || recs[1].Message.Content != "after" {
				t.Errorf("records after recovery: %+v", recs)
			}
		})
	}
}

// Many writers at once never see SQLITE_BUSY, and every session's
// sequence numbers stay dense, unique and in each writer's order.
func TestConcurrentAppends(t *testing.T) {
	const (
		own    = 8   // writers with a session each
		shared = 4   // writers sharing one session
		n      = 200 // messages per writer
	)
	ctx := context.Background()
	db := openTest(t)

	var wg sync.WaitGroup
	errs := make(chan error, own+shared+2)
	write := func(sessionID string, w int) {
		defer wg.Done()
		for i := range n {
			if err := db.AppendMessages(ctx, sessionID, user(fmt.Sprintf("%d/%d", w, i))); err != nil {
				errs <- err
				return
			}
		}
	}
	for w := range own {
		wg.Add(1)
		go write(fmt.Sprintf("own-%d", w), w)
	}
	for w := range shared {
		wg.Add(1)
		go write("shared", w)
	}
	done := make(chan struct{})
	var readers sync.WaitGroup
	for range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				time.Sleep(5 * time.Millisecond)
				if _, err := db.Transcript(ctx, "shared", 50); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	check := func(sessionID string, writers []int) {
		t.Helper()
		recs, err := db.TranscriptRecords(ctx, sessionID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != n*len(writers) {
			t.Fatalf("%s: %d messages, want %d", sessionID, len(recs), n*len(writers))
		}
		next := map[int]int{}
		for i, r := range recs {
			if r.Seq != int64(i+1) {
				t.Fatalf("%s: record %d has seq %d", sessionID, i, r.Seq)
			}
			var w, k int
			fmt.Sscanf(r.Message.Content, "%d/%d", &w, &k)
			if k != next[w] {
				t.Fatalf("%s: writer %d's message %d came where %d was due", sessionID, w, k, next[w])
			}
			next[w]++
		}
	}
	for w := range own {
		check(fmt.Sprintf("own-%d", w), []int{w})
	}
	check("shared", []int{0, 1, 2, 3})
}

// crashChild appends batches of three messages to one session until it is
// killed, printing "acked k" after the k-th batch has committed.
func crashChild(path string) {
	db, err := Open(path)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	ctx := context.Background()
	for k := 1; k <= 1_000_000; k++ {
		err := db.AppendMessages(ctx, "crash",
			user(fmt.Sprintf("%d.1", k)), user(fmt.Sprintf("%d.2", k)), user(fmt.Sprintf("%d.3", k)))
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(2)
		}
		fmt.Printf("acked %d\n", k) // os.Stdout is unbuffered
	}
	os.Exit(0)
}

// Every batch a killed process acknowledged is there after reopening, and
// no batch is there in part.
func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	path := filepath.Join(t.TempDir(), "talon.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	const killAfter = 150
	acked := 0
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		var k int
		if _, err := fmt.Sscanf(line, "acked %d", &k); err != nil {
			cmd.Process.Kill()
			t.Fatalf("child said %q", line)
		}
		acked = k
		if k == killAfter {
			if err := cmd.Process.Kill(); err != nil { // SIGKILL
				t.Fatal(err)
			}
		}
	}
	werr := cmd.Wait()
	if ee := (*exec.ExitError)(nil); !errors.As(werr, &ee) || ee.Success() {
		t.Fatalf("child was not killed: %v", werr)
	}
	if acked < killAfter {
		t.Fatalf("child acknowledged %d batches, want at least %d", acked, killAfter)
	}

	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	recs, err := db.TranscriptRecords(context.Background(), "crash", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs)%3 != 0 {
		t.Errorf("%d messages survived: a batch was written in part", len(recs))
	}
	if len(recs) < 3*acked {
		t.Fatalf("%d messages survived, but %d batches (%d messages) were acknowledged", len(recs), acked, 3*acked)
	}
	for i, r := range recs {
		want := fmt.Sprintf("%d.%d", i/3+1, i%3+1)
		if r.Seq != int64(i+1) || r.Message.Content != want {
			t.Fatalf("record %d = seq %d %q, want seq %d %q", i, r.Seq, r.Message.Content, i+1, want)
		}
	}
	t.Logf("killed after %d acknowledged batches; %d messages survived", acked, len(recs))
}
