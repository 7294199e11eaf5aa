package bwrap

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// The helper applies Landlock to its own thread only, with go-landlock's
// system calls, and then execs the command from that thread: execve keeps
// the calling thread's credentials, Landlock domain included, and ends
// every other thread. go-landlock's Restrict would put the rules on every
// thread of the helper through libpsx, which signals each thread and
// waits for it, several milliseconds of a command's start on a busy
// machine, for threads that exec is about to end anyway.

// Access rights, by what they are for.
const (
	accessRead  = llsys.AccessFSExecute | llsys.AccessFSReadFile | llsys.AccessFSReadDir
	accessWrite = llsys.AccessFSWriteFile | llsys.AccessFSRemoveDir | llsys.AccessFSRemoveFile |
		llsys.AccessFSMakeChar | llsys.AccessFSMakeDir | llsys.AccessFSMakeReg | llsys.AccessFSMakeSock |
		llsys.AccessFSMakeFifo | llsys.AccessFSMakeBlock | llsys.AccessFSMakeSym | llsys.AccessFSTruncate
	// The rights a rule on a file (not a directory) may hold.
	accessFile = llsys.AccessFSExecute | llsys.AccessFSWriteFile | llsys.AccessFSReadFile | llsys.AccessFSTruncate
)

// minLandlockABI is the oldest ABI the helper uses: ABI 1 cannot allow
// moving a file from one directory to another (mv, git), so it would
// break commands rather than confine them.
const minLandlockABI = 2

// landlockABI is the kernel's Landlock ABI version, 0 without Landlock.
func landlockABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil || v < 1 {
		return 0
	}
	return v
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
		rules = append(rules, landlockRule{path: p, access: accessRead | accessWrite | llsys.AccessFSRefer})
	}
	for _, p := range c.roFiles {
		rules = append(rules, landlockRule{path: p, access: accessRead & accessFile})
	}
	for _, p := range c.rwFiles {
		rules = append(rules, landlockRule{path: p, access: (accessRead | accessWrite) & accessFile})
	}
	return append(rules,
		landlockRule{path: "/dev", access: accessRead | accessWrite | llsys.AccessFSIoctlDev},
		landlockRule{path: "/", access: llsys.AccessFSReadDir},
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
	attr := llsys.RulesetAttr{HandledAccessFS: handledAccess(abi)}
	if abi >= 6 {
		attr.Scoped = llsys.ScopeAbstractUnixSocket | llsys.ScopeSignal
	}
	ruleset, err := llsys.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return fmt.Errorf("creating the ruleset: %w", err)
	}
	defer unix.Close(ruleset)
	for _, r := range landlockRules(c) {
		if err := addRule(ruleset, r, attr.HandledAccessFS); err != nil {
			return err
		}
	}
	// bwrap has set no_new_privs, which Landlock requires of an
	// unprivileged thread.
	if err := llsys.LandlockRestrictSelf(ruleset, 0); err != nil {
		return fmt.Errorf("enforcing the ruleset: %w", err)
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
	attr := llsys.PathBeneathAttr{AllowedAccess: r.access & handled, ParentFd: fd}
	if err := llsys.LandlockAddPathBeneathRule(ruleset, &attr, 0); err != nil {
		return fmt.Errorf("allowing %s: %w", r.path, os.NewSyscallError("landlock_add_rule", err))
	}
	return nil
}
