package approval

import (
	"context"
	"testing"
)

// TestServiceBusy: the Service is busy while background work it started
// runs, and idle once it has returned; a gateway keeps its tenant open
// for that long.
func TestServiceBusy(t *testing.T) {
	s, err := NewService(t.TempDir(), func(context.Context, string, string, string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Busy() {
		t.Fatal("a new service is busy")
	}
	release, done := make(chan struct{}), make(chan struct{})
	if err := s.Go(func(context.Context) { <-release; close(done) }); err != nil {
		t.Fatal(err)
	}
	if !s.Busy() {
		t.Error("not busy while an approved command runs")
	}
	close(release)
	<-done
	s.wg.Wait() // the counter goes down as the work returns
	if s.Busy() {
		t.Error("still busy after the command ended")
	}
}
