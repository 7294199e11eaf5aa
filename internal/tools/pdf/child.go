package pdf

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"talon/internal/config"
	"talon/internal/procfs"
	"talon/internal/sandbox/bwrap"
)

// The parser can spin forever on a hostile file (an object stream with a
// huge /N, a looping /Extends chain), recurse until the stack overflows,
// or allocate what a /Size asks: none of which a goroutine can be stopped
// from, and the last two end the whole process. So the tool extracts in a
// child process of the same binary, under rlimits, killed when the call
// ends: a hostile PDF costs one child, never the gateway.

// ChildArgs start the binary as the extraction child: `talon internal
// pdf-text`, a hidden command that calls ServeChild. A test binary that
// runs the pdf tool serves them from its TestMain (IsChild).
var ChildArgs = []string{"internal", "pdf-text"}

// childEnv marks a child's environment: a child never starts another, so a
// binary that does not serve ChildArgs (a test binary without the TestMain
// hook, which would run its tests) cannot recurse.
const childEnv = "TALON_PDF_CHILD"

// ChildLimits bound one child.
type ChildLimits struct {
	// CPU is RLIMIT_CPU, in whole seconds (at least 1): past it the
	// kernel kills the child.
	CPU time.Duration
	// Memory is the address space the child may add to what it has
	// mapped when it starts (RLIMIT_AS); the Go heap is held below it.
	Memory int64
	// Wall is how long the child may take in all, CPU or not.
	Wall time.Duration
}

// DefaultChildLimits: a 20-page document of text takes a few milliseconds
// of CPU, and a 50 MB one well under a second.
var DefaultChildLimits = ChildLimits{CPU: 5 * time.Second, Memory: 512 << 20, Wall: 20 * time.Second}

// Child is how extraction runs in a child process.
type Child struct {
	// Path and Args start the child: this binary and ChildArgs.
	Path string
	Args []string
	// Env is added to the child's otherwise empty environment.
	Env    []string
	Limits ChildLimits
}

// request is the child's stdin: this JSON on one line, then Size bytes of PDF.
type request struct {
	Pages  []int  `json:"pages,omitempty"`
	Limits Limits `json:"limits"`
	Size   int64  `json:"size"`
	CPU    uint64 `json:"cpuSeconds"`
	Memory int64  `json:"memoryBytes"`
}

// response is the child's stdout.
type response struct {
	Doc       *Document `json:"doc,omitempty"`
	Error     string    `json:"error,omitempty"`
	Encrypted bool      `json:"encrypted,omitempty"`
}

// readers bounds the extraction children running at once in the process:
// one per core, at least two.
var readers = make(chan struct{}, max(2, runtime.NumCPU()))

const (
	maxHeader = 64 << 10
	maxStderr = 4 << 10
)

// IsChild says whether args (os.Args[1:]) start the extraction child.
func IsChild(args []string) bool {
	return len(args) == len(ChildArgs) && args[0] == ChildArgs[0] && args[1] == ChildArgs[1]
}

// DefaultChild is this binary as the child, with the default limits.
func DefaultChild() (Child, error) {
	if os.Getenv(childEnv) != "" {
		return Child{}, errors.New("starting the PDF reader: this process is itself a PDF reader child")
	}
	exe, err := os.Executable()
	if err != nil {
		return Child{}, fmt.Errorf("starting the PDF reader: finding this binary: %w", err)
	}
	return Child{Path: exe, Args: ChildArgs, Limits: DefaultChildLimits}, nil
}

