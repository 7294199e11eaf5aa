// Package gatewaytoken keeps the default tenant's gateway token that
// `talon serve` makes at first start when no secret is configured, so that
// no fresh install is open to every local process: STATE/gateway.token,
// 64 hex characters, mode 0600, made once atomically. `talon gateway call`
// and `talon approvals` read it to reach the local gateway.
//
// A token file that is a symlink, not a regular file, or readable by
// anyone but its owner is refused rather than used or replaced: it may
// not be the secret Talon made, or others may have read it.
//
// Concurrency: stateless; two processes that Ensure at once get the same
// token (one makes it, the other reads it).
package gatewaytoken

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"talon/internal/atomicfile"
)

// File is the token file's name in the state dir.
const File = "gateway.token"

// Path is the token file of stateDir.
func Path(stateDir string) string { return filepath.Join(stateDir, File) }

// maxSize bounds what Load reads: a token an operator wrote by hand may
// be longer than the 64 characters Talon makes, but not this long.
const maxSize = 1024

// Load reads stateDir's token. A missing file is an error that is
// fs.ErrNotExist.
func Load(stateDir string) (string, error) {
	p := Path(stateDir)
	// O_NOFOLLOW: the file checked is the file read, not one a symlink
	// swapped in between.
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, syscall.ELOOP) {
		return "", fmt.Errorf("reading the gateway token: %s is a symlink; remove it and restart talon serve to make a new token", p)
	}
	if err != nil {
		return "", fmt.Errorf("reading the gateway token: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("reading the gateway token: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("reading the gateway token: %s is not a regular file", p)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("reading the gateway token: %s has mode %v, so others may have read it: make a new token (remove the file and restart talon serve), or chmod 600 it if nobody did", p, fi.Mode().Perm())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSize+1))
	if err != nil {
		return "", fmt.Errorf("reading the gateway token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if err := check(tok, len(b)); err != nil {
		return "", fmt.Errorf("reading the gateway token: %s %w", p, err)
	}
	return tok, nil
}

// check says what is wrong with a token read from n bytes.
func check(tok string, n int) error {
	switch {
	case n > maxSize:
		return fmt.Errorf("is larger than %d bytes", maxSize)
	case len(tok) < 16:
		return errors.New("holds fewer than 16 characters; remove it and restart talon serve to make a new token")
	case strings.ContainsFunc(tok, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return errors.New("holds spaces or control characters inside the token")
	}
	return nil
}

// Ensure returns stateDir's token, making it when there is none; created
// reports that it was made now, so the caller shows it once.
func Ensure(stateDir string) (tok string, created bool, err error) {
	tok, err = Load(stateDir)
	if !errors.Is(err, fs.ErrNotExist) {
		return tok, false, err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", false, fmt.Errorf("making the gateway token: %w", err)
	}
	tok = hex.EncodeToString(b)
	err = atomicfile.Create(Path(stateDir), []byte(tok+"\n"), 0o600)
	if errors.Is(err, fs.ErrExist) {
		// Another start made it first: use theirs.
		tok, err = Load(stateDir)
		return tok, false, err
	}
	if err != nil {
		return "", false, fmt.Errorf("saving the gateway token: %w", err)
	}
	return tok, true, nil
}
