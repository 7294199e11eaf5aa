package exec

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"talon/internal/tools"
)

func TestForeground(t *testing.T) {
	r := newRig(t, DefaultLimits())
	if err := os.Mkdir(filepath.Join(r.dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	fg := r.envFor("main", "agent:main:main")
	fg.Background = false
	cases := []struct {
		name    string
		args    map[string]any
		want    []string // in the result, in order
		isError bool
	}{
		{"output and exit", map[string]any{"command": "echo out; echo err >&2"}, []string{"out\nerr\n", "[exit code 0 · ran "}, false},
		{"no output", map[string]any{"command": "true"}, []string{"(no output)\n[exit code 0"}, false},
		{"failure", map[string]any{"command": "echo no; exit 7"}, []string{"no\n", "[exit code 7 · ran "}, true},
		{"last line without newline", map[string]any{"command": "printf abc"}, []string{"abc\n[exit code 0"}, false},
		{"workdir relative", map[string]any{"command": "pwd", "workdir": "sub"}, []string{filepath.Join(r.dir, "sub") + "\n"}, false},
		{"workdir missing", map[string]any{"command": "pwd", "workdir": "nope"}, []string{`exec: working directory "/workspace/nope" does not exist; the command did not run`}, true},
		{"workdir outside", map[string]any{"command": "pwd", "workdir": "/"}, []string{`exec: working directory "/" is outside the workspace`}, true},
		{"env", map[string]any{"command": `echo "$GREETING $OPENCLAW_SHELL"`, "env": map[string]string{"GREETING": "hi there"}}, []string{"hi there exec\n"}, false},
		{"signal", map[string]any{"command": "kill -KILL $$"}, []string{"[ended by signal: killed · ran "}, true},
		{"timeout", map[string]any{"command": "echo before; sleep 300", "timeout": 1}, []string{"before\n", "[timed out: killed with everything it started · ran "}, true},
		{"background ignored", map[string]any{"command": "echo fg", "background": true}, []string{"fg\n", "[exit code 0", "background and yieldMs do not apply"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := r.run(r.exec, fg, c.args)
			if res.IsError != c.isError {
				t.Errorf("IsError = %v, want %v: %s", res.IsError, c.isError, res.Text)
			}
			rest := res.Text
			for _, w := range c.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("result %q lacks %q (in order)", res.Text, w)
				}
				rest = rest[i+len(w):]
			}
		})
	}
	if list := r.run(r.process, fg, map[string]any{"action": "list"}); list.Text != "No background jobs in this session." {
		t.Errorf("foreground commands left jobs: %s", list.Text)
	}
}

var truncRE = regexp.MustCompile(`\[\.\.\. (\d+) bytes truncated \.\.\.\]`)

// TestFlood: a command writing far more than a result holds gets the
// first and last bytes and an exact count of the rest.
func TestFlood(t *testing.T) {
	r := newRig(t, DefaultLimits())
	const n = 3 << 20
	for _, bg := range []bool{false, true} {
		t.Run(fmt.Sprintf("background process tool %v", bg), func(t *testing.T) {
			env := r.envFor("main", "flood")
			env.Background = bg
			res := r.run(r.exec, env, map[string]any{"command": fmt.Sprintf("head -c %d /dev/zero | tr '\\0' a; echo; echo END", n), "yieldMs": 600000})
			if res.IsError {
				t.Fatalf("%.300s", res.Text)
			}
			m := truncRE.FindStringSubmatch(res.Text)
			if m == nil || m[1] != fmt.Sprint(n+1+4-ResultHead-ResultTail) {
				t.Errorf("truncation mark %v, want %d bytes", m, n+1+4-ResultHead-ResultTail)
			}
			if !strings.HasPrefix(res.Text, strings.Repeat("a", ResultHead)+"\n[... ") || !strings.Contains(res.Text, "a\nEND\n[exit code 0") {
				t.Errorf("result does not keep the first and last bytes: %.100s ... %.100s", res.Text, res.Text[len(res.Text)-100:])
			}
			if len(res.Text) > ResultHead+ResultTail+200 {
				t.Errorf("result is %d bytes", len(res.Text))
			}
		})
	}
}

