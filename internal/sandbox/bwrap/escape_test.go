package bwrap

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"talon/internal/sandbox"
)

// The escape tests try, through commands, to get out of the sandbox the
// way an agent's command could. Every script prints ESCAPED when an
// attempt succeeds; the test also checks that the host is unchanged
// afterwards. Each script prints TRIED first, so a script that does not
// run at all fails the test rather than passing it.
func TestEscapes(t *testing.T) {
	requireBwrap(t)
	secret := "talon-secret-" + rand.Text()
	t.Setenv("TALON_TEST_SECRET", secret)

	// The host side: a secret outside every mount, a read-only mount, the
	// agent workspace (read-only at /agent), a loopback service and a
	// host process.
	outside := t.TempDir()
	secretFile := filepath.Join(outside, "secret.txt")
	write(t, secretFile, secret)
	ro := t.TempDir()
	write(t, filepath.Join(ro, "f"), "read-only data\n")
	agent := t.TempDir()
	write(t, filepath.Join(agent, "AGENTS.md"), "# agent\n")
	root := t.TempDir()

	// A descriptor of the secret that Talon's process holds without
	// close-on-exec, as a careless parent could leave one.
	secretFD, err := syscall.Open(secretFile, syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(secretFD)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port

	hostSleep := exec.Command("sleep", "1000")
	if err := hostSleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { hostSleep.Process.Kill(); hostSleep.Wait() }()
	hostPID := hostSleep.Process.Pid

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	printk := readFile(t, "/proc/sys/kernel/printk_ratelimit")
	before := snapshot(t, outside, ro, agent, exe)

	sb := open(t, sandbox.Spec{Root: root, Mounts: []sandbox.Mount{
		{Source: ro, Target: "/data", ReadOnly: true},
		{Source: agent, Target: sandbox.AgentMount, ReadOnly: true},
	}})

	tests := []struct {
		name   string
		script string
	}{
		// Reading the host.
		{"host file outside the mounts", "cat " + secretFile + " && echo ESCAPED; ls " + outside + " && echo ESCAPED"},
		{"/root", "ls /root && echo ESCAPED"},
		{"/home", "ls /home && echo ESCAPED"},
		{"/etc/shadow", "cat /etc/shadow && echo ESCAPED"},
		{"/etc/ssl/private", "ls /etc/ssl/private && echo ESCAPED"},
		{"host /proc", fmt.Sprintf("test -e /proc/%d && echo ESCAPED; cat /proc/1/environ /proc/*/environ | tr '\\0' '\\n'", hostPID)},
		{"/proc/self/root", "cat /proc/self/root" + secretFile + " && echo ESCAPED; cat /proc/1/root/etc/shadow && echo ESCAPED; " +
			"ls /proc/self/root/root && echo ESCAPED; cat /proc/self/root/../../.." + secretFile + " && echo ESCAPED"},
		{"inherited descriptor", fmt.Sprintf("cat /proc/self/fd/%d && echo ESCAPED; ls -l /proc/self/fd/ | grep secret && echo ESCAPED", secretFD)},
		{"/sys", "ls /sys/kernel && echo ESCAPED"},
		{"devices", "ls /dev/vda /dev/sda /dev/mem /dev/kmsg && echo ESCAPED; mknod /tmp/disk b 8 0 && echo ESCAPED"},
		{"symlink out of the workspace", "ln -s " + secretFile + " /workspace/link; cat /workspace/link && echo ESCAPED; " +
			"ln -s /proc/1/root/etc/shadow /workspace/l2; cat /workspace/l2 && echo ESCAPED"},
		{"hard link out of a mount", "ln /usr/bin/env /workspace/env && echo ESCAPED; ln /data/f /workspace/f && echo ESCAPED"},

		// Writing where it may not.
		// touch -c: were a write to go through, it would change only a time.
		{"write /usr", "touch /usr/talon-escape && echo ESCAPED; touch -c /usr/bin/env && echo ESCAPED"},
		{"write a read-only mount", "echo x > /data/f && echo ESCAPED; touch /data/new && echo ESCAPED; rm /data/f && echo ESCAPED"},
		{"write /agent", "echo x >> /agent/AGENTS.md && echo ESCAPED; rm /agent/AGENTS.md && echo ESCAPED; touch /agent/new && echo ESCAPED"},
		{"write /etc and /", "echo x >> /etc/passwd && echo ESCAPED; touch /etc/new && echo ESCAPED; touch /new && echo ESCAPED"},
		{"replace the helper", "touch -c /run/talon/exec && echo ESCAPED; rm -f /run/talon/exec && echo ESCAPED"},
		{"sysctls", "v=$(cat /proc/sys/kernel/printk_ratelimit); echo $v > /proc/sys/kernel/printk_ratelimit && echo ESCAPED; " +
			"test -w /proc/sysrq-trigger && echo ESCAPED"},

		// Privilege.
		{"capabilities", "grep -q 'CapEff:[[:space:]]*0000000000000000' /proc/self/status || echo ESCAPED; " +
			"grep -q 'CapBnd:[[:space:]]*0000000000000000' /proc/self/status || echo ESCAPED"},
		{"no new privileges", "grep -q 'NoNewPrivs:[[:space:]]*1' /proc/self/status || echo ESCAPED"},
		{"nested user namespace", "unshare -U true && echo ESCAPED; unshare -r id && echo ESCAPED"},
		{"mount", "mount -t tmpfs none /tmp && echo ESCAPED; mount --bind /workspace /tmp && echo ESCAPED"},

		// The network.
		{"loopback service", fmt.Sprintf("bash -c 'echo hi > /dev/tcp/127.0.0.1/%d' && echo ESCAPED", port)},
		{"outside address", "bash -c 'echo > /dev/tcp/1.1.1.1/53' && echo ESCAPED"},
		{"interfaces", `[ "$(awk 'NR>2{print $1}' /proc/net/dev)" = "lo:" ] || echo ESCAPED`},

		// Host processes.
		{"signal a host process", fmt.Sprintf("kill -9 %d && echo ESCAPED; kill -0 %d && echo ESCAPED", hostPID, hostPID)},
		// Every process it may signal: the host process must survive it.
		{"signal everything", "kill -9 -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, sb, "echo TRIED; "+tt.script)
			out := r.stdout + r.stderr
			if !strings.Contains(r.stdout, "TRIED") {
				t.Fatalf("the script did not run: %+v %v\n%s", r.exit, r.err, out)
			}
			if strings.Contains(r.stdout, "ESCAPED\n") || strings.Contains(out, secret) {
				t.Fatalf("escaped:\n%s", out)
			}
			if r.err != nil || r.exit.TimedOut {
				t.Fatalf("exit %+v, %v\n%s", r.exit, r.err, out)
			}
		})
	}

	// The host is as it was.
	if after := snapshot(t, outside, ro, agent, exe); !maps.Equal(before, after) {
		t.Errorf("host files changed:\nbefore %v\nafter  %v", before, after)
	}
	if _, err := os.Lstat("/usr/talon-escape"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("/usr/talon-escape exists on the host: %v", err)
	}
	if got := readFile(t, "/proc/sys/kernel/printk_ratelimit"); got != printk {
		t.Errorf("kernel.printk_ratelimit changed from %q to %q", printk, got)
	}
	if err := hostSleep.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the host process is gone: %v", err)
	}
	ln.(*net.TCPListener).SetDeadline(time.Now())
	if c, err := ln.Accept(); err == nil {
		c.Close()
		t.Error("the loopback listener got a connection from the sandbox")
	}
}

