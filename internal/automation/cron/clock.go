package cron

import "time"

// Clock is the scheduler's time: Now for every decision and NewTimer for
// every wait (the timer loop, run timeouts, the drain after a timeout),
// so a test can replace all of it.
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) Timer
}

// Timer fires once on C after its duration unless stopped.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
}

// System is the process clock (time.Now and time.NewTimer).
func System() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) NewTimer(d time.Duration) Timer { return sysTimer{time.NewTimer(d)} }

type sysTimer struct{ t *time.Timer }

func (t sysTimer) C() <-chan time.Time { return t.t.C }
func (t sysTimer) Stop() bool          { return t.t.Stop() }
