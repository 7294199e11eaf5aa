package approval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"talon/internal/atomicfile"
	"talon/internal/config"
)

// FileName is the approvals file's name inside the state directory.
const FileName = "exec-approvals.json"

// The errors Save returns when baseHash does not allow the write; their
// text is OpenClaw's, which clients match on (spec §1.2, §4.1).
var (
	ErrChanged          = errors.New("exec approvals changed since last load; re-run exec.approvals.get and retry")
	ErrBaseHashRequired = errors.New("exec approvals base hash required; re-run exec.approvals.get and retry")
)

// Snapshot is the approvals file as loaded: what exec.approvals.get returns.
type Snapshot struct {
	Path   string
	Exists bool
	// Hash is the lowercase hex SHA-256 of the bytes on disk (of nothing
	// when the file is missing): the baseHash a writer must send.
	Hash string
	// File is the normalised file; FailClosed() when Corrupt is set.
	File *File
	// Corrupt says why the file could not be used. The policy is then
	// deny-all until an operator repairs the file (Save with this Hash).
	Corrupt  error
	Warnings []string
}

// View is a snapshot as exec.approvals.get returns it ({path, exists, hash,
// file} with the socket token left out), plus what Talon found wrong: why
// a file that cannot be used is in force as deny-all, and what
// normalising it dropped. The gateway's method and `talon approvals get`
// print the same shape.
type View struct {
	Path     string   `json:"path"`
	Exists   bool     `json:"exists"`
	Hash     string   `json:"hash"`
	File     *File    `json:"file"`
	Corrupt  string   `json:"corrupt,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// View is the snapshot as exec.approvals.get shows it; extra warnings (from
// parsing what a caller submitted) come first.
func (s *Snapshot) View(extra ...string) View {
	v := View{Path: s.Path, Exists: s.Exists, Hash: s.Hash, File: s.File.Redacted(), Warnings: append(extra, s.Warnings...)}
	if s.Corrupt != nil {
		v.Corrupt = s.Corrupt.Error()
	}
	return v
}

// Store reads and writes one approvals file. Use one Store per path in a
// process; other processes are kept out by the flock.
type Store struct {
	path string
	mu   sync.Mutex
}

// NewStore returns the store for <stateDir>/exec-approvals.json.
func NewStore(stateDir string) (*Store, error) {
	if stateDir == "" {
		return nil, errors.New("opening exec approvals: no state directory given")
	}
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return nil, fmt.Errorf("opening exec approvals: resolving %s: %w", stateDir, err)
	}
	return &Store{path: filepath.Join(abs, FileName)}, nil
}

// Path is the approvals file's path.
func (s *Store) Path() string { return s.path }

// Load reads the file. It does not fail on a bad file: the snapshot then
// carries the fail-closed policy and Corrupt says why, so a caller can
// both keep running safely and show the operator what is wrong.
func (s *Store) Load() *Snapshot {
	raw, exists, err := s.read()
	snap := &Snapshot{Path: s.path, Exists: exists, Hash: config.Hash(raw)}
	if err == nil && exists {
		snap.File, snap.Warnings, err = Parse(raw)
	}
	switch {
	case err != nil:
		snap.File = FailClosed()
		snap.Corrupt = fmt.Errorf("exec approvals file %s is unusable, so exec is denied until it is fixed (security deny, ask off, askFallback deny): %w", s.path, err)
	case !exists:
		snap.File = Empty()
	}
	return snap
}

// read returns the file's bytes, refusing a symlink (O_NOFOLLOW) and a
// directory others can write to (they could swap the file underneath us).
// The directory itself may be a symlink: operators put state on other
// disks that way, and it is theirs, unlike the file Talon owns.
func (s *Store) read() (raw []byte, exists bool, err error) {
	if err := checkDir(filepath.Dir(s.path)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, false, nil
		}
		return nil, true, err
	}
	fh, err := os.OpenFile(s.path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if errors.Is(err, syscall.ELOOP) {
		return nil, true, errors.New("it is a symlink, which Talon refuses to follow; replace it with the real file")
	}
	if err != nil {
		return nil, true, fmt.Errorf("reading: %w", err)
	}
	defer fh.Close()
	raw, err = io.ReadAll(fh)
	if err != nil {
		return nil, true, fmt.Errorf("reading: %w", err)
	}
	return raw, true, nil
}

func checkDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("directory %s is writable by other users (mode %v); chmod 700 it", dir, fi.Mode().Perm())
	}
	return nil
}

// Save normalises f and writes it if baseHash is the hash of the file on
// disk (a missing file needs no baseHash, or the hash of nothing). It
// returns the fresh snapshot. The socket block is kept from the current
// file when f has none. ErrChanged and ErrBaseHashRequired are returned
// as they are, so their text reaches clients unchanged.
func (s *Store) Save(ctx context.Context, f *File, baseHash string) (*Snapshot, error) {
	if f == nil {
		return nil, errors.New("saving exec approvals: no file given")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()

	raw, exists, err := s.read()
	if err != nil {
		// Unreadable (a symlink, a bad directory): writing would not fix
		// it. A file that reads but does not parse can be replaced.
		return nil, fmt.Errorf("saving exec approvals %s: %w", s.path, err)
	}
	cur := config.Hash(raw)
	switch {
	case exists && baseHash == "":
		return nil, ErrBaseHashRequired
	case exists && baseHash != cur:
		return nil, ErrChanged
	case !exists && baseHash != "" && baseHash != cur:
		return nil, ErrChanged
	}
	next := f.Clone()
	warnings := next.normalize()
	if next.Socket == nil && exists {
		if old, _, err := Parse(raw); err == nil && old.Socket != nil {
			next.Socket = old.Socket
		}
	}
	data, err := next.Marshal()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("saving exec approvals %s: %w", s.path, err)
	}
	if err := atomicfile.Write(s.path, data, 0o600); err != nil {
		return nil, fmt.Errorf("saving exec approvals %s: %w", s.path, err)
	}
	return &Snapshot{Path: s.path, Exists: true, Hash: config.Hash(data), File: next, Warnings: warnings}, nil
}

// Update loads the file, applies change and saves it with the loaded hash,
// retrying when another writer got in between. It refuses to touch a
// corrupt file: an operator must look at it first.
func (s *Store) Update(ctx context.Context, change func(*File) error) (*Snapshot, error) {
	const attempts = 5
	for i := 0; ; i++ {
		snap := s.Load()
		if snap.Corrupt != nil {
			return nil, fmt.Errorf("updating exec approvals: %w", snap.Corrupt)
		}
		if err := change(snap.File); err != nil {
			return nil, fmt.Errorf("updating exec approvals: %w", err)
		}
		out, err := s.Save(ctx, snap.File, snap.Hash)
		if errors.Is(err, ErrChanged) && i+1 < attempts {
			continue
		}
		return out, err
	}
}

// lock takes an exclusive flock on <file>.lock, polling so that ctx can
// cancel the wait. flock locks belong to the open file description, so
// this also excludes another Store of the same path in this process.
func (s *Store) lock(ctx context.Context) (unlock func(), err error) {
	dir := filepath.Dir(s.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("saving exec approvals: creating %s: %w", dir, err)
	}
	if err := checkDir(dir); err != nil {
		return nil, fmt.Errorf("saving exec approvals: %w", err)
	}
	lf, err := os.OpenFile(s.path+".lock", os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("saving exec approvals: opening the lock file: %w", err)
	}
	for {
		err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { lf.Close() }, nil // closing releases the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			lf.Close()
			return nil, fmt.Errorf("saving exec approvals: locking: %w", err)
		}
		select {
		case <-ctx.Done():
			lf.Close()
			return nil, fmt.Errorf("saving exec approvals: waiting for the lock: %w", ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}
