package bwrap

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// execArg as its first argument makes this binary the helper: inside the
// sandbox, apply Landlock and the rlimits, then exec the command. It is no
// talon command, so no command line a user types reaches it by accident.
const execArg = "__talon-bwrap-exec"

// statusFD is the helper's end of the status pipe: it writes statusReady
// just before it execs the command, or statusFailed and a message when it
// cannot. Talon reads nothing at all when bwrap failed before the helper
// ran.
const (
	statusFD     = 3
	statusReady  = 'x'
	statusFailed = '!'
)

// helperExit is the helper's exit code when it fails before the command
// starts; Talon reports the message from the status pipe instead.
const helperExit = 125

func init() {
	// Run before main, so that the helper works in any binary linking this
	// package (the talon binary, test binaries) with no call from main.
	if len(os.Args) > 1 && os.Args[1] == execArg {
		os.Exit(runExec(os.Args[2:]))
	}
}

// helperConfig is what the helper applies before it execs the command.
type helperConfig struct {
	limits  []rlimit
	roDirs  []string
	rwDirs  []string
	roFiles []string
	rwFiles []string
	dir     string
	argv    []string
}

type rlimit struct {
	resource  int
	cur, max  uint64
	name, arg string
}

// The rlimit flags of the helper's command line, in the order they are set
// (RLIMIT_AS last: the helper itself must not need memory after it).
var rlimitFlags = []struct {
	flag     string
	resource int
}{
	{"-core", syscall.RLIMIT_CORE},
	{"-nofile", syscall.RLIMIT_NOFILE},
	{"-fsize", syscall.RLIMIT_FSIZE},
	{"-cpu", syscall.RLIMIT_CPU},
	{"-nproc", 0x6}, // RLIMIT_NPROC, absent from package syscall
	{"-as", syscall.RLIMIT_AS},
}

// helperArgs is the helper's command line for c (after the binary).
func helperArgs(c helperConfig) []string {
	args := []string{execArg}
	for _, l := range c.limits {
		args = append(args, l.arg, strconv.FormatUint(l.cur, 10))
	}
	for _, p := range c.roDirs {
		args = append(args, "-ro", p)
	}
	for _, p := range c.rwDirs {
		args = append(args, "-rw", p)
	}
	for _, p := range c.roFiles {
		args = append(args, "-rof", p)
	}
	for _, p := range c.rwFiles {
		args = append(args, "-rwf", p)
	}
	args = append(args, "-dir", c.dir, "--")
	return append(args, c.argv...)
}

// parseHelperArgs reads what helperArgs wrote.
func parseHelperArgs(args []string) (helperConfig, error) {
	var c helperConfig
	for len(args) > 0 {
		flag := args[0]
		if flag == "--" {
			c.argv = args[1:]
			if len(c.argv) == 0 {
				return c, errors.New("no command")
			}
			return c, nil
		}
		if len(args) < 2 {
			return c, fmt.Errorf("flag %s has no value", flag)
		}
		val := args[1]
		args = args[2:]
		switch flag {
		case "-ro":
			c.roDirs = append(c.roDirs, val)
		case "-rw":
			c.rwDirs = append(c.rwDirs, val)
		case "-rof":
			c.roFiles = append(c.roFiles, val)
		case "-rwf":
			c.rwFiles = append(c.rwFiles, val)
		case "-dir":
			c.dir = val
		default:
			i := indexFlag(flag)
			if i < 0 {
				return c, fmt.Errorf("unknown flag %q", flag)
			}
			n, err := strconv.ParseUint(val, 10, 64)
			if err != nil {
				return c, fmt.Errorf("flag %s: %w", flag, err)
			}
			c.limits = append(c.limits, rlimit{resource: rlimitFlags[i].resource, cur: n, max: n, name: flag[1:], arg: flag})
		}
	}
	return c, errors.New("no command (missing --)")
}

func indexFlag(flag string) int {
	for i, f := range rlimitFlags {
		if f.flag == flag {
			return i
		}
	}
	return -1
}

