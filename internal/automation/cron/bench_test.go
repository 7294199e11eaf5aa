package cron

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"talon/internal/automation"
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
// and stored in memory, so it measures the scheduler alone. It reports
// the latest start after a job's slot (max-late-ms) and the 99th
// percentile (p99-late-ms). Each op waits about two real seconds.
func BenchmarkDueLateness(b *testing.B) {
	const tenants, perTenant = 1000, 100
	start := time.Now()
	far := 100 * 365 * 24 * time.Hour
	stores := make([]*memStore, tenants)
	for i := range stores {
		var jobs []automation.Job
		for k := range perTenant {
			j := everyJob(fmt.Sprintf("%08d-0000-4000-8000-%012d", i, k), start, far)
			j.State.NextRunAtMs = ptr(ms(start.Add(far)))
			jobs = append(jobs, j)
		}
		stores[i] = newMemStore(jobs...)
	}
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
	s, err := New(Options{Exec: ex})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background())
	ctx := context.Background()
	for i, st := range stores {
		if err := s.AddTenant(ctx, fmt.Sprint("tenant-", i), st, TenantConfig{Enabled: true}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		base := time.Now().Add(time.Second)
		done.Add(tenants)
		for i, st := range stores {
			id := fmt.Sprintf("%08d-0000-4000-8000-%012d", i, i%perTenant)
			j := st.job(b, id)
			j.State.NextRunAtMs = ptr(ms(base.Add(time.Duration(i) * time.Millisecond)))
			st.SetCronState(ctx, id, j.State, nil)
			if err := s.JobChanged(ctx, fmt.Sprint("tenant-", i), id); err != nil {
				b.Fatal(err)
			}
		}
		done.Wait()
	}
	b.StopTimer()
	slices.Sort(late)
	b.ReportMetric(float64(late[len(late)-1].Microseconds())/1000, "max-late-ms")
	b.ReportMetric(float64(late[len(late)*99/100].Microseconds())/1000, "p99-late-ms")
}
