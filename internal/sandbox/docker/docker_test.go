package docker

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"talon/internal/sandbox"
	"talon/internal/testtier"
)

// sandboxUser is who commands run as in the tests: the owner of the
// workspace, which the tests chown to nobody when they run as root.
const sandboxUser = 65534

// workspace is a fresh directory commands may write: owned by nobody when
// the test runs as root (the backend refuses a root-owned workspace).
func workspace(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := chownForSandbox(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

func chownForSandbox(dir string) error {
	if os.Getuid() != 0 {
		return nil
	}
	return os.Chown(dir, sandboxUser, sandboxUser)
}

func wantUID() int {
	if os.Getuid() == 0 {
		return sandboxUser
	}
	return os.Getuid()
}

var idSeq int

// open opens a sandbox on a fresh ID and closes it when the test ends.
func open(t *testing.T, b *Backend, spec sandbox.Spec) sandbox.Sandbox {
	t.Helper()
	if spec.ID == "" {
		idSeq++
		spec.ID = fmt.Sprintf("test-%d-%d", os.Getpid(), idSeq)
	}
	if spec.Root == "" {
		spec.Root = workspace(t)
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
	return sb
}

func backend(t *testing.T, extra map[string]any) *Backend {
	t.Helper()
	set := needEngine(t)
	for k, v := range extra {
		set[k] = v
	}
	b, err := New(set)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type result struct {
	stdout, stderr string
	exit           sandbox.Exit
}

func run(t *testing.T, sb sandbox.Sandbox, cmd sandbox.Command) result {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	p, err := sb.Start(context.Background(), cmd)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := p.Wait()
	if err != nil {
		t.Fatalf("%q: %v", cmd.Argv, err)
	}
	return result{out.String(), errb.String(), ex}
}

func sh(script string) []string { return []string{"sh", "-c", script} }

func TestCommands(t *testing.T) {
	b := backend(t, nil)
	ro, rw := t.TempDir(), workspace(t)
	if err := os.WriteFile(filepath.Join(ro, "file"), []byte("from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sb := open(t, b, sandbox.Spec{Mounts: []sandbox.Mount{
		{Source: ro, Target: "/ro", ReadOnly: true},
		{Source: rw, Target: "/rw"},
	}})
	big := strings.Repeat("y\n", 500_000)
	tests := []struct {
		name       string
		cmd        sandbox.Command
		code       int
		stdout     string // exact
		stderrHas  string
		stdoutHas  string
		nonZeroErr bool // any exit code but 0
	}{
		{name: "echo", cmd: sandbox.Command{Argv: []string{"echo", "hi", "there"}}, stdout: "hi there\n"},
		{name: "exit code", cmd: sandbox.Command{Argv: sh("exit 3")}, code: 3},
		{name: "absolute program", cmd: sandbox.Command{Argv: []string{"/bin/true"}}},
		{name: "program not found", cmd: sandbox.Command{Argv: []string{"no-such-program"}}, code: 127, stderrHas: "not found"},
		{name: "stderr", cmd: sandbox.Command{Argv: sh("echo out; echo err >&2")}, stdout: "out\n", stderrHas: "err\n"},
		{name: "stdin", cmd: sandbox.Command{Argv: []string{"cat"}, Stdin: strings.NewReader("line 1\nline 2")}, stdout: "line 1\nline 2"},
		{name: "no stdin", cmd: sandbox.Command{Argv: []string{"cat"}}, stdout: ""},
		{name: "env", cmd: sandbox.Command{Argv: sh(`echo "$FOO|$BAR"`), Env: []string{"FOO=foo bar", "BAR="}}, stdout: "foo bar|\n"},
		{name: "base env", cmd: sandbox.Command{Argv: sh(`echo "$HOME $LANG"`)}, stdout: "/tmp C.UTF-8\n"},
		{name: "workdir default", cmd: sandbox.Command{Argv: []string{"pwd"}}, stdout: "/workspace\n"},
		{name: "workdir absolute", cmd: sandbox.Command{Argv: []string{"pwd"}, Dir: "/tmp"}, stdout: "/tmp\n"},
		{name: "workdir missing", cmd: sandbox.Command{Argv: []string{"pwd"}, Dir: "/no/such/dir"}, nonZeroErr: true, stderrHas: "no such file"},
		{name: "user", cmd: sandbox.Command{Argv: sh("id -u; id -g")}, stdout: fmt.Sprintf("%d\n%d\n", wantUID(), wantUID())},
		{name: "root is read-only", cmd: sandbox.Command{Argv: sh("echo x > /x")}, nonZeroErr: true, stderrHas: "Read-only file system"},
		{name: "bin is read-only", cmd: sandbox.Command{Argv: sh("rm -f /bin/ls")}, nonZeroErr: true},
		{name: "tmp is writable", cmd: sandbox.Command{Argv: sh("echo x > /tmp/x && cat /tmp/x")}, stdout: "x\n"},
		{name: "workspace is writable", cmd: sandbox.Command{Argv: sh("echo data > /workspace/out.txt && cat out.txt")}, stdout: "data\n"},
		{name: "ro mount reads", cmd: sandbox.Command{Argv: []string{"cat", "/ro/file"}}, stdout: "from the host\n"},
		{name: "ro mount is read-only", cmd: sandbox.Command{Argv: sh("echo x > /ro/new")}, nonZeroErr: true, stderrHas: "Read-only file system"},
		{name: "ro mount file is read-only", cmd: sandbox.Command{Argv: sh("echo x >> /ro/file")}, nonZeroErr: true},
		{name: "rw mount is writable", cmd: sandbox.Command{Argv: sh("echo x > /rw/new && cat /rw/new")}, stdout: "x\n"},
		{name: "no capabilities", cmd: sandbox.Command{Argv: sh("grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status")}, stdout: "CapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\n"},
		{name: "no new privileges", cmd: sandbox.Command{Argv: sh("grep NoNewPrivs /proc/self/status")}, stdout: "NoNewPrivs:\t1\n"},
		{name: "open files limit", cmd: sandbox.Command{Argv: sh("ulimit -n")}, stdout: "1024\n"},
		{name: "file size limit", cmd: sandbox.Command{Argv: sh("head -c 2000000 /dev/zero > big")}, nonZeroErr: true},
		{name: "large output", cmd: sandbox.Command{Argv: sh("yes | head -n 500000")}, stdout: big},
		{name: "output after stdout closed", cmd: sandbox.Command{Argv: sh("exec >&-; sleep 1; exit 4")}, code: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := tt.cmd
			if tt.name == "file size limit" {
				// Its own sandbox: a 1 MB file size limit.
				sb := open(t, b, sandbox.Spec{Limits: sandbox.Limits{FileSize: 1 << 20}})
				r := run(t, sb, cmd)
				if r.exit.Code == 0 {
					t.Fatalf("wrote 2 MB past a 1 MB limit: %+v", r)
				}
				return
			}
			r := run(t, sb, cmd)
			switch {
			case tt.nonZeroErr && r.exit.Code == 0:
				t.Errorf("exit 0, want an error; stdout %q stderr %q", r.stdout, r.stderr)
			case !tt.nonZeroErr && r.exit.Code != tt.code:
				t.Errorf("exit %+v, want %d; stderr %q", r.exit, tt.code, r.stderr)
			}
			if !tt.nonZeroErr && tt.stdoutHas == "" && r.stdout != tt.stdout {
				if len(r.stdout) > 200 {
					t.Errorf("stdout: %d bytes, want %d", len(r.stdout), len(tt.stdout))
				} else {
					t.Errorf("stdout %q, want %q", r.stdout, tt.stdout)
				}
			}
			if !strings.Contains(r.stderr, tt.stderrHas) {
				t.Errorf("stderr %q, want it to contain %q", r.stderr, tt.stderrHas)
			}
		})
	}

}

func TestWorkspaceOnHost(t *testing.T) {
	b := backend(t, nil)
	ws := workspace(t)
	sb := open(t, b, sandbox.Spec{Root: ws})
	if r := run(t, sb, sandbox.Command{Argv: sh("mkdir -p d && echo hello > d/f")}); r.exit.Code != 0 {
		t.Fatalf("%+v", r)
	}
	p := filepath.Join(ws, "d", "f")
	data, err := os.ReadFile(p)
	if err != nil || string(data) != "hello\n" {
		t.Fatalf("host sees %q, %v", data, err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if uid := fi.Sys().(*syscall.Stat_t).Uid; int(uid) != wantUID() {
		t.Errorf("file owned by %d, want the workspace owner %d", uid, wantUID())
	}
}

func TestRootOwnedWorkspaceRefused(t *testing.T) {
	if os.Getuid() != 0 {
		testtier.Unavailable(t, "needs root to make a root-owned workspace; CI runs the tests as root")
	}
	b := backend(t, nil)
	_, err := b.Open(context.Background(), sandbox.Spec{ID: "test-rootowned", Root: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "owned by root") || !strings.Contains(err.Error(), "docker.user") {
		t.Fatalf("err = %v, want the root-owned workspace refused with the fix", err)
	}
}

// TestNetworkNone checks that without Spec.Network commands reach
// neither the host's addresses nor a listener on the host's loopback (the
// container's own loopback is another one).
func TestNetworkNone(t *testing.T) {
	b := backend(t, nil)
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("host-listener\n"))
			c.Close()
			accepted <- struct{}{}
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	addrs := []string{"127.0.0.1"}
	ifaddrs, _ := net.InterfaceAddrs()
	for _, a := range ifaddrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() {
			addrs = append(addrs, ipn.IP.String())
		}
	}
	// The host can reach its own listener on each address: the probe works.
	for _, a := range addrs {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(a, strconv.Itoa(port)), 2*time.Second)
		if err != nil {
			t.Fatalf("host cannot reach its own listener on %s: %v", a, err)
		}
		c.Close()
		<-accepted
	}

	sb := open(t, b, sandbox.Spec{})
	r := run(t, sb, sandbox.Command{Argv: sh("cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '")})
	if r.stdout != "lo\n" {
		t.Errorf("interfaces %q, want only lo", r.stdout)
	}
	for _, a := range addrs {
		t.Run(a, func(t *testing.T) {
			r := run(t, sb, sandbox.Command{Argv: sh(fmt.Sprintf("nc -w 3 %s %d </dev/null", a, port))})
			if r.exit.Code == 0 || strings.Contains(r.stdout, "host-listener") {
				t.Errorf("reached the host's listener on %s: %+v", a, r)
			}
		})
	}
	select {
	case <-accepted:
		t.Error("the host listener accepted a connection from the sandbox")
	default:
	}

	// The same probe with the network granted reaches the host through the
	// bridge, so the test above can fail.
	if !hasBridge(t, b) {
		t.Log("the engine has no bridge network (dockerd --bridge=none): the granted-network control is not run")
		return
	}
	nb := open(t, b, sandbox.Spec{Network: true})
	gw := run(t, nb, sandbox.Command{Argv: sh("ip route | awk '/default/ {print $3}'")})
	ip := strings.TrimSpace(gw.stdout)
	if ip == "" {
		t.Fatalf("no default route with the network granted: %+v", gw)
	}
	r = run(t, nb, sandbox.Command{Argv: sh(fmt.Sprintf("nc -w 3 %s %d </dev/null", ip, port))})
	if !strings.Contains(r.stdout, "host-listener") {
		t.Errorf("with the network granted, the host listener on %s was not reached: %+v", ip, r)
	}
}

func hasBridge(t *testing.T, b *Backend) bool {
	err := b.engine.call(context.Background(), "GET", "/networks/bridge", nil, nil, nil)
	return err == nil
}

// TestLimits checks that the pids and memory limits hold and that a
// timeout kills the command and what it started.
func TestLimits(t *testing.T) {
	b := backend(t, nil)
	sb := open(t, b, sandbox.Spec{Limits: sandbox.Limits{Processes: 32, Memory: 64 << 20}})
	t.Run("fork bomb", func(t *testing.T) {
		r := run(t, sb, sandbox.Command{
			// Each shell starts a sleep and another shell, then waits: a
			// failed fork ends only the shell that failed.
			Argv:    sh(`f() { sleep 60 & f & wait; }; f`),
			Timeout: 5 * time.Second,
		})
		if !r.exit.TimedOut || r.exit.Signal != "killed" {
			t.Errorf("exit %+v, want killed for its timeout", r.exit)
		}
		if !strings.Contains(r.stderr, "fork") && !strings.Contains(r.stderr, "Resource") {
			t.Errorf("stderr %q: no fork failure, the pids limit did not hold", r.stderr)
		}
		// Killed with everything it started: the sleeps are gone, and the
		// sandbox runs commands again.
		r = run(t, sb, sandbox.Command{Argv: sh("ps -o comm | grep -c '^sleep$' || true")})
		if strings.TrimSpace(r.stdout) != "1" { // the container's own keep-alive sleep
			t.Errorf("%s sleep processes left, want only the container's own", strings.TrimSpace(r.stdout))
		}
	})
	t.Run("memory", func(t *testing.T) {
		// 128 MB held in a shell variable, in a 64 MB container.
		r := run(t, sb, sandbox.Command{Argv: sh(`x=$(head -c 134217728 /dev/zero | tr '\0' a); echo ${#x}`)})
		// 137: SIGKILLed, by the kernel's OOM killer for the container's
		// memory cgroup (nothing else here kills it).
		if r.exit.Code != 128+9 {
			t.Errorf("exit %+v, stderr %q: want 137, killed for using more than its memory limit", r.exit, r.stderr)
		}
	})
	t.Run("tmp", func(t *testing.T) {
		// 6 x 32 MB into /tmp: its tmpfs is full at 64 MB (ENOSPC), or the
		// container's memory cgroup, which counts tmpfs pages, is (137).
		r := run(t, sb, sandbox.Command{Argv: sh("set -e; for i in 1 2 3 4 5 6; do head -c 33554432 /dev/zero > /tmp/f$i; done; echo ALL-WRITTEN")})
		if r.exit.Code == 0 || strings.Contains(r.stdout, "ALL-WRITTEN") {
			t.Errorf("192 MB written to /tmp in a 64 MB container: exit %+v %q %q", r.exit, r.stdout, r.stderr)
		}
		t.Logf("exit %+v %s", r.exit, strings.TrimSpace(r.stderr))
		r = run(t, sb, sandbox.Command{Argv: sh("df -k /tmp | tail -n 1")})
		if f := strings.Fields(r.stdout); len(f) < 2 || f[1] != "65536" {
			t.Errorf("df /tmp: %q, want a 65536 KiB tmpfs", r.stdout)
		}
		// The container's /tmp outlives a command: emptied, it takes what
		// the limit allows.
		r = run(t, sb, sandbox.Command{Argv: sh("rm -f /tmp/f*; head -c 16777216 /dev/zero > /tmp/g && wc -c < /tmp/g; rm -f /tmp/g")})
		if strings.TrimSpace(r.stdout) != "16777216" || r.exit.Code != 0 {
			t.Errorf("16 MB in /tmp: exit %+v %q %q", r.exit, r.stdout, r.stderr)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		start := time.Now()
		r := run(t, sb, sandbox.Command{Argv: sh("sleep 300 & sleep 300"), Timeout: time.Second})
		if !r.exit.TimedOut || r.exit.Code != -1 {
			t.Errorf("exit %+v, want timed out", r.exit)
		}
		if time.Since(start) > time.Minute {
			t.Errorf("took %v", time.Since(start))
		}
	})
	t.Run("kill", func(t *testing.T) {
		p, err := sb.Start(context.Background(), sandbox.Command{Argv: sh("echo go; sleep 300")})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Kill(); err != nil {
			t.Fatal(err)
		}
		ex, err := p.Wait()
		if err != nil || ex.Signal != "killed" || ex.TimedOut {
			t.Errorf("exit %+v, %v; want killed", ex, err)
		}
		if err := p.Kill(); err != nil {
			t.Errorf("second Kill: %v", err)
		}
	})
	t.Run("context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		p, err := sb.Start(ctx, sandbox.Command{Argv: sh("sleep 300")})
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		ex, err := p.Wait()
		if err != nil || ex.Signal != "killed" {
			t.Errorf("exit %+v, %v; want killed", ex, err)
		}
	})
}

func containerID(t *testing.T, b *Backend, id string) (string, bool) {
	t.Helper()
	var cur struct {
		ID    string `json:"Id"`
		State struct{ Running bool }
	}
	err := b.engine.call(context.Background(), "GET", "/containers/"+b.set.ContainerPrefix+id+"/json", nil, nil, &cur)
	if isStatus(err, 404) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return cur.ID, cur.State.Running
}

// TestContainerLifecycle checks one container per ID, joined by later
// Opens with the same spec, replaced when the spec changes, and removed
// by the last Close.
func TestContainerLifecycle(t *testing.T) {
	b := backend(t, nil)
	ws := workspace(t)
	spec := sandbox.Spec{ID: fmt.Sprintf("test-life-%d", os.Getpid()), Root: ws}
	ctx := context.Background()

	s1, err := b.Open(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	id1, running := containerID(t, b, spec.ID)
	if !running {
		t.Fatal("no running container after Open")
	}
	run(t, s1, sandbox.Command{Argv: sh("echo kept > /tmp/mark")})

	s2, err := b.Open(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if id2, _ := containerID(t, b, spec.ID); id2 != id1 {
		t.Fatalf("same spec: container %s, want the same %s", id2, id1)
	}
	if r := run(t, s2, sandbox.Command{Argv: []string{"cat", "/tmp/mark"}}); r.stdout != "kept\n" {
		t.Errorf("joined container lost /tmp: %+v", r)
	}
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	if _, running := containerID(t, b, spec.ID); !running {
		t.Fatal("closing one of two Sandboxes removed the container")
	}

	changed := spec
	changed.Limits.Processes = 77
	s3, err := b.Open(ctx, changed)
	if err != nil {
		t.Fatal(err)
	}
	id3, running := containerID(t, b, spec.ID)
	if id3 == id1 || !running {
		t.Fatalf("changed spec: container %s (running %v), want a new one", id3, running)
	}
	if _, err := s2.Start(ctx, sandbox.Command{Argv: []string{"true"}}); err == nil || !strings.Contains(err.Error(), "replaced") {
		t.Errorf("Start on the replaced container: %v, want an error saying so", err)
	}
	if err := s2.Close(); err != nil {
		t.Errorf("closing the replaced Sandbox: %v", err)
	}
	if id, _ := containerID(t, b, spec.ID); id != id3 {
		t.Fatal("closing the replaced Sandbox removed the new container")
	}
	p, err := s3.Start(ctx, sandbox.Command{Argv: sh("sleep 300")})
	if err != nil {
		t.Fatal(err)
	}
	if err := s3.Close(); err != nil {
		t.Fatal(err)
	}
	if ex, _ := p.Wait(); ex.Signal != "killed" {
		t.Errorf("command running at Close: %+v, want killed", ex)
	}
	if _, exists := containerID(t, b, spec.ID); exists {
		t.Error("container still exists after the last Close")
	}
	if _, err := s3.Start(ctx, sandbox.Command{Argv: []string{"true"}}); err == nil {
		t.Error("Start after Close worked")
	}
}

func TestCheck(t *testing.T) {
	set := needEngine(t)
	missing := filepath.Join(t.TempDir(), "docker.sock")
	tests := []struct {
		name     string
		settings map[string]any
		want     string // in the error; "" for none
	}{
		{name: "ok", settings: set},
		{name: "no socket", settings: map[string]any{"socket": missing, "image": testImage},
			want: "sandbox backend docker: no Docker engine at " + missing + ": install docker.io and start dockerd"},
		{name: "not a socket", settings: map[string]any{"socket": "unix:///etc/passwd"},
			want: "/etc/passwd is not a unix socket"},
		{name: "no image", settings: map[string]any{"image": "talon-no-such-image:1"},
			want: `image "talon-no-such-image:1" not found locally: docker import / load it`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := New(tt.settings)
			if err != nil {
				t.Fatal(err)
			}
			err = b.Check(context.Background())
			switch {
			case tt.want == "" && err != nil:
				t.Fatal(err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if tt.want != "" {
				_, err := b.Open(context.Background(), sandbox.Spec{ID: "x", Root: t.TempDir()})
				want := strings.TrimPrefix(tt.want, "sandbox backend docker: ")
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("Open: %v, want %q", err, want)
				}
			}
		})
	}
}

func TestRegistered(t *testing.T) {
	b, err := sandbox.New("docker", map[string]any{"image": "x:y", "memory": "1g"})
	if err != nil {
		t.Fatal(err)
	}
	if b.Name() != "docker" || !b.Isolated() {
		t.Errorf("Name %q Isolated %v", b.Name(), b.Isolated())
	}
}

// TestKillEverything checks that a command killing every process it may
// (docker-init included, as it runs as the same user) does not leave the
// Sandbox unusable: the next Start starts the container again.
func TestKillEverything(t *testing.T) {
	b := backend(t, nil)
	sb := open(t, b, sandbox.Spec{})
	started := func() string {
		var cur struct{ State struct{ StartedAt string } }
		if err := b.engine.call(context.Background(), "GET", "/containers/"+sb.(*box).c.id+"/json", nil, nil, &cur); err != nil {
			t.Fatal(err)
		}
		return cur.State.StartedAt
	}
	first := started()
	run(t, sb, sandbox.Command{Argv: sh("kill -9 -1")})
	r := run(t, sb, sandbox.Command{Argv: sh("echo back; ls /workspace")})
	if r.exit.Code != 0 || !strings.HasPrefix(r.stdout, "back\n") {
		t.Fatalf("after kill -9 -1: %+v", r)
	}
	if started() == first {
		t.Error("kill -9 -1 did not stop the container: the test proves nothing")
	}
	// And Kill works on the restarted container (its killer too).
	p, err := sb.Start(context.Background(), sandbox.Command{Argv: sh("sleep 300")})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if ex, err := p.Wait(); err != nil || ex.Signal != "killed" {
		t.Errorf("exit %+v, %v", ex, err)
	}
}
