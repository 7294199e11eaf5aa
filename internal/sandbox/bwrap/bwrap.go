package bwrap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"talon/internal/contain"
	"talon/internal/sandbox"
)

// Name is the value of sandbox.backend that selects this backend.
const Name = "bwrap"

// Inside the sandbox.
const (
	// helperPath is where Talon's binary is mounted for the helper.
	helperPath = "/run/talon/exec"
	// sandboxID is the uid and gid commands run as.
	sandboxID = "1000"
	// Path is the PATH of the commands' environment.
	Path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// installHint is how to get bwrap on Debian and its derivatives.
const installHint = `install it with "apt-get install bubblewrap"`

func init() {
	sandbox.Register(Name, func(settings map[string]any) (sandbox.Backend, error) {
		return New(settings)
	})
}

// Backend runs sandboxes under bubblewrap.
type Backend struct {
	mu sync.Mutex
	ok bool // a Check passed; a failed one is tried again next time
}

var (
	_ sandbox.Backend = (*Backend)(nil)
	_ sandbox.Sandbox = (*Sandbox)(nil)
	_ sandbox.Process = (*process)(nil)
)

// New builds the bwrap backend. It has no settings: any given is an error,
// so a misspelt key is not silently ignored.
func New(settings map[string]any) (*Backend, error) {
	for k := range settings {
		return nil, fmt.Errorf("bwrap backend: unknown setting %q (it takes none)", k)
	}
	return &Backend{}, nil
}

// Name is "bwrap".
func (*Backend) Name() string { return Name }

// Isolated is true.
func (*Backend) Isolated() bool { return true }

// Landlock reports the Landlock ABI version of the running kernel (0
// without Landlock), and whether commands get Landlock rules: from ABI 2
// on (ABI 1 cannot let a command move a file between directories). With
// ok false the namespaces are the only layer.
func (*Backend) Landlock() (abi int, ok bool) {
	abi = landlockABI()
	return abi, abi >= minLandlockABI
}

// Layers describes, one line each, the isolation a command gets here, for
// `talon sandbox explain`.
func (b *Backend) Layers() []string {
	lines := []string{
		"namespaces: user, mount, pid, ipc, uts, cgroup, network (host network only with sandbox network); uid 1000 inside, no capabilities, no nested user namespaces",
		"filesystem: read-only /usr and system dirs, a minimal /etc, the workspace read-write at /workspace, mounts as configured, a private /tmp",
	}
	if os.Geteuid() == 0 {
		lines = append(lines, "limits: rlimits for open files, file size, CPU time and address space; processes by a pids cgroup (Talon runs as root); the wall-clock timeout")
	} else {
		lines = append(lines, "limits: rlimits for processes, open files, file size, CPU time and address space; the wall-clock timeout")
	}
	lines = append(lines, memoryLayer())
	switch abi, ok := b.Landlock(); {
	case ok:
		scope := ""
		if abi >= 6 {
			scope = "; no signals or abstract unix sockets out of the sandbox"
		}
		lines = append(lines, fmt.Sprintf("landlock: ABI %d: reads only under the mounted paths, writes only under /workspace, /tmp, /dev and read-write mounts%s", abi, scope))
	case abi > 0:
		lines = append(lines, fmt.Sprintf("landlock: ABI %d is too old to use (it cannot let a command move files between directories); the namespaces are the only layer", abi))
	default:
		lines = append(lines, "landlock: not available in this kernel; the namespaces are the only layer")
	}
	return lines
}

// memoryLayer says how a command's memory is bounded: as a whole by a
// memory cgroup, or only process by process and /tmp's size.
func memoryLayer() string {
	const apart = "each process's address space and /tmp's size are bounded to the memory limit one by one, not their sum"
	if err := noMemoryCgroup(); err != nil {
		return fmt.Sprintf("memory: no memory cgroup (%v): %s", err, apart)
	}
	return "memory: a memory cgroup per command holds its processes' memory, /tmp's pages and its page cache to the memory limit together, with no swap; each process's address space and /tmp's size are bounded to it too"
}

// noMemoryCgroup says why commands get no memory cgroup here; nil when
// they do.
func noMemoryCgroup() error {
	if os.Geteuid() != 0 {
		return errors.New("Talon does not run as root")
	}
	h, err := readHierarchies()
	if err == nil {
		_, err = h.parent("memory")
	}
	return err
}

// Check runs `true` in a throwaway sandbox once, and reports why it cannot
// run when it fails: bwrap missing, user namespaces disabled, no pids
// cgroup for root, or bwrap's own complaint. Success is remembered.
func (b *Backend) Check(ctx context.Context) error {
	b.mu.Lock()
	ok := b.ok
	b.mu.Unlock()
	if ok {
		return nil
	}
	if err := b.probe(ctx); err != nil {
		return fmt.Errorf("sandbox backend bwrap: %w", err)
	}
	b.mu.Lock()
	b.ok = true
	b.mu.Unlock()
	return nil
}

func (b *Backend) probe(ctx context.Context) error {
	if _, err := lookBwrap(); err != nil {
		return err
	}
	root, err := os.MkdirTemp("", "talon-bwrap-check-")
	if err != nil {
		return fmt.Errorf("creating a directory to test in: %w", err)
	}
	defer os.RemoveAll(root)
	sb, err := b.open(sandbox.Spec{ID: "check", Root: root})
	if err != nil {
		return err
	}
	defer sb.Close()
	var out bytes.Buffer
	p, err := sb.Start(ctx, sandbox.Command{Argv: []string{"true"}, Stdout: &out, Stderr: &out, Timeout: time.Minute})
	if err != nil {
		return err
	}
	exit, err := p.Wait()
	if err == nil && exit.Code != 0 {
		err = fmt.Errorf("`true` exited %d: %s", exit.Code, bytes.TrimSpace(out.Bytes()))
	}
	if err != nil {
		if hint := usernsHint(); hint != "" {
			return fmt.Errorf("%s: %w", hint, err)
		}
		return fmt.Errorf("running `true` in a sandbox failed: %w", err)
	}
	return nil
}

// lookBwrap finds bwrap on PATH.
func lookBwrap() (string, error) {
	p, err := exec.LookPath("bwrap")
	if err != nil {
		return "", fmt.Errorf("bwrap not found on PATH: %s", installHint)
	}
	return p, nil
}

// usernsHint says why unprivileged user namespaces are off, when the
// kernel's settings say they are.
func usernsHint() string {
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	if os.Geteuid() != 0 && read("/proc/sys/kernel/unprivileged_userns_clone") == "0" {
		return `cannot create user namespaces (kernel.unprivileged_userns_clone=0): enable them with "sysctl -w kernel.unprivileged_userns_clone=1"`
	}
	if read("/proc/sys/user/max_user_namespaces") == "0" {
		return `cannot create user namespaces (user.max_user_namespaces=0): raise it with "sysctl -w user.max_user_namespaces=15000"`
	}
	if os.Geteuid() != 0 && read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1" {
		return `cannot create user namespaces (kernel.apparmor_restrict_unprivileged_userns=1): allow them for bwrap with an AppArmor profile, or set it to 0`
	}
	return ""
}

