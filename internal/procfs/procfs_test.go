package procfs

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestSelf(t *testing.T) {
	pid := os.Getpid()
	rss, err := RSSMB(pid)
	if err != nil || rss <= 0 {
		t.Fatalf("RSSMB = %v, %v", rss, err)
	}
	// The anonymous part of what is resident is some of it (read between
	// two readings of RSS, which may have grown meanwhile).
	anon, err := AnonRSSMB(pid)
	if rss2, _ := RSSMB(pid); err != nil || anon <= 0 || anon > max(rss, rss2) {
		t.Errorf("AnonRSSMB = %v, %v (RSS %v then %v MB)", anon, err, rss, rss2)
	}
	// The address space holds at least what is resident.
	if vm, err := VirtualBytes(pid); err != nil || float64(vm) < rss*1e6 {
		t.Fatalf("VirtualBytes = %v, %v (RSS %v MB)", vm, err, rss)
	}

	before, err := OpenFiles(pid)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	after, err := OpenFiles(pid)
	f.Close()
	if err != nil || after != before+1 {
		t.Errorf("OpenFiles: %d before opening a file, %d after (%v)", before, after, err)
	}

	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	n, err := MaxOpenFiles(pid)
	want := int64(lim.Cur)
	if lim.Cur == ^uint64(0) { // RLIM_INFINITY
		want = -1
	}
	if err != nil || n != want {
		t.Errorf("MaxOpenFiles = %d, %v; getrlimit says %d", n, err, want)
	}
}

func TestDescendants(t *testing.T) {
	// sh runs sleep as its child, so the tree is two deep.
	cmd := exec.Command("sh", "-c", "sleep 30; true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var kids []int
	for range 1000 { // until sh has forked sleep: at most 10 s
		time.Sleep(10 * time.Millisecond)
		var err error
		if kids, err = Descendants(os.Getpid()); err != nil {
			t.Fatal(err)
		}
		if len(kids) >= 2 {
			break
		}
	}
	if !slices.Contains(kids, cmd.Process.Pid) || len(kids) < 2 {
		t.Fatalf("Descendants = %v, want sh (%d) and its sleep", kids, cmd.Process.Pid)
	}
	own, _ := RSSMB(os.Getpid())
	tree, err := TreeRSSMB(os.Getpid())
	if err != nil || tree <= own {
		t.Errorf("TreeRSSMB = %v (own %v), %v", tree, own, err)
	}
}

func TestMissingProcess(t *testing.T) {
	const pid = 1 << 30 // above any pid_max
	if _, err := RSSMB(pid); err == nil {
		t.Error("RSSMB succeeded")
	}
	if _, err := AnonRSSMB(pid); err == nil {
		t.Error("AnonRSSMB succeeded")
	}
	if _, err := OpenFiles(pid); err == nil {
		t.Error("OpenFiles succeeded")
	}
	if _, err := MaxOpenFiles(pid); err == nil {
		t.Error("MaxOpenFiles succeeded")
	}
	if _, err := Descendants(pid); err == nil {
		t.Error("Descendants succeeded")
	}
}

func TestParseCPUSeconds(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		want       float64
		err        string
	}{
		{"plain", "42 (talon) S 1 42 42 0 -1 4194560 100 0 0 0 150 25 0 0 20 0 9 0", 1.75, ""},
		{"name with spaces and parens", "42 (a (b) c) R 1 42 42 0 -1 0 0 0 0 0 7 3 0 0", 0.10, ""},
		{"no name", "42 talon S 1", 0, "no ')'"},
		{"short", "42 (talon) S 1 42", 0, "fields after the command name"},
		{"bad ticks", "42 (talon) S 1 42 42 0 -1 0 0 0 0 0 x 3 0 0", 0, `CPU ticks "x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseCPUSeconds(tc.stat)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("= %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestCPUSecondsOfSelf(t *testing.T) {
	before, err := CPUSeconds(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Spin until the 10 ms clock ticks over: the reading must grow.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		now, err := CPUSeconds(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if now > before {
			return
		}
	}
	t.Fatal("the CPU time did not grow in 5 s of spinning")
}
