package platform

import (
	"errors"
	"testing"
)

func TestChoose(t *testing.T) {
	h := func(open, max, warm int) Health { return Health{OpenFiles: open, MaxOpenFiles: max, Warm: warm} }
	for _, c := range []struct {
		name  string
		cands []candidate
		want  string
		err   error
	}{
		{"fewest placed wins", []candidate{{ID: "a", Up: true, Placed: 3}, {ID: "b", Up: true, Placed: 1}, {ID: "c", Up: true, Placed: 2}}, "b", nil},
		{"a down node is never chosen", []candidate{{ID: "a", Up: false, Placed: 0}, {ID: "b", Up: true, Placed: 9}}, "b", nil},
		{"tie: smaller share of the file limit", []candidate{
			{ID: "a", Up: true, Placed: 2, Health: h(500, 1000, 0)},
			{ID: "b", Up: true, Placed: 2, Health: h(300, 1000, 9)},
		}, "b", nil},
		{"tie: share against each node's own limit", []candidate{
			{ID: "a", Up: true, Placed: 2, Health: h(600, 4096, 0)},
			{ID: "b", Up: true, Placed: 2, Health: h(300, 1024, 0)},
		}, "a", nil},
		{"tie: fewer warm", []candidate{
			{ID: "a", Up: true, Placed: 2, Health: h(100, 1000, 5)},
			{ID: "b", Up: true, Placed: 2, Health: h(100, 1000, 4)},
		}, "b", nil},
		{"unknown limit counts as empty", []candidate{
			{ID: "a", Up: true, Placed: 0, Health: h(100, 1000, 0)},
			{ID: "b", Up: true, Placed: 0},
		}, "b", nil},
		{"full tie: smaller id", []candidate{{ID: "n2", Up: true}, {ID: "n1", Up: true}}, "n1", nil},
		{"all down", []candidate{{ID: "a"}, {ID: "b"}}, "", ErrNoNode},
		{"no nodes", nil, "", ErrNoNode},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := choose(c.cands)
			if !errors.Is(err, c.err) || got != c.want {
				t.Errorf("choose = %q, %v; want %q, %v", got, err, c.want, c.err)
			}
		})
	}
}

// TestBusy: a move runs alone on its tenant; other tenants are free.
func TestBusy(t *testing.T) {
	var b busy
	op, err := b.enter("t1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.move("t1"); !errors.Is(err, ErrBusy) {
		t.Errorf("move during an operation: %v, want ErrBusy", err)
	}
	op()
	done, err := b.move("t1")
	if err != nil {
		t.Fatalf("move once the operation ended: %v", err)
	}
	for _, step := range []struct {
		name string
		err  error
	}{
		{"check", b.check("t1")},
		{"enter", func() error { _, err := b.enter("t1"); return err }()},
		{"second move", func() error { _, err := b.move("t1"); return err }()},
	} {
		if !errors.Is(step.err, ErrMoving) {
			t.Errorf("%s while moving: %v, want ErrMoving", step.name, step.err)
		}
	}
	if other, err := b.enter("t2"); err != nil {
		t.Errorf("another tenant while t1 moves: %v", err)
	} else {
		other()
	}
	done()
	if err := b.check("t1"); err != nil {
		t.Errorf("after the move: %v", err)
	}
	if len(b.m) != 0 {
		t.Errorf("entries left behind: %v", b.m)
	}
}