// Extract runs Extract in a child process. A child that exceeds its CPU,
// memory or time, or dies, is an error saying so; ctx ending kills it and
// returns ctx's error.
func (c Child) Extract(ctx context.Context, data []byte, pages []int, lim Limits) (Document, error) {
	// However many tenants ask at once, at most so many readers (each up
	// to its memory limit) run; the others wait their turn or their
	// call's end.
	select {
	case readers <- struct{}{}:
		defer func() { <-readers }()
	case <-ctx.Done():
		return Document{}, ctx.Err()
	}
	hdr, err := json.Marshal(request{Pages: pages, Limits: lim, Size: int64(len(data)),
		CPU: wholeSeconds(c.Limits.CPU), Memory: c.Limits.Memory})
	if err != nil {
		return Document{}, fmt.Errorf("starting the PDF reader: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, c.Limits.Wall)
	defer cancel()
	cmd := exec.CommandContext(wctx, c.Path, c.Args...)
	cmd.Env = append([]string{childEnv + "=1", "GOMAXPROCS=1"}, c.Env...)
	cmd.Stdin = io.MultiReader(bytes.NewReader(append(hdr, '\n')), bytes.NewReader(data))
	// Text is at most MaxChars bytes, which JSON escapes to at most six
	// times as many; page errors are short.
	out := &capped{max: 6*lim.MaxChars + 64<<10}
	errb := &capped{max: maxStderr}
	cmd.Stdout, cmd.Stderr = out, errb
	// Killed with the gateway, too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	switch {
	case ctx.Err() != nil:
		return Document{}, ctx.Err()
	case wctx.Err() != nil:
		return Document{}, fmt.Errorf("reading the PDF took longer than %s, so it was stopped (the file may be malformed to stall the parser)", c.Limits.Wall)
	case err != nil:
		return Document{}, childFailure(cmd.ProcessState, err, errb.buf.String(), c.Limits)
	case out.over:
		return Document{}, fmt.Errorf("the PDF reader wrote more than %d bytes", out.max)
	}
	var r response
	if err := json.Unmarshal(out.buf.Bytes(), &r); err != nil {
		return Document{}, fmt.Errorf("reading the PDF reader's answer: %w", err)
	}
	switch {
	case r.Encrypted:
		return Document{}, ErrEncrypted
	case r.Error != "":
		return Document{}, errors.New(r.Error)
	case r.Doc == nil:
		return Document{}, errors.New("the PDF reader answered nothing")
	}
	return *r.Doc, nil
}

// childFailure explains a child that did not exit 0.
func childFailure(ps *os.ProcessState, err error, stderr string, lim ChildLimits) error {
	if ps == nil {
		return fmt.Errorf("starting the PDF reader: %w", err)
	}
	ws, _ := ps.Sys().(syscall.WaitStatus)
	cpu := ps.UserTime() + ps.SystemTime()
	switch {
	case ws.Signaled() && (ws.Signal() == syscall.SIGXCPU || ws.Signal() == syscall.SIGKILL && cpu >= lim.CPU):
		return fmt.Errorf("reading the PDF used more than %s of CPU, so it was stopped (the file may be malformed to make the parser loop)", time.Duration(wholeSeconds(lim.CPU))*time.Second)
	case strings.Contains(stderr, "out of memory"):
		return fmt.Errorf("reading the PDF needed more than %d MiB of memory, so it was stopped", lim.Memory>>20)
	case strings.Contains(stderr, "stack exceeds") || strings.Contains(stderr, "stack overflow"):
		return errors.New("the PDF nests or refers to its objects too deeply to read (the parser's stack overflowed)")
	case ws.Signaled():
		return fmt.Errorf("the PDF reader was killed by %s", ws.Signal())
	}
	line, _, _ := strings.Cut(strings.TrimSpace(stderr), "\n")
	return fmt.Errorf("the PDF reader failed (%s): %s", ps, line)
}

func wholeSeconds(d time.Duration) uint64 { return uint64(max(1, (d+time.Second-1)/time.Second)) }

// capped keeps the first max bytes written and notes any more.
// (Not an embedded bytes.Buffer: os/exec would copy through its ReadFrom,
// past Write.)
type capped struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	n, room := len(p), c.max-c.buf.Len()
	if n > room {
		c.over = true
		p = p[:max(room, 0)]
	}
	c.buf.Write(p)
	return n, nil
}

// ServeChild is the child: it reads a request from stdin, puts itself
// under the request's limits and, on the thread that parses, a Landlock
// domain with no file access, extracts, and writes the response to
// stdout. It returns the exit status; a failure before extraction is
// written to stderr.
func ServeChild(stdin io.Reader, stdout, stderr io.Writer) int {
	// Never unlocked: the domain is this thread's, and the parse must
	// stay on it.
	runtime.LockOSThread()
	fail := func(err error) int {
		fmt.Fprintf(stderr, "pdf-text: %v\n", err)
		return 1
	}
	br := bufio.NewReaderSize(stdin, maxHeader)
	line, err := br.ReadSlice('\n')
	if err != nil {
		return fail(fmt.Errorf("reading the request: %w", err))
	}
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		return fail(fmt.Errorf("reading the request: %w", err))
	}
	if req.Size < 0 || req.Size > config.MaxPDFMaxMb<<20 || req.CPU == 0 || req.Memory <= 0 {
		return fail(fmt.Errorf("reading the request: size %d, CPU %ds, memory %d out of range", req.Size, req.CPU, req.Memory))
	}
	if err := confine(req.CPU, req.Memory); err != nil {
		return fail(err)
	}
	data := make([]byte, req.Size)
	if _, err := io.ReadFull(br, data); err != nil {
		return fail(fmt.Errorf("reading the PDF: %w", err))
	}
	var resp response
	doc, err := Extract(context.Background(), data, req.Pages, req.Limits)
	switch {
	case errors.Is(err, ErrEncrypted):
		resp.Encrypted = true
	case err != nil:
		resp.Error = err.Error()
	default:
		resp.Doc = &doc
	}
	if err := json.NewEncoder(stdout).Encode(resp); err != nil {
		return fail(fmt.Errorf("writing the answer: %w", err))
	}
	return 0
}

// confine sets the child's rlimits — CPU seconds, address space of memory
// more than it has now, no core and no file writes, few descriptors —
// and denies the calling thread every file.
func confine(cpu uint64, memory int64) error {
	vm, err := procfs.VirtualBytes(os.Getpid())
	if err != nil {
		return fmt.Errorf("limits: %w", err)
	}
	// The heap collects hard before the address space runs out; the stack
	// overflows (a fatal error the parent explains) long before either.
	debug.SetMemoryLimit(memory / 2)
	debug.SetMaxStack(64 << 20)
	limits := []struct {
		name     string
		resource int
		cur, max uint64
	}{
		{"core", syscall.RLIMIT_CORE, 0, 0},
		{"fsize", syscall.RLIMIT_FSIZE, 0, 0},
		{"nofile", syscall.RLIMIT_NOFILE, 32, 32},
		// SIGXCPU at cur, which Go ignores; SIGKILL at max.
		{"cpu", syscall.RLIMIT_CPU, cpu, cpu + 1},
		{"as", syscall.RLIMIT_AS, uint64(vm + memory), uint64(vm + memory)},
	}
	for _, l := range limits {
		if err := syscall.Setrlimit(l.resource, &syscall.Rlimit{Cur: l.cur, Max: l.max}); err != nil {
			return fmt.Errorf("limits: setting %s to %d: %w", l.name, l.cur, err)
		}
	}
	if _, err := bwrap.DenyThreadFiles(); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return nil
}