// TestNetworkGranted is the counterpart of the network escapes: with
// Spec.Network the same connection reaches the host's loopback, so the
// escape test's attempt is one that would work if the namespace let it.
func TestNetworkGranted(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	sb := open(t, sandbox.Spec{Network: true})
	accepted := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			accepted <- err.Error()
			return
		}
		defer c.Close()
		b := make([]byte, 16)
		n, _ := c.Read(b)
		accepted <- string(b[:n])
	}()
	r := run(t, sb, fmt.Sprintf("bash -c 'echo hi > /dev/tcp/127.0.0.1/%d' && test -e /etc/resolv.conf -o ! -e /etc/resolv.conf && echo OK", ln.Addr().(*net.TCPAddr).Port))
	if r.err != nil || r.exit.Code != 0 || r.stdout != "OK\n" {
		t.Fatalf("%+v %v\n%s%s", r.exit, r.err, r.stdout, r.stderr)
	}
	if got := <-accepted; got != "hi\n" {
		t.Fatalf("the listener read %q", got)
	}
}

// TestLimits runs commands that each hit one limit: the limit stops them,
// and the host keeps what the limit allows and no more.
func TestLimits(t *testing.T) {
	requireBwrap(t)
	tests := []struct {
		name   string
		limits sandbox.Limits
		script string
		check  func(t *testing.T, r result, root string)
	}{
		{
			name:   "limits are set",
			limits: sandbox.Limits{Processes: 40, OpenFiles: 64, FileSize: 1 << 20, CPUTime: 90 * time.Second, Memory: 512 << 20},
			script: "ulimit -p; ulimit -n; ulimit -f; ulimit -t; ulimit -v; ulimit -c",
			check: func(t *testing.T, r result, _ string) {
				// dash: processes, files, 512-byte blocks, seconds, KiB, core blocks.
				if want := "40\n64\n2048\n90\n524288\n0\n"; r.stdout != want || r.exit.Code != 0 {
					t.Fatalf("ulimit printed %q (exit %+v), want %q", r.stdout, r.exit, want)
				}
			},
		},
		{
			name:   "processes",
			limits: sandbox.Limits{Processes: 16},
			script: "i=0; while [ $i -lt 64 ]; do sleep 1000 & i=$((i+1)); done; echo ALL-STARTED",
			check: func(t *testing.T, r result, _ string) {
				if strings.Contains(r.stdout, "ALL-STARTED") || r.exit.Code == 0 || !strings.Contains(r.stderr, "fork") {
					t.Fatalf("64 processes started under a limit of 16: exit %+v\n%s%s", r.exit, r.stdout, r.stderr)
				}
			},
		},
		{
			name:   "fork bomb",
			limits: sandbox.Limits{Processes: 32, Timeout: 3 * time.Second},
			// The command then blocks on a FIFO nobody writes, without
			// forking, so the bomb runs, held at 32 processes, until the
			// timeout kills it all.
			script: "mkfifo /tmp/block && exec bash -c ':(){ :|:& }; :; read x < /tmp/block'",
			check: func(t *testing.T, r result, _ string) {
				if !r.exit.TimedOut {
					t.Fatalf("exit %+v, want the timeout\n%s", r.exit, r.stderr)
				}
			},
		},
		{
			name:   "file size",
			limits: sandbox.Limits{FileSize: 1 << 20},
			script: "head -c 5000000 /dev/zero > /workspace/big; echo rc=$?; head -c 5000000 /dev/zero > /tmp/big; echo rc=$?",
			check: func(t *testing.T, r result, root string) {
				// SIGXFSZ (25) ends head: 128+25.
				if r.stdout != "rc=153\nrc=153\n" {
					t.Fatalf("stdout %q, want head killed by SIGXFSZ twice\n%s", r.stdout, r.stderr)
				}
				if fi, err := os.Stat(filepath.Join(root, "big")); err != nil || fi.Size() != 1<<20 {
					t.Fatalf("the host file: %v, %v; want exactly 1 MiB", fi, err)
				}
			},
		},
		{
			name:   "cpu time",
			limits: sandbox.Limits{CPUTime: time.Second, Timeout: 10 * time.Minute},
			script: "while :; do :; done",
			check: func(t *testing.T, r result, _ string) {
				// SIGXCPU (24): 128+24, long before the wall-clock timeout.
				if r.exit.Code != 152 || r.exit.TimedOut {
					t.Fatalf("exit %+v, want 152 (SIGXCPU)", r.exit)
				}
			},
		},
		{
			name:   "memory",
			limits: sandbox.Limits{Memory: 64 << 20},
			// A string doubled to 128 MiB: bounded, so that a limit that
			// did not hold could not take the machine's memory.
			script: "awk 'BEGIN { s = \"x\"; for (i = 0; i < 27; i++) s = s s; print length(s) }'",
			check: func(t *testing.T, r result, _ string) {
				if r.exit.Code == 0 || strings.Contains(r.stdout, "134217728") {
					t.Fatalf("awk built a 128 MiB string under a 64 MiB limit: exit %+v %q %q", r.exit, r.stdout, r.stderr)
				}
			},
		},
		{
			name:   "tmp beyond the memory limit",
			limits: sandbox.Limits{Memory: 64 << 20},
			// 6 x 32 MiB into /tmp: the tmpfs is full at 64 MiB (ENOSPC),
			// or the memory cgroup, which counts its pages, is (OOM kill).
			script: "set -e; for i in 1 2 3 4 5 6; do head -c 33554432 /dev/zero > /tmp/f$i; done; echo ALL-WRITTEN",
			check: func(t *testing.T, r result, root string) {
				if r.exit.Code == 0 || strings.Contains(r.stdout, "ALL-WRITTEN") {
					t.Fatalf("192 MiB written to /tmp under a 64 MiB memory limit: exit %+v %q %q", r.exit, r.stdout, r.stderr)
				}
				t.Logf("exit %+v %s", r.exit, strings.TrimSpace(r.stderr))
				emptyDir(t, root)
			},
		},
		{
			name:   "tmp within the memory limit",
			limits: sandbox.Limits{Memory: 64 << 20},
			script: "set -e; for i in 1 2; do head -c 16777216 /dev/zero > /tmp/f$i; done; cat /tmp/f1 /tmp/f2 | wc -c",
			check: func(t *testing.T, r result, root string) {
				if r.exit.Code != 0 || r.stdout != "33554432\n" {
					t.Fatalf("32 MiB in /tmp under a 64 MiB memory limit: exit %+v %q %q", r.exit, r.stdout, r.stderr)
				}
				emptyDir(t, root)
			},
		},
		{
			name:   "tmp and processes share the memory limit",
			limits: sandbox.Limits{Memory: 64 << 20},
			// 48 MiB in /tmp, then a process that touches a 32 MiB buffer:
			// each within the limit, their sum not.
			script: "head -c 50331648 /dev/zero > /tmp/f && dd if=/dev/zero of=/dev/null bs=32M count=1 2>/dev/null && echo BOTH",
			check: func(t *testing.T, r result, root string) {
				err := noMemoryCgroup()
				if both := r.exit.Code == 0 && r.stdout == "BOTH\n"; both != (err != nil) {
					t.Fatalf("memory cgroup: %v; but the command: exit %+v %q %q", err, r.exit, r.stdout, r.stderr)
				}
				if err != nil {
					t.Logf("no memory cgroup here (%v): /tmp and processes are bounded apart", err)
				}
				emptyDir(t, root)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			sb := open(t, sandbox.Spec{Root: root, Limits: tt.limits})
			r := run(t, sb, tt.script, func(c *sandbox.Command) { c.Timeout = 0 })
			if r.err != nil {
				t.Fatal(r.err)
			}
			tt.check(t, r, root)
			// The sandbox still works after its limit was hit.
			if r := run(t, sb, "echo fine"); r.stdout != "fine\n" {
				t.Fatalf("the next command: %+v %v %q %q", r.exit, r.err, r.stdout, r.stderr)
			}
		})
	}
}

