package sandbox

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"
	"time"
)

// Workdir is where a sandbox's workspace (Spec.Root) appears to the
// commands inside it, and their default working directory.
const Workdir = "/workspace"

// AgentMount is where workspaceAccess "ro" shows the agent's own workspace,
// read-only, to commands.
const AgentMount = "/agent"

// Spec is one sandbox as a backend starts it.
type Spec struct {
	// ID names the sandbox: the same for every session of one scope
	// (session, agent or shared), so a backend may keep one container per
	// scope. Letters, digits, '-', '_' and '.' only.
	ID string
	// Root is the host directory mounted read-write at Workdir.
	Root string
	// Mounts are further host paths the commands see.
	Mounts []Mount
	// Network grants the commands the host's network; without it they
	// have none, loopback included.
	Network bool
	Limits  Limits
	// Real says Root and every mount Source hold no symbolic link (a
	// confined Manager resolved them): a backend that can opens them
	// without following any, so a link planted since the check cannot
	// lead a mount elsewhere.
	Real bool
}

// Mount shows a host path inside the sandbox.
type Mount struct {
	Source   string // absolute host path
	Target   string // absolute path inside
	ReadOnly bool
}

// Limits bound what one command may use. Zero fields mean the
// DefaultLimits value; the backends enforce every field they document.
type Limits struct {
	Processes int           // processes of the sandbox user (RLIMIT_NPROC, pids limit)
	OpenFiles int           // open files per process (RLIMIT_NOFILE)
	FileSize  int64         // largest file a command may write, bytes (RLIMIT_FSIZE)
	CPUTime   time.Duration // CPU time per process (RLIMIT_CPU)
	Memory    int64         // address space (bwrap) or memory (docker), bytes
	Timeout   time.Duration // wall clock per command; then it is killed
}

// DefaultLimits are the limits of a sandbox whose config sets none.
func DefaultLimits() Limits {
	return Limits{
		Processes: 256,
		OpenFiles: 1024,
		FileSize:  256 << 20,
		CPUTime:   5 * time.Minute,
		Memory:    2 << 30,
		Timeout:   30 * time.Minute,
	}
}

// WithDefaults is l with its zero fields set from DefaultLimits.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	if l.Processes == 0 {
		l.Processes = d.Processes
	}
	if l.OpenFiles == 0 {
		l.OpenFiles = d.OpenFiles
	}
	if l.FileSize == 0 {
		l.FileSize = d.FileSize
	}
	if l.CPUTime == 0 {
		l.CPUTime = d.CPUTime
	}
	if l.Memory == 0 {
		l.Memory = d.Memory
	}
	if l.Timeout == 0 {
		l.Timeout = d.Timeout
	}
	return l
}

// Command is one command to run in a sandbox.
type Command struct {
	// Argv is the program and its arguments; a program without a slash is
	// looked up in the sandbox's PATH.
	Argv []string
	// Dir is the working directory inside the sandbox; "" means Workdir.
	Dir string
	// Env is added to the sandbox's own minimal environment (PATH, HOME,
	// LANG), as KEY=VALUE.
	Env []string
	// Stdin, Stdout and Stderr are the command's streams; nil means none
	// (/dev/null).
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Timeout overrides Spec.Limits.Timeout for this command when > 0.
	Timeout time.Duration
}

// Exit is how a command ended.
type Exit struct {
	Code     int    // exit code; -1 when killed by a signal
	Signal   string // the signal that killed it ("killed"), if any
	TimedOut bool   // killed for running past its timeout
}

// Backend runs sandboxes of one kind: bwrap, docker or host. A Backend is
// safe for concurrent use.
type Backend interface {
	// Name is the value of sandbox.backend that selects it.
	Name() string
	// Isolated is false only for host, which runs commands as Talon runs.
	Isolated() bool
	// Check reports whether the backend can run sandboxes here. Its error
	// says which backend, why not, and how to fix it.
	Check(ctx context.Context) error
	// Open starts, or joins when the backend keeps it, the sandbox spec
	// describes. The caller closes it.
	Open(ctx context.Context, spec Spec) (Sandbox, error)
}

// Sandbox is an open sandbox. It is safe for concurrent use: commands may
// run in it at the same time.
type Sandbox interface {
	// Start starts cmd. The command is killed when ctx is done or its
	// timeout passes; Wait reports that.
	Start(ctx context.Context, cmd Command) (Process, error)
	// Close kills what still runs and releases what Open took.
	Close() error
}

// Process is a started command.
type Process interface {
	// Wait waits for the command to end and its output to be written.
	Wait() (Exit, error)
	// Kill ends the command and everything it started.
	Kill() error
}

// Factory builds a backend from its settings as
// Talon's config gives them (nil when there are none).
type Factory func(settings map[string]any) (Backend, error)

var (
	mu        sync.Mutex
	factories = map[string]Factory{}
)

// Register makes a backend available under name. Backends register from
// their package's init; registering a name twice panics, as it is a
// programming error.
func Register(name string, f Factory) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := factories[name]; dup {
		panic("sandbox: backend " + name + " registered twice")
	}
	factories[name] = f
}

// Names lists the registered backends, sorted.
func Names() []string {
	mu.Lock()
	defer mu.Unlock()
	names := make([]string, 0, len(factories))
	for n := range factories {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// New builds the backend registered as name.
func New(name string, settings map[string]any) (Backend, error) {
	mu.Lock()
	f, ok := factories[name]
	mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("sandbox backend %q: unknown (known: %v)", name, Names())
	}
	b, err := f(settings)
	if err != nil {
		return nil, fmt.Errorf("sandbox backend %q: %w", name, err)
	}
	return b, nil
}

// validID reports whether id may name a sandbox.
func validID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	return !slices.ContainsFunc([]byte(id), func(c byte) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.')
	})
}

// Validate checks a spec before a backend uses it.
func (s Spec) Validate() error {
	if !validID(s.ID) {
		return fmt.Errorf("sandbox id %q: want 1-128 letters, digits, '-', '_' or '.'", s.ID)
	}
	if !isAbs(s.Root) {
		return fmt.Errorf("sandbox %s: root %q is not an absolute path", s.ID, s.Root)
	}
	for i, m := range s.Mounts {
		if !isAbs(m.Source) || !isAbs(m.Target) {
			return fmt.Errorf("sandbox %s: mount %d: source %q and target %q must be absolute paths", s.ID, i, m.Source, m.Target)
		}
		if m.Target == Workdir {
			return fmt.Errorf("sandbox %s: mount %d: %s is the workspace's own mount point", s.ID, i, Workdir)
		}
	}
	return nil
}

func isAbs(p string) bool { return len(p) > 0 && p[0] == '/' }