func TestBackgroundJob(t *testing.T) {
	r := newRig(t, DefaultLimits())
	id := r.start(r.env, `echo ready; read a; read b; echo "got $a $b"; cat; echo bye; exit 3`)

	list := r.run(r.process, r.env, map[string]any{"action": "list"})
	if !strings.HasPrefix(list.Text, id+"  running for ") || !strings.Contains(list.Text, `echo ready; read a;`) {
		t.Errorf("list: %s", list.Text)
	}
	// "ready" is in exec's result or in a poll after it, never in both.
	for out := r.lastStart; !strings.Contains(out, "ready"); {
		res := r.run(r.process, r.env, map[string]any{"action": "poll", "sessionId": id, "timeout": MaxPollWaitMs})
		out += res.Text
		if hasEnded(res.Text) {
			t.Fatalf("ended early: %s", out)
		}
	}
	w := r.run(r.process, r.env, map[string]any{"action": "write", "sessionId": id, "data": "one\ntwo\n"})
	if w.IsError || w.Text != fmt.Sprintf("Wrote 8 bytes to the stdin of job %s.", id) {
		t.Errorf("write: %+v", w)
	}
	w = r.run(r.process, r.env, map[string]any{"action": "write", "sessionId": id, "data": "tail", "eof": true})
	if w.IsError || !strings.HasSuffix(w.Text, "and closed it.") {
		t.Errorf("write eof: %+v", w)
	}
	w = r.run(r.process, r.env, map[string]any{"action": "write", "sessionId": id, "data": "more"})
	if !w.IsError || !strings.Contains(w.Text, "closed by an earlier write with eof") && !strings.Contains(w.Text, "has ended") {
		t.Errorf("write after eof: %+v", w)
	}
	polled, last := r.waitEnd(r.env, id)
	// The polls since "ready" showed the rest, in as many pieces as it
	// came in; the log below has it exactly.
	if !regexp.MustCompile(`(?s)got one two\n.*tail.*bye\n`).MatchString(polled) || strings.Contains(polled, "ready") {
		t.Errorf("polls:\n%s", polled)
	}
	if !last.IsError || !strings.Contains(last.Text, "[job "+id+" exited with code 3 after ") {
		t.Errorf("last poll: %+v", last)
	}
	// A poll after the end has nothing new.
	again := r.run(r.process, r.env, map[string]any{"action": "poll", "sessionId": id})
	if !strings.HasPrefix(again.Text, "(no new output)\n[job "+id+" exited with code 3") {
		t.Errorf("poll after end: %s", again.Text)
	}
	log := r.run(r.process, r.env, map[string]any{"action": "log", "sessionId": id})
	if !strings.HasPrefix(log.Text, "ready\ngot one two\ntailbye\n[all 3 lines]\n[job ") {
		t.Errorf("log: %s", log.Text)
	}
	kill := r.run(r.process, r.env, map[string]any{"action": "kill", "sessionId": id})
	if kill.IsError || !strings.HasPrefix(kill.Text, "Job "+id+" had already ended: exited with code 3") {
		t.Errorf("kill after end: %+v", kill)
	}
	rm := r.run(r.process, r.env, map[string]any{"action": "remove", "sessionId": id})
	if rm.IsError || !strings.HasPrefix(rm.Text, "Removed job "+id) {
		t.Errorf("remove: %+v", rm)
	}
	if res := r.run(r.process, r.env, map[string]any{"action": "poll", "sessionId": id}); !strings.Contains(res.Text, "no such job") {
		t.Errorf("poll after remove: %s", res.Text)
	}
}