// Open checks spec and prepares a sandbox for it. Nothing runs until a
// command starts; each command gets its own namespaces.
func (b *Backend) Open(_ context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	sb, err := b.open(spec)
	if err != nil {
		return nil, fmt.Errorf("opening bwrap sandbox %s: %w", spec.ID, err)
	}
	return sb, nil
}

func (b *Backend) open(spec sandbox.Spec) (*Sandbox, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	bwrap, err := lookBwrap()
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding Talon's binary for the sandbox helper: %w", err)
	}
	if fi, err := os.Stat(spec.Root); err != nil {
		return nil, fmt.Errorf("root: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("root %s is not a directory", spec.Root)
	}
	s := &Sandbox{spec: spec, limits: spec.Limits.WithDefaults(), bwrap: bwrap, exe: exe}
	if os.Geteuid() == 0 {
		if s.cgroups, err = findCgroupParents(); err != nil {
			return nil, fmt.Errorf("Talon runs as root, to whom the kernel does not apply the process limit (RLIMIT_NPROC), "+
				"and it cannot create a pids cgroup to hold it instead (%w): run Talon as an unprivileged user, "+
				"or give it a cgroup hierarchy with the pids controller", err)
		}
	}
	if spec.Real {
		if s.binds, err = openBinds(spec); err != nil {
			return nil, err
		}
	}
	if s.etc, err = writeEtc(etcNames(spec)); err != nil {
		closeAll(s.binds)
		return nil, err
	}
	if err := s.layout(); err != nil {
		closeAll(s.binds)
		os.RemoveAll(s.etc)
		return nil, err
	}
	return s, nil
}

