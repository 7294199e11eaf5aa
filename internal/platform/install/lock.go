package install

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockFile is the tenant's install lock, held with flock for the length
// of every operation. The kernel drops it when the holder dies, so a
// killed installer never leaves the tenant locked.
const lockFile = ".install.lock"

// lockTenant takes the tenant's exclusive lock, waiting for it.
func lockTenant(t Tenant) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(t.Dir, lockFile), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the install lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("taking the install lock: %w", err)
	}
	return func() { f.Close() }, nil // closing the descriptor releases the lock
}

// openLocked opens an existing tenant and takes its lock.
func openLocked(stateDir, id string) (Tenant, func(), error) {
	t, err := openTenant(stateDir, id)
	if err != nil {
		return Tenant{}, nil, err
	}
	unlock, err := lockTenant(t)
	if err != nil {
		return Tenant{}, nil, fmt.Errorf("tenant %q: %w", id, err)
	}
	return t, unlock, nil
}
