// Package procfs reads what the benchmarks report about a running process
// from Linux's /proc: resident memory (of the process alone or with its
// descendants), open file descriptors and their limit. Every function reads
// /proc afresh and is safe for concurrent use; on systems without /proc
// they return errors.
package procfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// RSSMB is the process's VmRSS in MB (10^6 bytes).
func RSSMB(pid int) (float64, error) {
	kb, err := statusKB(pid, "VmRSS")
	if err != nil {
		return 0, fmt.Errorf("reading RSS of %d: %w", pid, err)
	}
	return float64(kb) * 1024 / 1e6, nil
}

// AnonRSSMB is the process's RssAnon in MB: its resident anonymous
// memory (for a Go program the heap, stacks and the runtime's free spans
// not yet returned), without the binary's mapped pages.
func AnonRSSMB(pid int) (float64, error) {
	kb, err := statusKB(pid, "RssAnon")
	if err != nil {
		return 0, fmt.Errorf("reading the anonymous RSS of %d: %w", pid, err)
	}
	return float64(kb) * 1024 / 1e6, nil
}

// VirtualBytes is the process's VmSize: the address space it has mapped,
// which RLIMIT_AS bounds (a Go program reserves far more than it uses).
func VirtualBytes(pid int) (int64, error) {
	kb, err := statusKB(pid, "VmSize")
	if err != nil {
		return 0, fmt.Errorf("reading the address space of %d: %w", pid, err)
	}
	return kb << 10, nil
}

// TreeRSSMB is the VmRSS of the process and all its descendants, in MB:
// what a gateway that forks workers (OpenClaw does) costs in memory.
// Descendants that exit while it reads are left out.
func TreeRSSMB(pid int) (float64, error) {
	total, err := RSSMB(pid)
	if err != nil {
		return 0, err
	}
	kids, err := Descendants(pid)
	if err != nil {
		return 0, err
	}
	for _, k := range kids {
		if mb, err := RSSMB(k); err == nil {
			total += mb
		}
	}
	return total, nil
}

// Descendants lists the process's children, their children, and so on,
// from /proc/PID/task/*/children.
func Descendants(pid int) ([]int, error) {
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", p))
		if err != nil {
			if p == pid {
				return nil, fmt.Errorf("listing the children of %d: %w", pid, err)
			}
			continue // exited meanwhile
		}
		for _, t := range tasks {
			data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "task", t.Name(), "children"))
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(data)) {
				if c, err := strconv.Atoi(f); err == nil {
					out = append(out, c)
					queue = append(queue, c)
				}
			}
		}
	}
	return out, nil
}

// CPUSeconds is the CPU time (user + system) the process has used, from
// /proc/PID/stat, at its 10 ms resolution (USER_HZ is 100 on Linux).
func CPUSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the CPU time of %d: %w", pid, err)
	}
	return parseCPUSeconds(string(data))
}

// parseCPUSeconds reads utime and stime, fields 14 and 15 of a stat line.
// The command name, field 2, is in parentheses and may hold spaces and
// parentheses itself, so the fields are counted after its last ')'.
func parseCPUSeconds(stat string) (float64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("parsing /proc stat: no ')' after the command name in %q", stat)
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3, the state
	if len(f) < 13 {
		return 0, fmt.Errorf("parsing /proc stat: %d fields after the command name, want at least 13", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("parsing /proc stat: CPU ticks %q", s)
		}
		ticks += n
	}
	return float64(ticks) / 100, nil
}

// OpenFiles counts the process's open file descriptors (sockets included).
func OpenFiles(pid int) (int, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0, fmt.Errorf("counting open files of %d: %w", pid, err)
	}
	return len(ents), nil
}

// MaxOpenFiles is the process's soft RLIMIT_NOFILE, from /proc/PID/limits;
// -1 means unlimited.
func MaxOpenFiles(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the limits of %d: %w", pid, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		rest, ok := strings.CutPrefix(line, "Max open files")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			break
		}
		if f[0] == "unlimited" {
			return -1, nil
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing the open-files limit of %d (%q): %w", pid, line, err)
		}
		return n, nil
	}
	return 0, fmt.Errorf("no \"Max open files\" in /proc/%d/limits", pid)
}

// statusKB reads a "Name:   N kB" line of /proc/PID/status.
func statusKB(pid int, field string) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parsing %s %q: %w", field, v, err)
			}
			return n, nil
		}
	}
	return 0, errors.New("no " + field + " in /proc/" + strconv.Itoa(pid) + "/status")
}