// TestNothingOutlivesItsCommand checks that what a command leaves behind
// ends with it: a process with its output elsewhere, and a command killed
// at once after Start (before bwrap itself could arrange for its init to
// die with it).
func TestNothingOutlivesItsCommand(t *testing.T) {
	sb := open(t, sandbox.Spec{})
	marker := "4242." + strconv.Itoa(os.Getpid())
	r := run(t, sb, "sleep "+marker+" >/dev/null 2>&1 </dev/null & echo started")
	if r.stdout != "started\n" || r.err != nil {
		t.Fatalf("%+v %v %q", r.exit, r.err, r.stderr)
	}
	for range 10 {
		p, err := sb.Start(context.Background(), sandbox.Command{Argv: []string{"sleep", marker}})
		if err != nil {
			t.Fatal(err)
		}
		p.Kill()
		if exit, err := p.Wait(); err != nil || exit.Signal != "killed" {
			t.Fatalf("%+v %v", exit, err)
		}
	}
	// The kernel ends the PID namespace's processes as its init dies,
	// right after the command; wait for that, up to a bound.
	deadline := time.Now().Add(30 * time.Second)
	for {
		left := processesWith(t, marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes still running after their command ended: %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processesWith lists host processes whose command line contains s.
func processesWith(t *testing.T, s string) []string {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(b), s) && !strings.Contains(string(b), "-test.") {
			pids = append(pids, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return pids
}

// emptyDir fails the test unless dir has nothing in it.
func emptyDir(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) > 0 {
		t.Fatalf("%s: %v %v, want it empty", dir, ents, err)
	}
}

func write(t *testing.T, name, text string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// snapshot records every file under the given paths: mode, size, content
// hash and modification time.
func snapshot(t *testing.T, paths ...string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, p := range paths {
		err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			sum := ""
			if fi.Mode().IsRegular() {
				b, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				h := sha256.Sum256(b)
				sum = hex.EncodeToString(h[:8])
			}
			m[path] = fmt.Sprintf("%v %d %s %d", fi.Mode(), fi.Size(), sum, fi.ModTime().UnixNano())
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// TestMain lets the test binary, mounted into a sandbox, act as a client
// that no Debian base program is: one for abstract unix sockets.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "dial-abstract" {
		c, err := net.Dial("unix", "@"+os.Args[2])
		if err != nil {
			fmt.Println("refused:", err)
			os.Exit(1)
		}
		c.Close()
		fmt.Println("connected")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestLandlock checks the second layer where the kernel has it: what the
// namespace shows but the rules do not cover stays out of reach.
func TestLandlock(t *testing.T) {
	b := requireBwrap(t)
	abi, ok := b.Landlock()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The helper's binary is mounted, but under no rule: unreadable.
	sb := open(t, sandbox.Spec{})
	r := run(t, sb, "cat /run/talon/exec >/dev/null && echo READ")
	if got := strings.Contains(r.stdout, "READ"); got == ok {
		t.Fatalf("Landlock ABI %d (%v): reading /run/talon/exec printed %q %q", abi, ok, r.stdout, r.stderr)
	}
	if !ok || abi < 6 {
		t.Logf("Landlock ABI %d (%v): no scoping of abstract unix sockets to check", abi, ok)
		return
	}
	// With the host's network, the host's abstract unix sockets are in
	// the sandbox's network namespace; Landlock's scope keeps them out.
	name := "talon-bwrap-test-" + rand.Text()
	ln, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if out, err := exec.Command(exe, "dial-abstract", name).CombinedOutput(); err != nil || string(out) != "connected\n" {
		t.Fatalf("the client cannot connect from the host either: %v %s", err, out)
	}
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	sb = open(t, sandbox.Spec{Network: true, Mounts: []sandbox.Mount{{Source: exe, Target: "/data/client", ReadOnly: true}}})
	r = run(t, sb, "/data/client dial-abstract "+name)
	if r.exit.Code == 0 || !strings.Contains(r.stdout, "refused") {
		t.Fatalf("the sandbox reached the host's abstract socket: %+v %q %q", r.exit, r.stdout, r.stderr)
	}
	t.Logf("from the sandbox: %s", r.stdout)
	ln.(*net.UnixListener).SetDeadline(time.Now())
	if c, err := ln.Accept(); err == nil {
		c.Close()
		t.Fatal("the host's abstract socket got a connection from the sandbox")
	}
}
