package bwrap

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"talon/internal/sandbox"
	"talon/internal/testtier"
)

var (
	checkOnce sync.Once
	checkErr  error
)

// requireBwrap skips the test when bwrap cannot run here, or, under
// CI=true, fails it with how to install it: CI must run these tests.
func requireBwrap(t testing.TB) *Backend {
	t.Helper()
	b, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	checkOnce.Do(func() { checkErr = b.Check(context.Background()) })
	if checkErr != nil {
		testtier.Unavailable(t, "bwrap backend unavailable: %v (scripts/test.sh installs bubblewrap when run as root)", checkErr)
	}
	return b
}

// open opens a sandbox on spec, with a fresh Root unless spec has one.
func open(t testing.TB, spec sandbox.Spec) *Sandbox {
	t.Helper()
	b := requireBwrap(t)
	if spec.ID == "" {
		spec.ID = "test"
	}
	if spec.Root == "" {
		spec.Root = t.TempDir()
	}
	sb, err := b.Open(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sb.Close(); err != nil {
			t.Error(err)
		}
	})
	return sb.(*Sandbox)
}

type result struct {
	exit           sandbox.Exit
	err            error
	stdout, stderr string
}

// run runs a shell script in sb and waits for it.
func run(t testing.TB, sb *Sandbox, script string, mod ...func(*sandbox.Command)) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := sandbox.Command{Argv: []string{"/bin/sh", "-c", script}, Stdout: &stdout, Stderr: &stderr, Timeout: 2 * time.Minute}
	for _, m := range mod {
		m(&cmd)
	}
	p, err := sb.Start(context.Background(), cmd)
	if err != nil {
		t.Fatalf("starting %q: %v", script, err)
	}
	exit, err := p.Wait()
	return result{exit: exit, err: err, stdout: stdout.String(), stderr: stderr.String()}
}

