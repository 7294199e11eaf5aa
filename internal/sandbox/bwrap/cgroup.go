package bwrap

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// A pids cgroup bounds the processes of one command when Talon runs as
// root: the kernel exempts root (uid 0 outside the user namespace) from
// RLIMIT_NPROC, so the rlimit alone would not hold a fork bomb.

// cgroupDirName is the directory Talon creates its command cgroups in.
const cgroupDirName = "talon-sandbox"

// pidsParent is a directory of a pids-controlled cgroup hierarchy in which
// Talon can create one cgroup per command.
type pidsParent struct{ dir string }

// cgroupSeq numbers the command cgroups of this process.
var cgroupSeq atomic.Uint64

// findPidsParent finds, or makes, the directory Talon's command cgroups
// go in: under Talon's own cgroup in cgroup v1's pids hierarchy, or at the
// top of the cgroup v2 hierarchy with the pids controller enabled down to
// it (a v2 cgroup that holds processes, as Talon's own does, cannot give
// controllers to children).
func findPidsParent() (*pidsParent, error) {
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("reading the mount table: %w", err)
	}
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("reading Talon's cgroups: %w", err)
	}
	v1, v2 := cgroupMounts(string(mounts))
	var errs []error
	if v1.point != "" {
		dir, err := v1Parent(v1, string(own))
		if err == nil {
			return &pidsParent{dir: dir}, nil
		}
		errs = append(errs, err)
	}
	if v2.point != "" {
		dir, err := v2Parent(v2.point)
		if err == nil {
			return &pidsParent{dir: dir}, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil, errors.New("no cgroup hierarchy with the pids controller is mounted")
	}
	return nil, errors.Join(errs...)
}

type cgroupMount struct{ root, point string }

// cgroupMounts finds the cgroup v1 hierarchy of the pids controller and
// the cgroup v2 hierarchy in a mountinfo table.
func cgroupMounts(mountinfo string) (v1, v2 cgroupMount) {
	for line := range strings.Lines(mountinfo) {
		// id parent major:minor root point options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(strings.TrimSpace(line), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 {
			continue
		}
		m := cgroupMount{root: unescapeMount(f[3]), point: unescapeMount(f[4])}
		switch g[0] {
		case "cgroup":
			if v1.point == "" && slices.Contains(strings.Split(g[2], ","), "pids") {
				v1 = m
			}
		case "cgroup2":
			if v2.point == "" {
				v2 = m
			}
		}
	}
	return v1, v2
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// v1Parent is talon-sandbox under Talon's own cgroup of the v1 pids
// hierarchy mounted as m (v1 has no rule against cgroups with both
// processes and children).
func v1Parent(m cgroupMount, own string) (string, error) {
	path := ""
	for line := range strings.Lines(own) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) == 3 && slices.Contains(strings.Split(parts[1], ","), "pids") {
			path = parts[2]
		}
	}
	if path == "" {
		return "", errors.New("cgroup v1: Talon is in no pids cgroup")
	}
	rel, err := filepath.Rel(m.root, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return "", fmt.Errorf("cgroup v1: Talon's pids cgroup %s is outside the mounted %s", path, m.root)
	}
	dir := filepath.Join(m.point, rel, cgroupDirName)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("cgroup v1: %w", err)
	}
	return dir, nil
}

// v2Parent is talon-sandbox at the top of the v2 hierarchy mounted at
// point, with pids enabled for it and for its children.
func v2Parent(point string) (string, error) {
	ctrl, err := os.ReadFile(filepath.Join(point, "cgroup.controllers"))
	if err != nil {
		return "", fmt.Errorf("cgroup v2: %w", err)
	}
	if !slices.Contains(strings.Fields(string(ctrl)), "pids") {
		return "", fmt.Errorf("cgroup v2 at %s: the pids controller is not available there", point)
	}
	dir := filepath.Join(point, cgroupDirName)
	if err := enablePids(point); err != nil {
		return "", err
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("cgroup v2: %w", err)
	}
	if err := enablePids(dir); err != nil {
		return "", err
	}
	return dir, nil
}

func enablePids(dir string) error {
	f := filepath.Join(dir, "cgroup.subtree_control")
	have, err := os.ReadFile(f)
	if err != nil {
		return fmt.Errorf("cgroup v2: %w", err)
	}
	if slices.Contains(strings.Fields(string(have)), "pids") {
		return nil
	}
	if err := os.WriteFile(f, []byte("+pids"), 0); err != nil {
		return fmt.Errorf("cgroup v2: enabling pids in %s: %w", dir, err)
	}
	return nil
}

// pidsCgroup is the cgroup of one command.
type pidsCgroup struct{ dir string }

// create makes a cgroup that holds at most max processes.
func (p *pidsParent) create(max int) (*pidsCgroup, error) {
	var dir string
	for {
		// Named by Talon's pid and a sequence number; one left by an
		// earlier Talon with the same pid is skipped.
		dir = filepath.Join(p.dir, fmt.Sprintf("%d-%d", os.Getpid(), cgroupSeq.Add(1)))
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("creating the command's pids cgroup: %w", err)
		}
	}
	cg := &pidsCgroup{dir: dir}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(max)), 0); err != nil {
		cg.remove()
		return nil, fmt.Errorf("setting the command's pids.max: %w", err)
	}
	return cg, nil
}

// add moves process pid into the cgroup; the children it starts after
// are in it too.
func (c *pidsCgroup) add(pid int) error {
	if err := os.WriteFile(filepath.Join(c.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		return fmt.Errorf("moving the sandbox into its pids cgroup: %w", err)
	}
	return nil
}

// remove deletes the cgroup once its processes are gone (the caller has
// waited for that), retrying for a moment in case the kernel is not quite
// done; a cgroup left behind is empty and harmless.
func (c *pidsCgroup) remove() {
	for wait := time.Millisecond; wait < time.Second; wait *= 2 {
		err := os.Remove(c.dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		time.Sleep(wait)
	}
}