// bindFD is the descriptor of a command where the first of Sandbox.binds
// is: after the status, info and block pipes.
const bindFD = 6

// openBinds opens the root and every mount source of a spec whose paths
// are Real, refusing any symbolic link on the way (openat2 with
// RESOLVE_NO_SYMLINKS): bwrap then mounts what was opened, so a link
// planted after the paths were checked cannot lead a mount elsewhere.
func openBinds(spec sandbox.Spec) ([]*os.File, error) {
	paths := []string{spec.Root}
	for _, m := range spec.Mounts {
		paths = append(paths, m.Source)
	}
	var out []*os.File
	for _, p := range paths {
		fd, err := unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS})
		if err != nil {
			closeAll(out)
			return nil, fmt.Errorf("opening %s without following links: %w (a link in the path since it was checked?)", p, err)
		}
		out = append(out, os.NewFile(uintptr(fd), p))
	}
	return out, nil
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// reserved are the paths the sandbox provides itself; a mount may not
// replace them or go inside them.
var reserved = []string{"/usr", "/etc", "/proc", "/dev", "/sys", "/run/talon", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// systemDirs are the host's top-level directories of programs and
// libraries: symlinks into /usr on a merged-/usr system, directories
// otherwise.
var systemDirs = []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// hostEtc are the files of the host's /etc that commands see: the dynamic
// linker's cache, Debian's alternatives (many commands are symlinks
// through them), certificates, the time zone, the protocol and service
// names and the OS's name. Not /etc/ssl/private: when Talon runs as root,
// the sandbox's user could read it.
var hostEtc = []string{"ld.so.cache", "alternatives", "ssl/certs", "localtime", "protocols", "services", "os-release"}

// netEtc are the resolver's files, seen only with the host's network.
var netEtc = []string{"resolv.conf", "host.conf", "gai.conf"}

// Talon's own /etc files: no host accounts, no host names.
var etcFiles = map[string]string{
	"passwd": "root:x:0:0:root:/root:/usr/sbin/nologin\n" +
		"sandbox:x:1000:1000:sandbox:/workspace:/bin/sh\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
	"group":         "root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n",
	"hosts":         "127.0.0.1\tlocalhost\n127.0.1.1\tsandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n",
	"nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\nprotocols: files\nservices: files\n",
}

// writeEtc makes the sandbox's /etc in a new directory: Talon's own files,
// and an empty file or directory for each of the host's files (names) that
// exist, for those to be mounted on. One mount of the directory and one
// per host file, instead of one per file.
func writeEtc(names []string) (string, error) {
	dir, err := os.MkdirTemp("", "talon-bwrap-etc-")
	if err != nil {
		return "", fmt.Errorf("creating the sandbox's /etc: %w", err)
	}
	fail := func(err error) (string, error) {
		os.RemoveAll(dir)
		return "", fmt.Errorf("creating the sandbox's /etc: %w", err)
	}
	// MkdirTemp made it 0700; commands list it.
	if err := os.Chmod(dir, 0o755); err != nil {
		return fail(err)
	}
	for name, text := range etcFiles {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return fail(err)
		}
	}
	for _, n := range names {
		fi, err := os.Stat(filepath.Join("/etc", n))
		if err != nil {
			continue // absent on this host: not shown
		}
		at := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
			return fail(err)
		}
		if fi.IsDir() {
			err = os.Mkdir(at, 0o755)
		} else {
			err = os.WriteFile(at, nil, 0o644)
		}
		if err != nil {
			return fail(err)
		}
	}
	return dir, nil
}

// etcNames are the host's /etc files a sandbox of spec shows.
func etcNames(spec sandbox.Spec) []string {
	if spec.Network {
		return append(hostEtc[:len(hostEtc):len(hostEtc)], netEtc...)
	}
	return hostEtc
}

