package cron

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"talon/internal/automation"
	"talon/internal/store"
)

// fakeClock is a clock moved by hand; armed is signalled on every timer
// made, which is how the loop says it went back to sleep.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	armed  chan struct{}
}

type fakeTimer struct {
	c       chan time.Time
	at      time.Time
	stopped bool
}

func newFakeClock(now time.Time) *fakeClock {
	return &fakeClock{now: now, armed: make(chan struct{}, 1)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	t := &fakeTimer{c: make(chan time.Time, 1), at: c.now.Add(d)}
	c.timers = append(c.timers, t)
	c.mu.Unlock()
	select {
	case c.armed <- struct{}{}:
	default:
	}
	return t
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }
func (t *fakeTimer) Stop() bool          { t.stopped = true; return true }

// advance moves the clock and fires the timers it passed.
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	keep := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.stopped:
		case !t.at.After(c.now):
			t.c <- c.now
		default:
			keep = append(keep, t)
		}
	}
	clear(c.timers[len(keep):])
	c.timers = keep
}

// BenchmarkSchedule holds 100,000 jobs of 1,000 tenants (issue 22's
// scale) and measures the scheduler's heap memory (heap-MB, goal < 50)
// and the CPU of one idle minute of the loop (ns/op; %core is that
// over the minute). The jobs' next runs are beyond the benchmark, so
// every op is an idle wake at the 60 s cap.
func BenchmarkSchedule(b *testing.B) {
	const tenants, perTenant = 1000, 100
	start := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := newFakeClock(start)
	far := 100 * 365 * 24 * time.Hour
	stores := make([]*memStore, tenants)
	for i := range stores {
		var jobs []automation.Job
		for k := range perTenant {
			j := everyJob(fmt.Sprintf("%08d-0000-4000-8000-%012d", i, k), start, far)
			j.State.NextRunAtMs = ptr(ms(start.Add(far + time.Duration(i*perTenant+k)*time.Second)))
			jobs = append(jobs, j)
		}
		stores[i] = newMemStore(jobs...)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s, err := New(Options{Clock: clock, Exec: newExecutor(nil)})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background())
	began := time.Now()
	for i, st := range stores {
		if err := s.AddTenant(context.Background(), fmt.Sprint("tenant-", i), st, TenantConfig{Enabled: true}); err != nil {
			b.Fatal(err)
		}
	}
	load := time.Since(began)
	runtime.GC()
	runtime.ReadMemStats(&after)
	heapMB := float64(after.HeapAlloc-before.HeapAlloc) / 1e6
	quiesce(clock)
	b.ResetTimer()
	for b.Loop() {
		clock.advance(time.Minute)
		<-clock.armed
	}
	b.StopTimer()
	perMinute := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(perMinute/float64(time.Minute.Nanoseconds())*100, "%core")
	b.ReportMetric(heapMB, "heap-MB") // after ResetTimer, which clears metrics
	b.ReportMetric(load.Seconds()*1000, "load-all-ms")
	if st, err := s.Status("tenant-0"); err != nil || st.Jobs != perTenant {
		b.Fatalf("status %+v, %v", st, err)
	}
}

// quiesce lets the loop take in the tenants' kicks before measuring (a
// pause in the set-up, not an assertion).
func quiesce(c *fakeClock) {
	for {
		select {
		case <-c.armed:
		case <-time.After(50 * time.Millisecond):
			return
		}
	}
}

// BenchmarkDueLateness is the "no job later than 1 s" on the
// real clock: of 100,000 jobs of 1,000 tenants, 1,000 (one per tenant)
// fall due within one second, run by an executor that returns at once
// and stored in memory, so it measures the scheduler alone (see
// dueLateness for what it reports). Each op waits about two real
// seconds.
func BenchmarkDueLateness(b *testing.B) {
	start := time.Now()
	stores := make([]Store, benchTenants)
	for i := range stores {
		stores[i] = newMemStore(benchJobs(i, start)...)
	}
	dueLateness(b, stores, time.Second)
}

// BenchmarkDueLatenessSQLite is BenchmarkDueLateness on the real store:
// each tenant's 100 jobs in its own SQLite database (internal/store), as
// the gateway keeps them, so every run's reads and its three writes
// (marked running, its outcome, its history row) are in the figures. It
// runs with the gateway's default commit (fsync within 100 ms, talon
// serve's --fsync-window) and with an fsync in every commit
// (--fsync-window 0). Besides dueLateness's figures it reports the Go
// heap the scheduler holds for the 100,000 jobs (heap-MB), the process's
// VmRSS with the 1,000 databases open (rss-MB), their size on disk
// (disk-MB) and how long the scheduler took to load them (load-all-ms).
// Setting up one sub-benchmark takes 15–30 s and 265 MB of disk.
func BenchmarkDueLatenessSQLite(b *testing.B) {
	for _, c := range []struct {
		name string
		sync time.Duration
		lead time.Duration // 1,000 slots stored with an fsync each take longer
	}{
		{"fsync-window=100ms", 100 * time.Millisecond, time.Second},
		{"fsync-window=0", 0, 5 * time.Second},
	} {
		b.Run(c.name, func(b *testing.B) {
			dir := b.TempDir()
			start := time.Now()
			stores := make([]Store, benchTenants)
			for i := range stores {
				db, err := store.OpenWith(filepath.Join(dir, fmt.Sprint(i), "talon.db"), store.Options{SyncWindow: c.sync})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { db.Close() })
				if _, err := db.ImportCron(b.Context(), automation.LegacyImport{Jobs: benchJobs(i, start)}); err != nil {
					b.Fatal(err)
				}
				// A first read opens a read connection, so the heap
				// growth below is the scheduler's, not the pool's.
				if jobs, err := db.CronJobs(b.Context()); err != nil || len(jobs) != benchPerTenant {
					b.Fatalf("tenant %d: %d jobs stored, %v", i, len(jobs), err)
				}
				stores[i] = db
			}
			disk, err := dirSize(dir)
			if err != nil {
				b.Fatal(err)
			}
			dueLateness(b, stores, c.lead)
			b.ReportMetric(disk/1e6, "disk-MB") // after ResetTimer, which clears metrics
		})
	}
}

