package sandbox

import "testing"

// fakeProc is a process that runs until killed.
type fakeProc struct{ killed chan struct{} }

func (f *fakeProc) Kill() error {
	select {
	case <-f.killed:
	default:
		close(f.killed)
	}
	return nil
}

func (f *fakeProc) Wait() (Exit, error) {
	<-f.killed
	return Exit{Code: -1, Signal: "killed"}, nil
}

func TestProcs(t *testing.T) {
	var ps Procs
	a, b, gone := &fakeProc{make(chan struct{})}, &fakeProc{make(chan struct{})}, &fakeProc{make(chan struct{})}
	for _, p := range []*fakeProc{a, b, gone} {
		if !ps.Add(p) {
			t.Fatal("Add refused a process before Close")
		}
	}
	ps.Remove(gone)
	if ps.Closed() {
		t.Fatal("Closed before Close")
	}
	if !ps.Close() {
		t.Fatal("the first Close reported false")
	}
	for name, p := range map[string]*fakeProc{"a": a, "b": b} {
		select {
		case <-p.killed:
		default:
			t.Errorf("Close did not kill %s", name)
		}
	}
	select {
	case <-gone.killed:
		t.Error("Close killed a removed process")
	default:
	}
	if ps.Add(&fakeProc{make(chan struct{})}) || !ps.Closed() || ps.Close() {
		t.Fatal("after Close: Add must refuse, Closed be true, Close report false")
	}
}