// bind is bwrap's arguments to mount source at target: by the descriptor
// opened for it (binds[i]) when the spec's paths are Real, else by path.
func (s *Sandbox) bind(i int, readOnly bool, source, target string) []string {
	opt := "--bind"
	if readOnly {
		opt = "--ro-bind"
	}
	if s.binds != nil {
		return []string{opt + "-fd", strconv.Itoa(bindFD + i), target}
	}
	return []string{opt, source, target}
}

// layout computes the bwrap arguments and the helper's Landlock rules and
// limits that every command of the sandbox shares.
func (s *Sandbox) layout() error {
	a := []string{
		"--unshare-all", "--unshare-user", "--disable-userns",
		"--die-with-parent", "--new-session", "--hostname", "sandbox",
		"--uid", sandboxID, "--gid", sandboxID, "--cap-drop", "ALL",
		"--ro-bind", "/usr", "/usr",
	}
	if s.spec.Network {
		a = append(a, "--share-net")
	}
	h := &s.helper
	h.roDirs = []string{"/usr", "/etc", "/proc"}
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if t, err := os.Readlink(d); err == nil {
				a = append(a, "--symlink", t, d)
			}
		case fi.IsDir():
			a = append(a, "--ro-bind", d, d)
			h.roDirs = append(h.roDirs, d)
		}
	}
	a = append(a, "--ro-bind", s.etc, "/etc")
	for _, n := range etcNames(s.spec) {
		// -try: one that has gone since Open leaves its empty stand-in.
		if _, err := os.Lstat(filepath.Join(s.etc, n)); err == nil {
			a = append(a, "--ro-bind-try", "/etc/"+n, "/etc/"+n)
		}
	}
	a = append(a,
		"--proc", "/proc",
		// When Talon runs as root the sandbox's user is root outside, and
		// the kernel lets root write sysctls whatever its namespace; the
		// host's /proc/sys (the same tree) goes over it read-only.
		"--ro-bind", "/proc/sys", "/proc/sys",
		"--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger",
		"--dev", "/dev",
		"--size", strconv.FormatInt(s.limits.Memory, 10), "--tmpfs", "/tmp",
	)
	a = append(a, s.bind(0, false, s.spec.Root, sandbox.Workdir)...)
	h.rwDirs = []string{sandbox.Workdir, "/tmp"}
	for i, m := range s.spec.Mounts {
		target := path.Clean(m.Target)
		if strings.IndexByte(m.Source, 0) >= 0 || strings.IndexByte(target, 0) >= 0 {
			return fmt.Errorf("mount %d: a path contains a NUL byte", i)
		}
		if target == "/" || target == "/tmp" {
			return fmt.Errorf("mount %d: target %s would hide the sandbox's own %s", i, target, target)
		}
		for _, r := range reserved {
			if _, in := contain.Within(r, target); in {
				return fmt.Errorf("mount %d: target %s is inside %s, which the sandbox provides itself", i, target, r)
			}
		}
		fi, err := os.Stat(m.Source)
		if err != nil {
			return fmt.Errorf("mount %d: source: %w", i, err)
		}
		a = append(a, s.bind(i+1, m.ReadOnly, m.Source, target)...)
		switch {
		case fi.IsDir() && m.ReadOnly:
			h.roDirs = append(h.roDirs, target)
		case fi.IsDir():
			h.rwDirs = append(h.rwDirs, target)
		case m.ReadOnly:
			h.roFiles = append(h.roFiles, target)
		default:
			h.rwFiles = append(h.rwFiles, target)
		}
	}
	s.args = append(a, "--ro-bind", s.exe, helperPath, "--remount-ro", "/", "--", helperPath)
	l := s.limits
	h.limits = []rlimit{
		{arg: "-core", cur: 0},
		{arg: "-nofile", cur: uint64(l.OpenFiles)},
		{arg: "-fsize", cur: uint64(l.FileSize)},
		{arg: "-cpu", cur: secondsUp(int64(l.CPUTime))},
		{arg: "-nproc", cur: uint64(l.Processes)},
		{arg: "-as", cur: uint64(l.Memory)},
	}
	return nil
}
