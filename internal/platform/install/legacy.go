package install

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"talon/internal/atomicfile"
)

// Talon releases before per-file records replaced a whole workspace: they
// built the template's files in agents/.<slug>.new, journaled the
// top-level entries to carry over (version 0 journal), renamed each into
// the new directory, swapped live → agents/.<slug>.old and new → live,
// swept into the new workspace what appeared in the old one meanwhile,
// then deleted the old one. A process killed in the middle of that and
// restarted with this release finishes it here, the way that release
// would have, so nothing it was carrying is lost. Nothing new is written
// this way.

// legacyManaged is what those releases took to be the template's at the
// top level of a workspace, and so did not carry.
func legacyManaged(name string) bool {
	if slices.Contains([]string{"MEMORY.md", "memory", "canvas"}, name) {
		return false
	}
	return slices.Contains([]string{
		"AGENTS.md", "SOUL.md", "IDENTITY.md",
		"TOOLS.md", "BOOT.md", "BOOTSTRAP.md", "HEARTBEAT.md", "USER.md",
		"skills", "api-tools",
	}, name)
}

// legacyRollForward finishes a version 0 swap from its journal.
func legacyRollForward(p paths, carry []string) error {
	staged, err := exists(p.staging)
	if err != nil {
		return err
	}
	if staged {
		for _, n := range carry {
			if n == "" || strings.ContainsAny(n, `/\`) || n == "." || n == ".." {
				return fmt.Errorf("journal %s names an invalid entry %q", p.journal, n)
			}
			src, dst := filepath.Join(p.live, n), filepath.Join(p.staging, n)
			if ok, err := exists(src); err != nil || !ok {
				if err != nil {
					return err
				}
				continue // carried already
			}
			if ok, err := exists(dst); err != nil || ok {
				if err != nil {
					return err
				}
				return fmt.Errorf("carrying %s: %s exists in the new workspace too; resolve by hand", n, dst)
			}
			if err := os.Rename(src, dst); err != nil {
				return fmt.Errorf("carrying %s into the new workspace: %w", n, err)
			}
		}
		for _, d := range []string{p.live, p.staging} {
			if ok, _ := exists(d); ok {
				if err := atomicfile.SyncDir(d); err != nil {
					return err
				}
			}
		}
		if ok, err := exists(p.live); err != nil {
			return err
		} else if ok {
			if err := os.RemoveAll(p.old); err != nil {
				return err
			}
			if err := os.Rename(p.live, p.old); err != nil {
				return fmt.Errorf("moving the old workspace aside: %w", err)
			}
		}
		if err := os.Rename(p.staging, p.live); err != nil {
			return fmt.Errorf("moving the new workspace into place: %w", err)
		}
		if err := atomicfile.SyncDir(p.agents); err != nil {
			return err
		}
	}
	return legacyFinish(p)
}

// legacyFinish moves the old workspace's carried entries that the live
// one lacks into it, then deletes the old workspace and the journal.
func legacyFinish(p paths) error {
	names, err := topNames(p.old)
	if err != nil {
		return err
	}
	moved := false
	for _, n := range names {
		if legacyManaged(n) {
			continue
		}
		dst := filepath.Join(p.live, n)
		if ok, err := exists(dst); err != nil || ok {
			if err != nil {
				return err
			}
			continue
		}
		if err := os.Rename(filepath.Join(p.old, n), dst); err != nil {
			return fmt.Errorf("keeping %s: %w", n, err)
		}
		moved = true
	}
	if moved {
		if err := atomicfile.SyncDir(p.live); err != nil {
			return err
		}
	}
	if ok, err := exists(p.old); err != nil {
		return err
	} else if ok {
		if err := os.RemoveAll(p.trash); err != nil {
			return err
		}
		if err := os.Rename(p.old, p.trash); err != nil {
			return err
		}
		if err := atomicfile.SyncDir(p.agents); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(p.trash); err != nil {
		return fmt.Errorf("deleting %s: %w", p.trash, err)
	}
	if err := os.Remove(p.journal); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return atomicfile.SyncDir(p.tenant)
}

// topNames lists a directory's entries; a missing directory has none.
func topNames(dir string) ([]string, error) {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory (symlinks are refused)", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, nil
}
