package agent

import (
	"errors"
	"io/fs"
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
//
// Most workspaces lack most of the eight bootstrap files, and a stat that
// finds nothing costs as much as one that finds a file. A missing file is
// therefore remembered with the stamp of its directory: creating, renaming
// or removing a name in a directory changes the directory's mtime and
// ctime, so while the directory's stamp is unchanged the file is still
// missing, and one stat of the directory stands for the stats of all the
// missing files. The same racy rule applies to the directory's times.
type fileCache struct {
	// now is the clock the reads are timed with; tests set it.
	now func() time.Time

	mu    sync.Mutex
	m     map[fileKey]fileEntry
	reads int // files read from disk, for tests
	stats int // stats of files and directories, for tests
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
	// missing: there was no such file while its directory had the stamp
	// dir.
	missing bool
	dir     fileStamp
}

// dirStamp is a turn's stat of a workspace's directory, made at most once
// and only when a missing file needs it.
type dirStamp struct {
	done, ok bool
	stamp    fileStamp
}

func (c *fileCache) dirStamp(root *os.Root, d *dirStamp) (fileStamp, bool) {
	if !d.done {
		d.done = true
		c.mu.Lock()
		c.stats++
		c.mu.Unlock()
		if fi, err := root.Stat("."); err == nil && fi.IsDir() {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				d.stamp = fileStamp{dev: uint64(st.Dev), ino: st.Ino, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
				d.ok = true
			}
		}
	}
	return d.stamp, d.ok
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
// root.ReadFile would give it, and its errors. name is a file in the
// root's own directory, and dir the turn's stat of that directory. A nil
// cache reads.
func (c *fileCache) read(root *os.Root, name string, dir *dirStamp) (string, error) {
	if c == nil {
		return readTrimmed(root, name)
	}
	start := time.Now
	if c.now != nil {
		start = c.now
	}
	key := fileKey{root.Name(), name}
	c.mu.Lock()
	e, hit := c.m[key]
	c.mu.Unlock()
	if hit && e.missing {
		if ds, ok := c.dirStamp(root, dir); ok && ds == e.dir {
			return "", fs.ErrNotExist
		}
	}
	at := start()
	c.mu.Lock()
	c.stats++
	c.mu.Unlock()
	fi, err := root.Stat(name)
	if errors.Is(err, fs.ErrNotExist) {
		c.rememberMissing(root, key, at, dir)
	}
	if err != nil {
		return "", err
	}
	stamp, ok := stampOf(fi)
	if !ok {
		return readTrimmed(root, name) // not a regular file: its error, as before
	}
	if hit && !e.missing && e.stamp == stamp {
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
	c.put(key, fileEntry{stamp: stamp, text: text})
	return text, nil
}

// rememberMissing keeps that the file of key was missing at the time at,
// with this turn's stamp of its directory, if the directory's times are
// racyWindow older than at: a name created (or renamed) there after at
// stamps the directory with a later time, so an unchanged stamp means the
// file is still missing.
func (c *fileCache) rememberMissing(root *os.Root, key fileKey, at time.Time, dir *dirStamp) {
	ds, ok := c.dirStamp(root, dir)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !ok || at.UnixNano()-max(ds.mtime, ds.ctime) < int64(racyWindow) {
		delete(c.m, key)
		return
	}
	c.put(key, fileEntry{missing: true, dir: ds})
}

// put stores an entry; the caller holds mu.
func (c *fileCache) put(key fileKey, e fileEntry) {
	if c.m == nil {
		c.m = map[fileKey]fileEntry{}
	}
	if _, ok := c.m[key]; !ok && len(c.m) >= maxCachedFiles {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[key] = e
}

func readTrimmed(root *os.Root, name string) (string, error) {
	data, err := root.ReadFile(name)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(data)), nil
}
