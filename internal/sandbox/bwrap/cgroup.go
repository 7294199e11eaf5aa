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

	"talon/internal/contain"
	"talon/internal/sandbox"
)

// When Talon runs as root, each command gets cgroups for two limits that
// rlimits cannot hold:
//
//   - pids: the kernel exempts root (uid 0 outside the user namespace) from
//     RLIMIT_NPROC, so the rlimit alone would not hold a fork bomb. Talon
//     does not run commands as root without it.
//   - memory: RLIMIT_AS bounds one process's address space, not the sum over
//     a command's processes, and not the pages of its /tmp, a tmpfs that
//     belongs to no process. A memory cgroup counts them all: anonymous
//     memory, tmpfs pages and the page cache of the files the command
//     writes. It is used where the kernel offers the controller; without
//     it each process and /tmp are bounded one by one (Layers says which).

// cgroupDirName is the directory Talon creates its command cgroups in.
const cgroupDirName = "talon-sandbox"

// cgroupParents are the directories Talon creates a command's cgroups in,
// one per controller: the same one for both under cgroup v2, one per
// hierarchy under v1.
type cgroupParents struct {
	pids   string
	memory string // "" without a memory controller Talon can use
}

// cgroupSeq numbers the command cgroups of this process.
var cgroupSeq atomic.Uint64

// findCgroupParents finds, or makes, the directories Talon's command
// cgroups go in. Without a pids controller it fails; without a memory
// controller, commands get no memory cgroup (memoryLayer says why).
func findCgroupParents() (*cgroupParents, error) {
	h, err := readHierarchies()
	if err != nil {
		return nil, err
	}
	pids, err := h.parent("pids")
	if err != nil {
		return nil, err
	}
	memory, _ := h.parent("memory")
	return &cgroupParents{pids: pids, memory: memory}, nil
}

// hierarchies are the cgroup hierarchies mounted here, and Talon's own
// cgroups in them.
type hierarchies struct {
	v1  map[string]cgroupMount // by controller
	v2  cgroupMount
	own string // /proc/self/cgroup
}

func readHierarchies() (hierarchies, error) {
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return hierarchies{}, fmt.Errorf("reading the mount table: %w", err)
	}
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return hierarchies{}, fmt.Errorf("reading Talon's cgroups: %w", err)
	}
	v1, v2 := cgroupMounts(string(mounts))
	return hierarchies{v1: v1, v2: v2, own: string(own)}, nil
}

// parent finds, or makes, the directory for command cgroups of one
// controller: under Talon's own cgroup in cgroup v1's hierarchy of the
// controller, or at the top of the cgroup v2 hierarchy with the controller
// enabled down to it (a v2 cgroup that holds processes, as Talon's own
// does, cannot give controllers to children).
func (h hierarchies) parent(controller string) (string, error) {
	var errs []error
	if m, ok := h.v1[controller]; ok {
		dir, err := v1Parent(m, h.own, controller)
		if err == nil {
			return dir, nil
		}
		errs = append(errs, err)
	}
	if h.v2.point != "" {
		dir, err := v2Parent(h.v2.point, controller)
		if err == nil {
			return dir, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return "", fmt.Errorf("no cgroup hierarchy with the %s controller is mounted", controller)
	}
	return "", errors.Join(errs...)
}

type cgroupMount struct{ root, point string }

// cgroupMounts finds, in a mountinfo table, the cgroup v1 hierarchy of
// each controller (the first mounted) and the cgroup v2 hierarchy.
func cgroupMounts(mountinfo string) (v1 map[string]cgroupMount, v2 cgroupMount) {
	v1 = map[string]cgroupMount{}
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
			// The super options name the hierarchy's controllers among
			// others (rw, name=…), which no lookup asks for.
			for _, c := range strings.Split(g[2], ",") {
				if _, seen := v1[c]; !seen {
					v1[c] = m
				}
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

// ownCgroup is Talon's cgroup in the v1 hierarchy of controller, from
// /proc/self/cgroup's text; "" when it is in none.
func ownCgroup(own, controller string) string {
	path := ""
	for line := range strings.Lines(own) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) == 3 && slices.Contains(strings.Split(parts[1], ","), controller) {
			path = parts[2]
		}
	}
	return path
}

// v1Parent is talon-sandbox under Talon's own cgroup of the v1 hierarchy
// of controller, mounted as m (v1 has no rule against cgroups with both
// processes and children).
func v1Parent(m cgroupMount, own, controller string) (string, error) {
	path := ownCgroup(own, controller)
	if path == "" {
		return "", fmt.Errorf("cgroup v1: Talon is in no %s cgroup", controller)
	}
	rel, ok := contain.Within(m.root, path)
	if !ok {
		return "", fmt.Errorf("cgroup v1: Talon's %s cgroup %s is outside the mounted %s", controller, path, m.root)
	}
	dir := filepath.Join(m.point, rel, cgroupDirName)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("cgroup v1: %w", err)
	}
	return dir, nil
}

