package bwrap

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The helper applies Landlock to its own thread only, with the raw system
// calls, and then execs the command from that thread: execve keeps the
// calling thread's credentials, Landlock domain included, and ends every
// other thread. A library's all-threads Restrict (go-landlock's, through
// libpsx) would signal each thread and wait for it, several milliseconds
// of a command's start on a busy machine, for threads that exec is about
// to end anyway; and libpsx is cgo that forces external linking, whose
// binary this kernel maps in 2 MB folios (≈ 10 MB more idle RSS).

// Access rights, by what they are for.
const (
	accessRead  = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	accessWrite = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK | unix.LANDLOCK_ACCESS_FS_MAKE_SYM | unix.LANDLOCK_ACCESS_FS_TRUNCATE
	// The rights a rule on a file (not a directory) may hold.
	accessFile = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE
)

// minLandlockABI is the oldest ABI the helper uses: ABI 1 cannot allow
// moving a file from one directory to another (mv, git), so it would
// break commands rather than confine them.
const minLandlockABI = 2

// landlockABI is the kernel's Landlock ABI version, 0 without Landlock.
func landlockABI() int {
	v, _, errno := syscall.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 || int(v) < 1 {
		return 0
	}
	return int(v)
}

// handledAccess is every filesystem right the kernel's ABI knows: the
// rules then allow only what they name. Each ABI added one right.
func handledAccess(abi int) uint64 {
	switch {
	case abi >= 9:
		return 1<<17 - 1 // resolving pathname unix sockets
	case abi >= 5:
		return 1<<16 - 1 // ioctl on devices
	case abi >= 3:
		return 1<<15 - 1 // truncate
	default:
		return 1<<14 - 1 // refer (ABI 2)
	}
}

// landlockRule allows access under path, a directory or a file.
type landlockRule struct {
	path   string
	access uint64
}

// landlockRules are the helper's rules for c: read and execute under the
// read-only paths, everything but ioctl and connecting to unix sockets
// made outside the sandbox under the writable ones, terminal ioctls in
// /dev, and listing any directory (ls /: the namespace holds only what
// Talon put there).
func landlockRules(c helperConfig) []landlockRule {
	var rules []landlockRule
	for _, p := range c.roDirs {
		rules = append(rules, landlockRule{path: p, access: accessRead})
	}
	for _, p := range c.rwDirs {
		// refer: mv and git move files from one directory to another.
		rules = append(rules, landlockRule{path: p, access: accessRead | accessWrite | unix.LANDLOCK_ACCESS_FS_REFER})
	}
	for _, p := range c.roFiles {
		rules = append(rules, landlockRule{path: p, access: accessRead & accessFile})
	}
	for _, p := range c.rwFiles {
		rules = append(rules, landlockRule{path: p, access: (accessRead | accessWrite) & accessFile})
	}
	return append(rules,
		landlockRule{path: "/dev", access: accessRead | accessWrite | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV},
		landlockRule{path: "/", access: unix.LANDLOCK_ACCESS_FS_READ_DIR},
	)
}

// restrict puts the Landlock rules of c on the calling thread, which must
// stay locked to its goroutine and exec the command. A kernel without
// Landlock, or with ABI 1, gets none (Backend.Landlock says so); scoping
// of signals and abstract unix sockets comes with ABI 6.
func restrict(c helperConfig) error {
	runtime.LockOSThread() // never unlocked: the command is exec'd from here
	abi := landlockABI()
	if abi < minLandlockABI {
		return nil
	}
	attr := unix.LandlockRulesetAttr{Handled_access_fs: handledAccess(abi)}
	if abi >= 6 {
		attr.Scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
	}
	// The kernel takes the struct's size and accepts a longer one than it
	// knows as long as the fields it does not know are zero.
	fd, _, errno := syscall.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return fmt.Errorf("creating the ruleset: %w", os.NewSyscallError("landlock_create_ruleset", errno))
	}
	ruleset := int(fd)
	defer unix.Close(ruleset)
	for _, r := range landlockRules(c) {
		if err := addRule(ruleset, r, attr.Handled_access_fs); err != nil {
			return err
		}
	}
	// bwrap has set no_new_privs, which Landlock requires of an
	// unprivileged thread.
	if _, _, errno := syscall.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); errno != 0 {
		return fmt.Errorf("enforcing the ruleset: %w", os.NewSyscallError("landlock_restrict_self", errno))
	}
	return nil
}

func addRule(ruleset int, r landlockRule, handled uint64) error {
	fd, err := unix.Open(r.path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil // a system directory this host does not have
	}
	if err != nil {
		return fmt.Errorf("opening %s: %w", r.path, err)
	}
	defer unix.Close(fd)
	attr := unix.LandlockPathBeneathAttr{Allowed_access: r.access & handled, Parent_fd: int32(fd)}
	_, _, errno := syscall.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	if errno != 0 {
		return fmt.Errorf("allowing %s: %w", r.path, os.NewSyscallError("landlock_add_rule", errno))
	}
	return nil
}

// DenyThreadFiles puts the calling thread under a Landlock domain that
// allows no filesystem access at all (and, from ABI 4, no TCP bind or
// connect; from ABI 6, no signals or abstract unix sockets outside it),
// for code that works only on descriptors it already holds: a child
// parsing hostile bytes from stdin. The caller locks its goroutine to the
// thread first and never unlocks it, and runs the confined work there;
// the domain is the thread's alone (a cgo binary cannot change all
// threads), and is inherited by threads it starts. It returns the ABI
// applied, 0 when the kernel has no usable Landlock (nothing is done).
func DenyThreadFiles() (int, error) {
	abi := landlockABI()
	if abi < minLandlockABI {
		return 0, nil
	}
	attr := unix.LandlockRulesetAttr{Handled_access_fs: handledAccess(abi)}
	if abi >= 4 {
		attr.Handled_access_net = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
	}
	if abi >= 6 {
		attr.Scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
	}
	fd, _, errno := syscall.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return 0, fmt.Errorf("creating the ruleset: %w", os.NewSyscallError("landlock_create_ruleset", errno))
	}
	defer unix.Close(int(fd))
	// Required of a thread without CAP_SYS_ADMIN; per thread, as the domain.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return 0, fmt.Errorf("setting no_new_privs: %w", err)
	}
	if _, _, errno := syscall.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); errno != 0 {
		return 0, fmt.Errorf("enforcing the ruleset: %w", os.NewSyscallError("landlock_restrict_self", errno))
	}
	return abi, nil
}
