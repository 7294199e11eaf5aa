package agent

import (
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// fileCache keeps the bootstrap files a runner's turns put into the
// system prompt. Every turn reads every bootstrap file of its workspace,
// and they rarely change: a stat that shows the file as it was read
// replaces its open, read and close.
//
// A file counts as unchanged while its device, inode, size, mtime and
// ctime are those it was read with. The times alone cannot tell two
// writes apart within one tick of the file system's clock (Linux stamps
// files from a clock that advances in jiffies; some file systems keep
// whole seconds, FAT's mtime two), so, as git does with its "racy"
// entries, an entry is kept only when the file's times were at least
// racyWindow older than the read: a write after the read then stamps the
// file with a later time, which the next stat sees.
type fileCache struct {
	// now is the clock the reads are timed with; tests set it.
	now func() time.Time

	mu    sync.Mutex
	m     map[fileKey]fileEntry
	reads int // files read from disk, for tests
}

// racyWindow is the age a file's times must have when it is read for the
// cache to keep it: above the coarsest timestamp granularity (FAT's 2 s).
const racyWindow = 3 * time.Second

// maxCachedFiles bounds the cache: sandboxes of scope "session" give every
// session a workspace of its own. Past the bound an arbitrary entry goes.
const maxCachedFiles = 512

type fileKey struct{ dir, name string }

type fileEntry struct {
	stamp fileStamp
	text  string // trimmed of surrounding space
}

// fileStamp is what a stat says about a file's identity and last change.
type fileStamp struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // Unix nanoseconds
}

func stampOf(fi os.FileInfo) (fileStamp, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.Mode().IsRegular() {
		return fileStamp{}, false
	}
	return fileStamp{
		dev: uint64(st.Dev), ino: st.Ino, size: st.Size,
		mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(),
	}, true
}

// read returns a workspace file's text trimmed of surrounding space, as
// root.ReadFile would give it, and its errors. A nil cache reads.
func (c *fileCache) read(root *os.Root, name string) (string, error) {
	if c == nil {
		return readTrimmed(root, name)
	}
	start := time.Now
	if c.now != nil {
		start = c.now
	}
	at := start()
	fi, err := root.Stat(name)
	if err != nil {
		return "", err
	}
	stamp, ok := stampOf(fi)
	if !ok {
		return readTrimmed(root, name) // not a regular file: its error, as before
	}
	key := fileKey{root.Name(), name}
	c.mu.Lock()
	e, hit := c.m[key]
	c.mu.Unlock()
	if hit && e.stamp == stamp {
		return e.text, nil
	}
	text, err := readTrimmed(root, name)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	if at.UnixNano()-max(stamp.mtime, stamp.ctime) < int64(racyWindow) {
		delete(c.m, key) // too recent to tell a same-tick rewrite apart
		return text, nil
	}
	if c.m == nil {
		c.m = map[fileKey]fileEntry{}
	}
	if _, ok := c.m[key]; !ok && len(c.m) >= maxCachedFiles {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[key] = fileEntry{stamp: stamp, text: text}
	return text, nil
}

func readTrimmed(root *os.Root, name string) (string, error) {
	data, err := root.ReadFile(name)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(data)), nil
}