func TestYield(t *testing.T) {
	r := newRig(t, DefaultLimits())
	// Ends before yieldMs: an ordinary result, no job.
	res := r.run(r.exec, r.env, map[string]any{"command": "echo quick", "yieldMs": 600000})
	if res.IsError || !strings.HasPrefix(res.Text, "quick\n[exit code 0") {
		t.Errorf("quick: %+v", res)
	}
	if list := r.run(r.process, r.env, map[string]any{"action": "list"}); list.Text != "No background jobs in this session." {
		t.Errorf("a command that ended in time became a job: %s", list.Text)
	}

	// Still running after yieldMs: a job, killed with what it started.
	res = r.run(r.exec, r.env, map[string]any{"command": "sleep 300 & echo child $!; wait", "yieldMs": 1})
	m := jobIDRE.FindStringSubmatch(res.Text)
	if res.IsError || m == nil || !strings.HasPrefix(res.Text, "Still running after 1ms, so it continues in the background as job ") {
		t.Fatalf("yield: %+v", res)
	}
	id := m[1]
	out := res.Text
	for !strings.Contains(out, "child ") {
		out += r.run(r.process, r.env, map[string]any{"action": "poll", "sessionId": id, "timeout": MaxPollWaitMs}).Text
	}
	var child int
	fmt.Sscanf(out[strings.Index(out, "child ")+len("child "):], "%d", &child)
	kill := r.run(r.process, r.env, map[string]any{"action": "kill", "sessionId": id})
	if kill.IsError || !strings.HasPrefix(kill.Text, "Killed job "+id+": ended by signal killed after ") {
		t.Errorf("kill: %+v", kill)
	}
	if child <= 0 || !stopped(child) {
		t.Errorf("child %d of the killed job still runs", child)
	}
	list := r.run(r.process, r.env, map[string]any{"action": "list"})
	if !strings.HasPrefix(list.Text, id+"  ended by signal killed after ") {
		t.Errorf("list: %s", list.Text)
	}
}