// runExec is the helper inside the sandbox. It returns only when it
// fails; on success the command replaces it.
func runExec(args []string) int {
	status := os.NewFile(statusFD, "status")
	fail := func(format string, a ...any) int {
		msg := fmt.Sprintf(format, a...)
		status.Write(append([]byte{statusFailed}, msg...))
		fmt.Fprintln(os.Stderr, "talon sandbox: "+msg)
		return helperExit
	}
	// The command inherits only stdin, stdout and stderr: not the status
	// pipe, and not whatever Talon's own parent left open without
	// close-on-exec (os/exec does not close such descriptors, nor does
	// bwrap). Marked, not closed: the Go runtime has descriptors of its own.
	if err := closeOnExecFrom(statusFD); err != nil {
		return fail("closing inherited descriptors: %v", err)
	}
	c, err := parseHelperArgs(args)
	if err != nil {
		return fail("helper arguments: %v", err)
	}
	if err := ownDevNull(); err != nil {
		return fail("%v", err)
	}
	if err := restrict(c); err != nil {
		return fail("landlock: %v", err)
	}
	if err := os.Chdir(c.dir); err != nil {
		return fail("working directory: %v", err)
	}
	// A name without a slash is looked up in the command's PATH; one with
	// a slash stays as it is, relative to dir.
	path, err := exec.LookPath(c.argv[0])
	if errors.Is(err, exec.ErrDot) {
		err = nil // PATH holds ".": the command's own environment asked for it
	}
	if err != nil {
		// A command that is not there, or not executable, is the
		// command's failure, not the sandbox's: exit as a shell does.
		status.Write([]byte{statusReady})
		switch {
		case errors.Is(err, exec.ErrNotFound):
			fmt.Fprintf(os.Stderr, "%s: command not found\n", c.argv[0])
			return 127
		case errors.Is(err, fs.ErrNotExist):
			fmt.Fprintf(os.Stderr, "%s: no such file or directory\n", c.argv[0])
			return 127
		}
		fmt.Fprintf(os.Stderr, "%s: %v\n", c.argv[0], errors.Unwrap(err))
		return 126
	}
	// bwrap set PWD to where it started the helper, not to dir. Built
	// before the limits: nothing is allocated after RLIMIT_AS.
	env := append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "PWD=") }), "PWD="+c.dir)
	for _, l := range c.limits {
		cur, max := l.cur, l.max
		if l.resource == syscall.RLIMIT_CPU {
			// SIGXCPU at the limit, SIGKILL a second later if caught.
			max = cur + 1
		}
		// A limit only lowers: under a gateway whose own hard limit is
		// lower (a dense host gives it 256 files), the inherited one is
		// stricter already, and raising it is not allowed.
		var had syscall.Rlimit
		if syscall.Getrlimit(l.resource, &had) == nil {
			cur, max = min(cur, had.Max), min(max, had.Max)
		}
		if err := syscall.Setrlimit(l.resource, &syscall.Rlimit{Cur: cur, Max: max}); err != nil {
			return fail("setting %s to %d: %v", l.name, cur, err)
		}
	}
	status.Write([]byte{statusReady})
	err = syscall.Exec(path, c.argv, env)
	// Past the limits, the helper reports like a shell and exits.
	fmt.Fprintf(os.Stderr, "%s: %v\n", c.argv[0], err)
	if errors.Is(err, syscall.ENOENT) {
		return 127
	}
	return 126
}

// ownDevNull replaces a standard stream that is the host's /dev/null (what
// os/exec gives for a nil stream) with the sandbox's: Landlock would
// refuse reopening the host's through /dev/stdin, which is outside every
// rule.
func ownDevNull() error {
	var null *os.File
	for fd := 0; fd <= 2; fd++ {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != unix.Mkdev(1, 3) {
			continue
		}
		if null == nil {
			f, err := os.OpenFile("/dev/null", os.O_RDWR, 0)
			if err != nil {
				return fmt.Errorf("opening /dev/null: %w", err)
			}
			defer f.Close()
			null = f
		}
		if err := unix.Dup3(int(null.Fd()), fd, 0); err != nil {
			return fmt.Errorf("replacing descriptor %d with /dev/null: %w", fd, err)
		}
	}
	return nil
}

// closeOnExecFrom marks every descriptor from fd up close-on-exec.
func closeOnExecFrom(fd int) error {
	err := unix.CloseRange(uint(fd), math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	// Kernels before 5.11: one by one.
	ents, derr := os.ReadDir("/proc/self/fd")
	if derr != nil {
		return fmt.Errorf("close_range: %v; listing /proc/self/fd: %w", err, derr)
	}
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil && n >= fd {
			syscall.CloseOnExec(n)
		}
	}
	return nil
}

// secondsUp is d in whole seconds, rounded up, at least 1.
func secondsUp(ns int64) uint64 {
	s := uint64(math.Ceil(float64(ns) / 1e9))
	if s < 1 {
		s = 1
	}
	return s
}
