package host

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"talon/internal/sandbox"
)

// buf is a writer safe for the concurrent writes of two copies.
type buf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *buf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func open(t *testing.T, mounts ...sandbox.Mount) (*Sandbox, string) {
	t.Helper()
	root := t.TempDir()
	sb, err := (&Backend{}).Open(context.Background(), sandbox.Spec{ID: "test", Root: root, Mounts: mounts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb.(*Sandbox), root
}

// run runs a shell command and returns its combined output and exit.
func run(t *testing.T, sb *Sandbox, cmd sandbox.Command) (string, sandbox.Exit) {
	t.Helper()
	var out buf
	cmd.Stdout, cmd.Stderr = &out, &out
	p, err := sb.Start(context.Background(), cmd)
	if err != nil {
		t.Fatal(err)
	}
	exit, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), exit
}

func sh(script string) []string { return []string{"/bin/sh", "-c", script} }

func TestBackend(t *testing.T) {
	if !slices.Contains(sandbox.Names(), Name) {
		t.Fatalf("host not registered: %v", sandbox.Names())
	}
	b, err := sandbox.New(Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b.Name() != "host" || b.Isolated() {
		t.Errorf("Name %q Isolated %v, want host false", b.Name(), b.Isolated())
	}
	if err := b.Check(context.Background()); err != nil {
		t.Errorf("Check: %v", err)
	}
	if _, err := sandbox.New(Name, map[string]any{"image": "x"}); err == nil || !strings.Contains(err.Error(), `unknown setting "image"`) {
		t.Errorf("settings: err = %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		spec sandbox.Spec
		want string
	}{
		{"bad id", sandbox.Spec{ID: "a/b", Root: dir}, "sandbox id"},
		{"relative root", sandbox.Spec{ID: "a", Root: "rel"}, "not an absolute path"},
		{"missing root", sandbox.Spec{ID: "a", Root: filepath.Join(dir, "nope")}, "no such file"},
		{"root is a file", sandbox.Spec{ID: "a", Root: file}, "not a directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := (&Backend{}).Open(context.Background(), c.spec)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
}

// TestDir: working directories map to the workspace and mounts, resolve
// every symlink, and may not leave them: the host backend isolates
// nothing, so "/", "/root", ".." out and a link out are refused with a
// message saying so, which names the directory as given, never a host path.
func TestDir(t *testing.T) {
	agent := t.TempDir()
	sb, root := open(t, sandbox.Mount{Source: agent, Target: "/agent", ReadOnly: true})
	for _, d := range []string{filepath.Join(root, "a/b"), filepath.Join(agent, "x")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"out": "/", "up": "..", "in": "a", "deep": "a/b/../../out/etc", "agentln": agent} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	outside := "is outside the workspace; on the gateway host"
	linkOut := "leads out of the workspace through a symbolic link"
	cases := []struct{ in, want, err string }{
		{"", root, ""},
		{"/workspace", root, ""},
		{"/workspace/", root, ""},
		{".", root, ""},
		{"/workspace/a/b", filepath.Join(root, "a/b"), ""},
		{"a/b", filepath.Join(root, "a/b"), ""},
		{"a/b/../..", root, ""},
		{"in", filepath.Join(root, "a"), ""}, // a link inside is resolved
		{"in/b", filepath.Join(root, "a/b"), ""},
		{"/agent", agent, ""},
		{"/agent/x", filepath.Join(agent, "x"), ""},
		{"agentln", agent, ""},                                   // a link to a mount's source stays inside
		{filepath.Join(root, "a"), filepath.Join(root, "a"), ""}, // the host path the commands see
		{"/", "", outside},
		{"/root", "", outside},
		{"/tmp", "", outside},
		{"/etc/passwd", "", outside},
		{"..", "", outside},
		{"../..", "", outside},
		{"/workspace/../etc", "", outside},
		{"a/../../..", "", outside},
		{"/workspaces", "", outside},
		{"/nonexistent/x", "", outside}, // outside, not "does not exist": no probing of the host
		{"out", "", linkOut},
		{"out/etc", "", linkOut},
		{"up", "", linkOut},
		{"deep", "", linkOut},
		{"/workspace/out/root", "", linkOut},
		{"nope", "", "does not exist"},
		{"f", "", "is not a directory"},
		{"f/x", "", "a part of it is not a directory"},
		{"a\x00b", "", "NUL byte"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := sb.Dir(c.in)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("Dir(%q) = %q, %v; want an error with %q", c.in, got, err, c.err)
				}
				if strings.Contains(err.Error(), root) || got != "" {
					t.Errorf("the error shows the host path or a result came back: %q, %v", got, err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Errorf("Dir(%q) = %q, %v; want %q", c.in, got, err, c.want)
			}
		})
	}
}

func TestRun(t *testing.T) {
	sb, root := open(t)
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TALON_HOST_TEST_SECRET", "leaked")
	cases := []struct {
		name     string
		cmd      sandbox.Command
		want     string // output contains
		wantNot  string
		wantCode int
	}{
		{"echo", sandbox.Command{Argv: sh("echo hello")}, "hello\n", "", 0},
		{"exit code", sandbox.Command{Argv: sh("echo out; echo err >&2; exit 3")}, "out\nerr\n", "", 3},
		{"workdir default", sandbox.Command{Argv: sh("pwd")}, root + "\n", "", 0},
		{"workdir mapped", sandbox.Command{Argv: sh("pwd"), Dir: "/workspace/sub"}, filepath.Join(root, "sub") + "\n", "", 0},
		{"env minimal", sandbox.Command{Argv: []string{"env"}}, "PATH=" + Path + "\n", "TALON_HOST_TEST_SECRET", 0},
		{"env home", sandbox.Command{Argv: sh(`echo "$HOME"`)}, root + "\n", "", 0},
		{"env added", sandbox.Command{Argv: sh(`echo "$FOO"`), Env: []string{"FOO=bar baz"}}, "bar baz\n", "", 0},
		{"env overrides", sandbox.Command{Argv: sh(`echo "$LANG"`), Env: []string{"LANG=C"}}, "C\n", "", 0},
		{"path lookup", sandbox.Command{Argv: []string{"true"}}, "", "", 0},
		{"killed by signal", sandbox.Command{Argv: sh("kill -TERM $$")}, "", "", -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, exit := run(t, sb, c.cmd)
			if !strings.Contains(out, c.want) || (c.wantNot != "" && strings.Contains(out, c.wantNot)) {
				t.Errorf("output %q: want %q, not %q", out, c.want, c.wantNot)
			}
			if exit.Code != c.wantCode || exit.TimedOut {
				t.Errorf("exit = %+v, want code %d", exit, c.wantCode)
			}
		})
	}
}

func TestSignalName(t *testing.T) {
	sb, _ := open(t)
	_, exit := run(t, sb, sandbox.Command{Argv: sh("kill -KILL $$")})
	if exit.Signal != "killed" || exit.Code != -1 {
		t.Errorf("exit = %+v, want signal killed", exit)
	}
}

func TestStreams(t *testing.T) {
	sb, _ := open(t)
	var out, errOut buf
	p, err := sb.Start(context.Background(), sandbox.Command{
		Argv:  sh("cat; echo oops >&2"),
		Stdin: strings.NewReader("from stdin"), Stdout: &out, Stderr: &errOut,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if out.String() != "from stdin" || errOut.String() != "oops\n" {
		t.Errorf("stdout %q stderr %q", out.String(), errOut.String())
	}

	// A file as stdin goes to the child as it is.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var piped buf
	p, err = sb.Start(context.Background(), sandbox.Command{Argv: []string{"cat"}, Stdin: r, Stdout: &piped})
	if err != nil {
		t.Fatal(err)
	}
	w.WriteString("through a pipe")
	w.Close()
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if piped.String() != "through a pipe" {
		t.Errorf("piped = %q", piped.String())
	}

	// No streams at all: /dev/null.
	p, err = sb.Start(context.Background(), sandbox.Command{Argv: sh("cat; echo ignored")})
	if err != nil {
		t.Fatal(err)
	}
	if exit, err := p.Wait(); err != nil || exit.Code != 0 {
		t.Errorf("exit %+v, %v", exit, err)
	}
}

func TestStartErrors(t *testing.T) {
	sb, _ := open(t)
	cases := []struct {
		name string
		cmd  sandbox.Command
		want string
	}{
		{"no argv", sandbox.Command{}, "no program"},
		{"NUL in arg", sandbox.Command{Argv: []string{"echo", "a\x00"}}, "NUL"},
		{"bad env", sandbox.Command{Argv: []string{"true"}, Env: []string{"NOEQUALS"}}, "not KEY=VALUE"},
		{"missing program", sandbox.Command{Argv: []string{"/nonexistent/prog"}}, "no such file"},
		{"missing dir", sandbox.Command{Argv: []string{"true"}, Dir: "/workspace/nope"}, `working directory "/workspace/nope" does not exist`},
		{"dir outside", sandbox.Command{Argv: []string{"true"}, Dir: "/"}, `working directory "/" is outside the workspace`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := sb.Start(context.Background(), c.cmd)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
}

// pidFrom reads the pid a script printed on its first line.
func pidFrom(t *testing.T, out *buf) int {
	t.Helper()
	for {
		line, _, found := strings.Cut(out.String(), "\n")
		if found {
			pid, err := strconv.Atoi(strings.TrimSpace(line))
			if err != nil {
				t.Fatalf("no pid in %q", out.String())
			}
			return pid
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// gone reports whether pid stops running: it does not exist or is a
// zombie waiting for its new parent to reap it. A SIGKILL takes effect
// when the process is next scheduled, so it looks again for up to ten
// seconds (a bound for failing, not a measurement).
func gone(pid int) bool {
	for range 1000 {
		if dead(pid) {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

func dead(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// pid (comm) STATE ...; comm may hold spaces, so cut at the last ')'.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && len(s) > i+2 && s[i+2] == 'Z'
}

// TestTreeEnds checks that every way a command ends also ends what it
// started in the background.
func TestTreeEnds(t *testing.T) {
	cases := []struct {
		name   string
		script string
		end    func(p sandbox.Process, cancel context.CancelFunc)
		cmd    sandbox.Command
		want   func(t *testing.T, e sandbox.Exit)
	}{
		{"leader exits", "sleep 300 & echo $!", nil, sandbox.Command{},
			func(t *testing.T, e sandbox.Exit) {
				if e.Code != 0 {
					t.Errorf("exit %+v", e)
				}
			}},
		{"kill", "sleep 300 & echo $!; wait", func(p sandbox.Process, _ context.CancelFunc) { p.Kill() }, sandbox.Command{},
			func(t *testing.T, e sandbox.Exit) {
				if e.Signal != "killed" || e.TimedOut {
					t.Errorf("exit %+v", e)
				}
			}},
		{"context", "sleep 300 & echo $!; wait", func(_ sandbox.Process, cancel context.CancelFunc) { cancel() }, sandbox.Command{},
			func(t *testing.T, e sandbox.Exit) {
				if e.Signal != "killed" || e.TimedOut {
					t.Errorf("exit %+v", e)
				}
			}},
		{"timeout", "sleep 300 & echo $!; wait", nil, sandbox.Command{Timeout: 50 * time.Millisecond},
			func(t *testing.T, e sandbox.Exit) {
				if !e.TimedOut || e.Signal != "killed" || e.Code != -1 {
					t.Errorf("exit %+v", e)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sb, _ := open(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var out buf
			cmd := c.cmd
			cmd.Argv, cmd.Stdout = sh(c.script), &out
			p, err := sb.Start(ctx, cmd)
			if err != nil {
				t.Fatal(err)
			}
			child := pidFrom(t, &out)
			if c.end != nil {
				c.end(p, cancel)
			}
			exit, err := p.Wait()
			if err != nil {
				t.Fatal(err)
			}
			c.want(t, exit)
			if !gone(child) {
				t.Errorf("background child %d still runs", child)
				syscall.Kill(child, syscall.SIGKILL)
			}
		})
	}
}

func TestClose(t *testing.T) {
	sb, _ := open(t)
	var out buf
	p, err := sb.Start(context.Background(), sandbox.Command{Argv: sh("echo $$; sleep 300"), Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	pid := pidFrom(t, &out)
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	exit, _ := p.Wait()
	if exit.Signal != "killed" {
		t.Errorf("exit after Close = %+v", exit)
	}
	if !gone(pid) {
		t.Errorf("process %d survived Close", pid)
	}
	if _, err := sb.Start(context.Background(), sandbox.Command{Argv: []string{"true"}}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Start after Close: %v", err)
	}
	// Kill after the end does nothing.
	if err := p.Kill(); err != nil {
		t.Errorf("Kill after end: %v", err)
	}
}

func TestConcurrent(t *testing.T) {
	sb, _ := open(t)
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out buf
			p, err := sb.Start(context.Background(), sandbox.Command{Argv: []string{"echo", strconv.Itoa(i)}, Stdout: &out})
			if err != nil {
				errs <- err.Error()
				return
			}
			if _, err := p.Wait(); err != nil || out.String() != strconv.Itoa(i)+"\n" {
				errs <- "command " + strconv.Itoa(i) + ": " + out.String()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