// stopped reports whether pid stops running within ten seconds (a kill
// takes effect when the process is next scheduled): it is gone, or a
// zombie its new parent has not reaped.
func stopped(pid int) bool {
	for range 1000 {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true
		}
		if s := string(stat); strings.Contains(s[strings.LastIndexByte(s, ')'):], ") Z ") {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// TestOwnership: a job is seen only by the session that started it; in
// every other session, and in another tenant's workspace with the same
// agent id and session key, it does not exist.
func TestOwnership(t *testing.T) {
	r := newRig(t, DefaultLimits())
	id := r.start(r.env, "sleep 300")
	other := newRig(t, DefaultLimits())
	otherTenant := other.envFor("main", "agent:main:main")
	otherTenant.Sandbox = r.sb
	strangers := map[string]*tools.Env{
		"other session":                 r.envFor("main", "agent:main:other"),
		"other agent":                   r.envFor("ops", "agent:main:main"),
		"other tenant, same agent/key":  otherTenant,
		"no workspace, same agent/key":  {AgentID: "main", SessionKey: "agent:main:main", Sandbox: r.sb, ExecPolicy: hostFull, Background: true},
		"same workspace, empty session": r.envFor("main", ""),
	}
	for name, env := range strangers {
		t.Run(name, func(t *testing.T) {
			if list := r.run(r.process, env, map[string]any{"action": "list"}); list.Text != "No background jobs in this session." {
				t.Errorf("list shows %s", list.Text)
			}
			for _, args := range []map[string]any{
				{"action": "poll", "sessionId": id},
				{"action": "log", "sessionId": id},
				{"action": "write", "sessionId": id, "data": "x"},
				{"action": "kill", "sessionId": id},
				{"action": "remove", "sessionId": id},
			} {
				res := r.run(r.process, env, args)
				if !res.IsError || !strings.HasPrefix(res.Text, fmt.Sprintf("no such job %q in this session", id)) {
					t.Errorf("%v: %+v", args["action"], res)
				}
			}
		})
	}
	if list := r.run(r.process, r.env, map[string]any{"action": "list"}); !strings.HasPrefix(list.Text, id+"  running") {
		t.Errorf("the owner lost its job: %s", list.Text)
	}
}

func TestJobLimits(t *testing.T) {
	r := newRig(t, Limits{PerSession: 2, Total: 3, HeadBytes: 1 << 10, TailBytes: 1 << 10, TTL: time.Hour})
	a, b, c := r.envFor("main", "a"), r.envFor("main", "b"), r.envFor("main", "c")
	a1 := r.start(a, "sleep 300")
	r.start(a, "sleep 300")
	res := r.run(r.exec, a, map[string]any{"command": "touch third", "background": true})
	if !res.IsError || !strings.Contains(res.Text, "this session already has 2 background jobs running, its limit") {
		t.Errorf("third job: %+v", res)
	}
	// The refused job was killed before it could matter, and is not listed.
	if n := strings.Count(r.run(r.process, a, map[string]any{"action": "list"}).Text, "\n") + 1; n != 2 {
		t.Errorf("session a lists %d jobs", n)
	}
	// A finished job makes room: the oldest finished one is dropped.
	r.run(r.process, a, map[string]any{"action": "kill", "sessionId": a1})
	a3 := r.start(a, "sleep 300")
	list := r.run(r.process, a, map[string]any{"action": "list"}).Text
	if strings.Contains(list, a1) || !strings.Contains(list, a3) {
		t.Errorf("after eviction: %s", list)
	}
	// The table as a whole.
	r.start(b, "sleep 300")
	res = r.run(r.exec, c, map[string]any{"command": "sleep 300", "background": true})
	if !res.IsError || !strings.Contains(res.Text, "the gateway already holds 3 background jobs, its limit") {
		t.Errorf("fourth job in the table: %+v", res)
	}
	// yieldMs with a full table: the command stays in the foreground.
	res = r.run(r.exec, c, map[string]any{"command": "sleep 0.2; echo stayed", "yieldMs": 1})
	if res.IsError || !strings.HasPrefix(res.Text, "stayed\n[exit code 0") || !strings.Contains(res.Text, "could not go to the background after 1ms: the gateway already holds 3") {
		t.Errorf("yield with a full table: %+v", res)
	}
}

func TestTTL(t *testing.T) {
	r := newRig(t, Limits{PerSession: 4, Total: 4, HeadBytes: 1 << 10, TailBytes: 1 << 10, TTL: time.Minute})
	now := time.Date(2026, 3, 13, 12, 0, 0, 0, time.UTC)
	clock := make(chan time.Time, 1)
	clock <- now
	r.jobs.now = func() time.Time { t := <-clock; clock <- t; return t }
	set := func(t time.Time) { <-clock; clock <- t }

	done := r.start(r.env, "echo done")
	running := r.start(r.env, "sleep 300")
	r.waitEnd(r.env, done)
	set(now.Add(time.Minute)) // exactly the TTL: still kept
	if list := r.run(r.process, r.env, map[string]any{"action": "list"}).Text; !strings.Contains(list, done) {
		t.Errorf("finished job gone at its TTL: %s", list)
	}
	set(now.Add(time.Minute + time.Second))
	list := r.run(r.process, r.env, map[string]any{"action": "list"}).Text
	if strings.Contains(list, done) || !strings.Contains(list, running) {
		t.Errorf("after the TTL: %s", list)
	}
	if res := r.run(r.process, r.env, map[string]any{"action": "log", "sessionId": done}); !strings.Contains(res.Text, "no such job") {
		t.Errorf("log of an expired job: %s", res.Text)
	}
}

func TestLog(t *testing.T) {
	r := newRig(t, DefaultLimits())
	id := r.start(r.env, "seq 1 500")
	r.waitEnd(r.env, id)
	lines := func(a, b int) string {
		var s strings.Builder
		for i := a; i <= b; i++ {
			fmt.Fprintf(&s, "%d\n", i)
		}
		return s.String()
	}
	cases := []struct {
		name string
		args map[string]any
		want string
	}{
		{"default: last 200", map[string]any{}, lines(301, 500) + "[lines 301-500 of 500 shown]"},
		{"offset and limit", map[string]any{"offset": 10, "limit": 5}, lines(10, 14) + "[lines 10-14 of 500 shown]"},
		{"offset to the end", map[string]any{"offset": 495}, lines(495, 500) + "[lines 495-500 of 500 shown]"},
		{"last lines", map[string]any{"limit": 3}, lines(498, 500) + "[lines 498-500 of 500 shown]"},
		{"everything", map[string]any{"offset": 1, "limit": 2000}, lines(1, 500) + "[all 500 lines]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := map[string]any{"action": "log", "sessionId": id}
			for k, v := range c.args {
				args[k] = v
			}
			res := r.run(r.process, r.env, args)
			if res.IsError || !strings.HasPrefix(res.Text, c.want+"\n[job "+id+" exited with code 0") {
				t.Errorf("log:\n%s\nwant prefix:\n%s", res.Text, c.want)
			}
		})
	}
}

// TestLogBounds: a job keeps only its first and last bytes, and one log
// call returns at most MaxLogBytes, saying where to continue.
func TestLogBounds(t *testing.T) {
	r := newRig(t, Limits{PerSession: 4, Total: 4, HeadBytes: 100, TailBytes: 200 << 10, TTL: time.Hour})
	dots := strings.Repeat(".", 40)
	id := r.start(r.env, "seq -f '%g "+dots+"' 1 100000")
	r.waitEnd(r.env, id)
	res := r.run(r.process, r.env, map[string]any{"action": "log", "sessionId": id, "offset": 1, "limit": MaxLogLines})
	if !strings.HasPrefix(res.Text, "1 "+dots+"\n2 "+dots+"\n") || !strings.Contains(res.Text, "bytes truncated ...]\n") {
		t.Errorf("log head: %.300s", res.Text)
	}
	if len(res.Text) > MaxLogBytes+300 || !regexp.MustCompile(`\[lines 1-\d+ of \d+ shown \(64 KiB limit\); call log with offset=\d+ to continue\]`).MatchString(res.Text) {
		t.Errorf("log of %d bytes, tail %q", len(res.Text), res.Text[len(res.Text)-200:])
	}
	last := r.run(r.process, r.env, map[string]any{"action": "log", "sessionId": id, "limit": 2})
	if !strings.HasPrefix(last.Text, "99999 "+dots+"\n100000 "+dots+"\n") {
		t.Errorf("last lines: %.100s", last.Text)
	}
}

// TestAbort: when the run is cancelled the command is killed, in the
// foreground and while exec waits for yieldMs.
func TestAbort(t *testing.T) {
	r := newRig(t, DefaultLimits())
	for _, bg := range []bool{false, true} {
		t.Run(fmt.Sprintf("process tool %v", bg), func(t *testing.T) {
			env := r.envFor("main", "abort")
			env.Background = bg
			pidFile := filepath.Join(r.dir, fmt.Sprintf("pid-%v", bg))
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() {
				raw, _ := json.Marshal(map[string]any{"command": "echo $$ > " + pidFile + "; sleep 300", "yieldMs": 600000})
				_, err := r.exec.Run(ctx, env, raw)
				errc <- err
			}()
			var pid int
			for pid == 0 {
				if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
					fmt.Sscanf(string(b), "%d", &pid)
				}
				time.Sleep(5 * time.Millisecond)
			}
			cancel()
			if err := <-errc; err != context.Canceled {
				t.Errorf("Run = %v, want context.Canceled", err)
			}
			if !stopped(pid) {
				t.Errorf("command %d survived the abort", pid)
			}
		})
	}
}