func TestCommands(t *testing.T) {
	root := t.TempDir()
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "f"), []byte("mounted data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "script.sh"), []byte("#!/bin/sh\necho script ran in $(pwd)\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TALON_TEST_HOST_ONLY", "host-env-value")
	sb := open(t, sandbox.Spec{Root: root, Mounts: []sandbox.Mount{{Source: data, Target: "/data", ReadOnly: true}}})

	tests := []struct {
		name     string
		cmd      sandbox.Command
		code     int
		stdout   string // exact, when wantOut is set
		contains string // in stdout
		errPart  string // in Wait's error
	}{
		{name: "exit code", cmd: sh("exit 7"), code: 7},
		{name: "writes the workspace", cmd: sh("echo hi > /workspace/out && cat out"), stdout: "hi\n"},
		{name: "reads a read-only mount", cmd: sh("cat /data/f"), stdout: "mounted data\n"},
		{name: "stdin", cmd: sandbox.Command{Argv: []string{"cat"}, Stdin: strings.NewReader("from stdin")}, stdout: "from stdin"},
		{name: "stdin reopened", cmd: sandbox.Command{Argv: []string{"cat", "/dev/stdin"}, Stdin: strings.NewReader("again")}, stdout: "again"},
		{name: "no stdin is /dev/null", cmd: sh("cat /dev/stdin; echo end"), stdout: "end\n"},
		{name: "environment", cmd: sandbox.Command{Argv: []string{"env"}, Env: []string{"FOO=bar baz"}},
			stdout: "PATH=" + Path + "\nHOME=/workspace\nLANG=C.UTF-8\nFOO=bar baz\nPWD=/workspace\n"},
		{name: "working directory", cmd: sandbox.Command{Argv: []string{"pwd"}, Dir: "sub"}, stdout: "/workspace/sub\n"},
		{name: "absolute working directory", cmd: sandbox.Command{Argv: []string{"pwd"}, Dir: "/tmp"}, stdout: "/tmp\n"},
		{name: "program in the workspace", cmd: sandbox.Command{Argv: []string{"./script.sh"}}, stdout: "script ran in /workspace\n"},
		{name: "user", cmd: sh("id -un; id -u; id -g"), stdout: "sandbox\n1000\n1000\n"},
		{name: "accounts", cmd: sh("getent passwd 1000; getent group sandbox"), stdout: "sandbox:x:1000:1000:sandbox:/workspace:/bin/sh\nsandbox:x:1000:\n"},
		{name: "alternatives resolve", cmd: sh("echo a b | awk '{print $2}'"), stdout: "b\n"},
		{name: "tmp is writable", cmd: sh("echo t > /tmp/t && cat /tmp/t"), stdout: "t\n"},
		{name: "missing program", cmd: sandbox.Command{Argv: []string{"no-such-program"}}, code: 127},
		{name: "missing working directory", cmd: sandbox.Command{Argv: []string{"true"}, Dir: "/nowhere"}, code: helperExit, errPart: "working directory"},
		{name: "own loopback works without network", cmd: sh("cat /proc/net/dev | awk 'NR>2{print $1}'"), stdout: "lo:\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			cmd := tt.cmd
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			p, err := sb.Start(context.Background(), cmd)
			if err != nil {
				t.Fatal(err)
			}
			exit, err := p.Wait()
			if tt.errPart == "" && err != nil || tt.errPart != "" && (err == nil || !strings.Contains(err.Error(), tt.errPart)) {
				t.Fatalf("Wait error %v, want one containing %q", err, tt.errPart)
			}
			if exit.Code != tt.code || exit.TimedOut || exit.Signal != "" {
				t.Fatalf("exit %+v, want code %d (stderr %q)", exit, tt.code, stderr.String())
			}
			if tt.stdout != "" && stdout.String() != tt.stdout {
				t.Fatalf("stdout %q, want %q (stderr %q)", stdout.String(), tt.stdout, stderr.String())
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(root, "out")); err != nil || string(b) != "hi\n" {
		t.Errorf("the host side of /workspace/out: %q, %v", b, err)
	}
}

func sh(script string) sandbox.Command {
	return sandbox.Command{Argv: []string{"/bin/sh", "-c", script}}
}

func TestTimeoutKillAndContext(t *testing.T) {
	sb := open(t, sandbox.Spec{Limits: sandbox.Limits{Timeout: time.Hour}})
	// Every way to stop a command ends it with everything it started:
	// the background sleep holds stdout, so Wait returns only once it is
	// gone too.
	const script = "sleep 1000 & sleep 1000"
	tests := []struct {
		name     string
		stop     func(p sandbox.Process, cancel context.CancelFunc)
		cmd      sandbox.Command
		timedOut bool
	}{
		{name: "timeout", cmd: sandbox.Command{Timeout: 300 * time.Millisecond}, timedOut: true},
		{name: "kill", stop: func(p sandbox.Process, _ context.CancelFunc) { p.Kill() }},
		{name: "context", stop: func(_ sandbox.Process, cancel context.CancelFunc) { cancel() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var out syncBuffer
			cmd := tt.cmd
			cmd.Argv, cmd.Stdout = []string{"/bin/sh", "-c", "echo started; " + script}, &out
			p, err := sb.Start(ctx, cmd)
			if err != nil {
				t.Fatal(err)
			}
			if tt.stop != nil {
				waitForOutput(t, &out, "started")
				tt.stop(p, cancel)
			}
			exit, err := p.Wait()
			if err != nil {
				t.Fatal(err)
			}
			want := sandbox.Exit{Code: -1, Signal: "killed", TimedOut: tt.timedOut}
			if exit != want {
				t.Fatalf("exit %+v, want %+v", exit, want)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer a command writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitForOutput waits until w holds want: the command is running.
func waitForOutput(t *testing.T, w *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(w.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the command did not print %q", want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCloseKillsCommands(t *testing.T) {
	b := requireBwrap(t)
	sb, err := b.Open(context.Background(), sandbox.Spec{ID: "close", Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	p, err := sb.Start(context.Background(), sh("sleep 1000"))
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	if exit, _ := p.Wait(); exit.Signal != "killed" {
		t.Fatalf("exit %+v after Close, want killed", exit)
	}
	if _, err := sb.Start(context.Background(), sh("true")); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("Start after Close: %v, want an error saying the sandbox is closed", err)
	}
	if _, err := os.Stat(sb.(*Sandbox).etc); !os.IsNotExist(err) {
		t.Fatalf("Close left the sandbox's /etc files: %v", err)
	}
}

func TestOpenRejects(t *testing.T) {
	requireBwrap(t)
	root := t.TempDir()
	file := filepath.Join(root, "file")
	os.WriteFile(file, nil, 0o644)
	tests := []struct {
		name string
		spec sandbox.Spec
		want string
	}{
		{"bad id", sandbox.Spec{ID: "a/b", Root: root}, "sandbox id"},
		{"relative root", sandbox.Spec{ID: "x", Root: "rel"}, "absolute"},
		{"missing root", sandbox.Spec{ID: "x", Root: filepath.Join(root, "none")}, "root"},
		{"root is a file", sandbox.Spec{ID: "x", Root: file}, "not a directory"},
		{"mount over /usr", sandbox.Spec{ID: "x", Root: root, Mounts: []sandbox.Mount{{Source: root, Target: "/usr/local"}}}, "inside /usr"},
		{"mount over /", sandbox.Spec{ID: "x", Root: root, Mounts: []sandbox.Mount{{Source: root, Target: "/"}}}, "hide"},
		{"mount over the helper", sandbox.Spec{ID: "x", Root: root, Mounts: []sandbox.Mount{{Source: root, Target: "/run/talon"}}}, "inside /run/talon"},
		{"missing mount source", sandbox.Spec{ID: "x", Root: root, Mounts: []sandbox.Mount{{Source: "/no/such/dir", Target: "/data"}}}, "source"},
	}
	b, _ := New(nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := b.Open(context.Background(), tt.spec)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Open: %v, want an error containing %q", err, tt.want)
			}
		})
	}
	if _, err := New(map[string]any{"image": "x"}); err == nil {
		t.Fatal("New accepted an unknown setting")
	}
}

func TestStartRejects(t *testing.T) {
	sb := open(t, sandbox.Spec{})
	tests := []struct {
		name string
		cmd  sandbox.Command
		want string
	}{
		{"no program", sandbox.Command{}, "no program"},
		{"NUL in an argument", sandbox.Command{Argv: []string{"echo", "a\x00b"}}, "NUL"},
		{"bad environment entry", sandbox.Command{Argv: []string{"true"}, Env: []string{"NOEQUALS"}}, "KEY=VALUE"},
		{"empty environment name", sandbox.Command{Argv: []string{"true"}, Env: []string{"=x"}}, "KEY=VALUE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := sb.Start(context.Background(), tt.cmd)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "bwrap sandbox test") {
				t.Fatalf("Start: %v, want an error naming the sandbox and containing %q", err, tt.want)
			}
		})
	}
}

// TestSetupFails: when bwrap cannot set a sandbox up, Start or Wait (as
// the timing falls: bwrap may fail before or after Start lets it go) is an
// error with bwrap's own complaint, not an exit code of the command.
func TestSetupFails(t *testing.T) {
	gone := t.TempDir()
	sb := open(t, sandbox.Spec{Mounts: []sandbox.Mount{{Source: gone, Target: "/data", ReadOnly: true}}})
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	p, err := sb.Start(context.Background(), sh("echo ran"))
	if err == nil {
		_, err = p.Wait()
	}
	if err == nil || !strings.Contains(err.Error(), "bwrap") || !strings.Contains(err.Error(), gone) {
		t.Fatalf("a mount source gone since Open: %v, want bwrap's complaint about it", err)
	}
	t.Log(err)
}

func TestBackend(t *testing.T) {
	b := requireBwrap(t)
	if b.Name() != "bwrap" || !b.Isolated() {
		t.Fatalf("Name %q Isolated %v", b.Name(), b.Isolated())
	}
	if !contains(sandbox.Names(), "bwrap") {
		t.Fatalf("bwrap is not registered: %v", sandbox.Names())
	}
	abi, ok := b.Landlock()
	layers := strings.Join(b.Layers(), "\n")
	if ok != strings.Contains(layers, "reads only under the mounted paths") || !ok && !strings.Contains(layers, "the namespaces are the only layer") {
		t.Fatalf("Landlock() = %d, %v but Layers says:\n%s", abi, ok, layers)
	}
	if err := noMemoryCgroup(); strings.Contains(layers, "memory: a memory cgroup per command") != (err == nil) {
		t.Fatalf("memory cgroup: %v, but Layers says:\n%s", err, layers)
	}
	t.Logf("Landlock ABI %d (%v)\n%s", abi, ok, layers)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// A spec whose paths are Real is mounted by the directories opened at
// Open, no link followed: a path with a link in it is refused, and a
// link swapped in afterwards (a sandboxed command planting it between the
// check and a later command) does not move the mount.
func TestRealPathsBindOpened(t *testing.T) {
	requireBwrap(t)
	base := t.TempDir()
	real, other := filepath.Join(base, "ws"), filepath.Join(base, "other")
	ro := filepath.Join(base, "ro")
	for _, d := range []string{real, other, ro} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(ro, "f"), []byte("ro"), 0o644)
	if err := os.Symlink(real, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	b, _ := New(nil)
	if _, err := b.Open(context.Background(), sandbox.Spec{ID: "x", Root: filepath.Join(base, "link"), Real: true}); err == nil || !strings.Contains(err.Error(), "without following links") {
		t.Fatalf("Open through a link = %v; want refused", err)
	}
	sb := open(t, sandbox.Spec{Root: real, Real: true, Mounts: []sandbox.Mount{{Source: ro, Target: "/data", ReadOnly: true}}})
	if r := run(t, sb, "cat /data/f && echo one > /workspace/a"); r.exit.Code != 0 || r.stdout != "ro" {
		t.Fatalf("first command: %+v", r)
	}
	// The directory is moved away and a link put in its place.
	if err := os.Rename(real, real+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, real); err != nil {
		t.Fatal(err)
	}
	if r := run(t, sb, "echo two > /workspace/b && ls /workspace"); r.exit.Code != 0 {
		t.Fatalf("second command: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(other, "b")); err == nil {
		t.Error("the second command wrote through the link swapped in")
	}
	if got, _ := os.ReadFile(filepath.Join(real+".moved", "b")); string(got) != "two\n" {
		t.Errorf("the opened directory has b = %q", got)
	}
}