// v2Parent is talon-sandbox at the top of the v2 hierarchy mounted at
// point, with controller enabled for it and for its children.
func v2Parent(point, controller string) (string, error) {
	ctrl, err := os.ReadFile(filepath.Join(point, "cgroup.controllers"))
	if err != nil {
		return "", fmt.Errorf("cgroup v2: %w", err)
	}
	if !slices.Contains(strings.Fields(string(ctrl)), controller) {
		return "", fmt.Errorf("cgroup v2 at %s: the %s controller is not available there", point, controller)
	}
	dir := filepath.Join(point, cgroupDirName)
	if err := enable(point, controller); err != nil {
		return "", err
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("cgroup v2: %w", err)
	}
	if err := enable(dir, controller); err != nil {
		return "", err
	}
	return dir, nil
}

// enable gives dir's children controller.
func enable(dir, controller string) error {
	f := filepath.Join(dir, "cgroup.subtree_control")
	have, err := os.ReadFile(f)
	if err != nil {
		return fmt.Errorf("cgroup v2: %w", err)
	}
	if slices.Contains(strings.Fields(string(have)), controller) {
		return nil
	}
	if err := os.WriteFile(f, []byte("+"+controller), 0); err != nil {
		return fmt.Errorf("cgroup v2: enabling %s in %s: %w", controller, dir, err)
	}
	return nil
}

// commandCgroup is the cgroups of one command: one directory under cgroup
// v2, or one per hierarchy under v1.
type commandCgroup struct{ dirs []string }

// create makes the cgroups of a command under limits l: at most
// l.Processes processes, and, with a memory controller, l.Memory bytes of
// memory and no swap.
func (p *cgroupParents) create(l sandbox.Limits) (*commandCgroup, error) {
	cg := &commandCgroup{}
	fail := func(err error) (*commandCgroup, error) {
		cg.remove()
		return nil, err
	}
	pids, err := cg.mkdir(p.pids)
	if err != nil {
		return fail(err)
	}
	if err := os.WriteFile(filepath.Join(pids, "pids.max"), []byte(strconv.Itoa(l.Processes)), 0); err != nil {
		return fail(fmt.Errorf("setting the command's pids.max: %w", err))
	}
	if p.memory == "" {
		return cg, nil
	}
	memory := pids
	if p.memory != p.pids {
		if memory, err = cg.mkdir(p.memory); err != nil {
			return fail(err)
		}
	}
	for _, w := range memoryLimits(memory, l.Memory) {
		if err := os.WriteFile(w.file, []byte(w.value), 0); err != nil {
			return fail(fmt.Errorf("setting the command's memory limit: %w", err))
		}
	}
	return cg, nil
}

// mkdir makes a new cgroup under parent, named by Talon's pid and a
// sequence number; one left by an earlier Talon with the same pid is
// skipped.
func (c *commandCgroup) mkdir(parent string) (string, error) {
	for {
		dir := filepath.Join(parent, fmt.Sprintf("%d-%d", os.Getpid(), cgroupSeq.Add(1)))
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			c.dirs = append(c.dirs, dir)
			return dir, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("creating the command's cgroup: %w", err)
		}
	}
}

type cgroupWrite struct{ file, value string }

// memoryLimits are the writes that hold the cgroup at dir to n bytes of
// memory and no swap, in order: memory.max and memory.swap.max under
// cgroup v2; under v1 memory.limit_in_bytes, then the limit of memory
// plus swap (memory.memsw.limit_in_bytes, which may not be below the
// first) at the same n. The swap files exist only where the kernel
// accounts swap.
func memoryLimits(dir string, n int64) []cgroupWrite {
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(dir, name))
		return err == nil
	}
	v := strconv.FormatInt(n, 10)
	mem, swap, swapValue := "memory.limit_in_bytes", "memory.memsw.limit_in_bytes", v
	if exists("memory.max") {
		mem, swap, swapValue = "memory.max", "memory.swap.max", "0"
	}
	w := []cgroupWrite{{filepath.Join(dir, mem), v}}
	if exists(swap) {
		w = append(w, cgroupWrite{filepath.Join(dir, swap), swapValue})
	}
	return w
}

// add moves process pid into the command's cgroups; the children it
// starts after are in them too.
func (c *commandCgroup) add(pid int) error {
	for _, d := range c.dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("moving the sandbox into its cgroup: %w", err)
		}
	}
	return nil
}

// remove deletes the cgroups once their processes are gone (the caller
// has waited for that), retrying for a moment in case the kernel is not
// quite done; a cgroup left behind is empty and harmless.
func (c *commandCgroup) remove() {
	for _, d := range c.dirs {
		for wait := time.Millisecond; wait < time.Second; wait *= 2 {
			err := os.Remove(d)
			if err == nil || errors.Is(err, os.ErrNotExist) {
				break
			}
			time.Sleep(wait)
		}
	}
}
