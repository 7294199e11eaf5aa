package sqlitedb

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"sync/atomic"
	"time"
)

// A walSyncer bounds how long a commit of a database opened with
// synchronous=NORMAL waits for the disk. NORMAL makes SQLite write each
// commit to the WAL file and return without an fsync: the commit survives
// the process being killed at once, and a power cut or a kernel crash
// only once the file reaches the disk. The syncer fsyncs the WAL file soon
// after a commit and at most once per window, so that at most a window's
// commits (plus the fsync itself) are exposed to a power cut, while
// commits no longer wait for the disk one by one.
//
// fsync on any descriptor of a file flushes that file, so the syncer opens
// the WAL file itself; SQLite keeps it (the same inode, rewritten from the
// start after a checkpoint) while the database is open.
type walSyncer struct {
	path   string
	window time.Duration
	kick   chan struct{} // a commit since the last sync; holds one
	stop   chan struct{}
	done   chan struct{}
	syncs  atomic.Int64 // fsyncs made, for tests
	log    *slog.Logger
}

func newWALSyncer(dbPath string, window time.Duration, log *slog.Logger) *walSyncer {
	if log == nil {
		log = slog.Default()
	}
	s := &walSyncer{
		path: dbPath + "-wal", window: window, log: log,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	go s.loop()
	return s
}

// committed notes a commit; it never blocks.
func (s *walSyncer) committed() {
	select {
	case s.kick <- struct{}{}:
	default: // a sync is already due
	}
}

// loop syncs after each kick, but not sooner than a window after the
// previous sync: a commit made at t is synced by t + window (plus the
// fsync), and the commits of a busy window share one fsync.
func (s *walSyncer) loop() {
	defer close(s.done)
	var last time.Time
	for {
		select {
		case <-s.kick:
		case <-s.stop:
			s.sync()
			return
		}
		if wait := time.Until(last.Add(s.window)); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-s.stop:
				t.Stop()
				s.sync()
				return
			}
		}
		last = time.Now()
		s.sync()
	}
}

func (s *walSyncer) sync() {
	f, err := os.Open(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return // checkpointed and removed: nothing left to sync
	}
	if err == nil {
		err = f.Sync()
		f.Close()
	}
	if err != nil {
		// Nobody waits for this fsync to answer; the log is where a disk
		// that stopped taking writes shows.
		s.log.Error("syncing the database's write-ahead log", "path", s.path, "err", err)
		return
	}
	s.syncs.Add(1)
}

// close makes a last sync and stops the syncer.
func (s *walSyncer) close() {
	close(s.stop)
	<-s.done
}
