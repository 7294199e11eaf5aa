package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"syscall"
)

// SeedFiles are the bootstrap files a new sandbox workspace gets from the
// agent workspace, as OpenClaw's ensureSandboxWorkspace copies them.
// MEMORY.md is left out on purpose, as upstream leaves it out: it holds the
// owner's long-term memory, which belongs to the main session, and the
// sessions a sandbox serves are the others (groups, other senders).
var SeedFiles = []string{"AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "USER.md", "BOOTSTRAP.md", "HEARTBEAT.md"}

// SkillsDir is the agent workspace's skills directory, copied along.
const SkillsDir = "skills"

// Bounds of one seeding, so that a huge or deep skills tree cannot stall a
// run or fill the disk.
const (
	maxSeedBytes = 64 << 20
	maxSeedFiles = 10000
	maxSeedDepth = 16
)

// Seed gives the sandbox workspace dst what it lacks of SeedFiles and of
// the skills directory of the agent workspace src. It never overwrites a
// file, never follows a symbolic link (links in src are skipped; dst is
// opened as an os.Root, so a link a sandboxed command planted there cannot
// lead a copy out), and copies only regular files and directories. A
// missing src seeds nothing. It returns the paths it created, relative to
// dst.
func Seed(src, dst string) ([]string, error) {
	from, err := os.OpenRoot(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("seeding sandbox workspace: opening agent workspace: %w", err)
	}
	defer from.Close()
	to, err := os.OpenRoot(dst)
	if err != nil {
		return nil, fmt.Errorf("seeding sandbox workspace: opening %s: %w", dst, err)
	}
	defer to.Close()
	s := &seeder{from: from, to: to}
	for _, name := range SeedFiles {
		if err := s.file(name); err != nil {
			return s.created, err
		}
	}
	if err := s.dir(SkillsDir, 0); err != nil {
		return s.created, err
	}
	return s.created, nil
}

type seeder struct {
	from, to *os.Root
	bytes    int64
	files    int
	created  []string
}

// file copies one regular file unless dst has something by that name.
func (s *seeder) file(name string) error {
	fi, err := s.from.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("seeding sandbox workspace: %s: %w", name, err)
	}
	if !fi.Mode().IsRegular() {
		return nil // a link, device or FIFO is not seed material
	}
	if s.files++; s.files > maxSeedFiles {
		return fmt.Errorf("seeding sandbox workspace: more than %d files in %s", maxSeedFiles, SkillsDir)
	}
	// O_NONBLOCK: should the name have become a FIFO since Lstat, opening
	// it must not wait for a writer.
	in, err := s.from.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("seeding sandbox workspace: opening %s: %w", name, err)
	}
	defer in.Close()
	if fi, err = in.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	if s.bytes += fi.Size(); s.bytes > maxSeedBytes {
		return fmt.Errorf("seeding sandbox workspace: the files to copy exceed %d MiB", maxSeedBytes>>20)
	}
	out, err := s.to.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil // never overwrite what the sandbox has
	}
	if err != nil {
		return fmt.Errorf("seeding sandbox workspace: creating %s: %w", name, err)
	}
	_, err = io.Copy(out, io.LimitReader(in, fi.Size()))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		s.to.Remove(name)
		return fmt.Errorf("seeding sandbox workspace: copying %s: %w", name, err)
	}
	s.created = append(s.created, name)
	return nil
}

// dir copies a directory tree, file by file, skipping links.
func (s *seeder) dir(name string, depth int) error {
	fi, err := s.from.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("seeding sandbox workspace: %s: %w", name, err)
	}
	if !fi.IsDir() {
		return nil
	}
	if depth >= maxSeedDepth {
		return fmt.Errorf("seeding sandbox workspace: %s is nested deeper than %d directories", name, maxSeedDepth)
	}
	switch err := s.to.Mkdir(name, 0o700); {
	case err == nil:
		s.created = append(s.created, name+"/")
	case errors.Is(err, fs.ErrExist):
		if fi, err := s.to.Lstat(name); err != nil || !fi.IsDir() {
			return nil // something else took the name in the sandbox: leave it
		}
	default:
		return fmt.Errorf("seeding sandbox workspace: creating %s: %w", name, err)
	}
	d, err := s.from.Open(name)
	if err != nil {
		return fmt.Errorf("seeding sandbox workspace: opening %s: %w", name, err)
	}
	entries, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return fmt.Errorf("seeding sandbox workspace: reading %s: %w", name, err)
	}
	for _, e := range entries {
		child := path.Join(name, e.Name())
		switch {
		case e.IsDir():
			err = s.dir(child, depth+1)
		case e.Type().IsRegular():
			err = s.file(child)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