// The scale: 100 jobs in each of 1,000 tenants.
const benchTenants, benchPerTenant = 1000, 100

// benchJobs are tenant i's jobs, each every century and next due then.
func benchJobs(i int, start time.Time) []automation.Job {
	far := 100 * 365 * 24 * time.Hour
	jobs := make([]automation.Job, 0, benchPerTenant)
	for k := range benchPerTenant {
		j := everyJob(benchJobID(i, k), start, far)
		j.ConfigRevision = 1
		jobs = append(jobs, j)
	}
	return jobs
}

func benchJobID(tenant, k int) string { return fmt.Sprintf("%08d-0000-4000-8000-%012d", tenant, k) }

// dueLateness loads stores (benchJobs each) into a scheduler and, each
// op, moves one job of every tenant to fall due within one second,
// starting lead from now (time enough to store the 1,000 new slots),
// and waits for the 1,000 runs. It reports the latest start after a
// job's slot (max-late-ms), the 99th percentile (p99-late-ms), the
// process's CPU time per run (cpu-µs/run: the scheduler's and the
// store's work for a run, and the arming's, over all goroutines), the Go
// heap the loaded scheduler holds (heap-MB), the process's VmRSS then
// (rss-MB) and the load's time (load-all-ms).
func dueLateness(b *testing.B, stores []Store, lead time.Duration) {
	var (
		mu   sync.Mutex
		late []time.Duration
		done sync.WaitGroup
	)
	ex := newExecutor(func(_ context.Context, _ string, j automation.Job) Outcome {
		d := time.Since(time.UnixMilli(*j.State.NextRunAtMs))
		mu.Lock()
		late = append(late, d)
		mu.Unlock()
		done.Done()
		return Outcome{Status: automation.StatusOK}
	})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s, err := New(Options{Exec: ex})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background())
	ctx := context.Background()
	began := time.Now()
	for i, st := range stores {
		if err := s.AddTenant(ctx, fmt.Sprint("tenant-", i), st, TenantConfig{Enabled: true}); err != nil {
			b.Fatal(err)
		}
	}
	load := time.Since(began)
	runtime.GC()
	runtime.ReadMemStats(&after)
	rss, err := rssMB()
	if err != nil {
		b.Fatal(err)
	}
	cpu0, err := cpuTime()
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		base := time.Now().Add(lead)
		done.Add(len(stores))
		for i, st := range stores {
			id := benchJobID(i, i%benchPerTenant)
			j, err := st.CronJob(ctx, id)
			if err != nil {
				b.Fatal(err)
			}
			j.State.NextRunAtMs = ptr(ms(base.Add(time.Duration(i) * time.Millisecond)))
			if err := st.SetCronState(ctx, id, j.State, nil); err != nil {
				b.Fatal(err)
			}
		}
		// Only now is the scheduler told: until then its heap holds
		// the old slots, so no run starts before its job is stored.
		for i := range stores {
			if err := s.JobChanged(ctx, fmt.Sprint("tenant-", i), benchJobID(i, i%benchPerTenant)); err != nil {
				b.Fatal(err)
			}
		}
		if now := time.Now(); now.After(base) {
			b.Fatalf("storing the 1,000 slots took until %s after the first was due: raise lead (%s)", now.Sub(base), lead)
		}
		done.Wait()
	}
	b.StopTimer()
	cpu1, err := cpuTime()
	if err != nil {
		b.Fatal(err)
	}
	slices.Sort(late)
	b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(len(late)), "cpu-µs/run")
	b.ReportMetric(float64(late[len(late)-1].Microseconds())/1000, "max-late-ms")
	b.ReportMetric(float64(late[len(late)*99/100].Microseconds())/1000, "p99-late-ms")
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/1e6, "heap-MB")
	b.ReportMetric(rss, "rss-MB")
	b.ReportMetric(load.Seconds()*1000, "load-all-ms")
}

// rssMB is this process's VmRSS in MB (10^6 bytes).
func rssMB() (float64, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb * 1024 / 1e6, err
		}
	}
	return 0, errors.New("reading VmRSS: not in /proc/self/status")
}

// cpuTime is the user and system CPU time this process has used.
func cpuTime() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// dirSize is the bytes of the files under dir.
func dirSize(dir string) (float64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		n += info.Size()
		return nil
	})
	return float64(n), err
}
