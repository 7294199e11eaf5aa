package warm

import (
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func TestIdle(t *testing.T) {
	es := []Entry[string]{
		{Key: "a", Used: at(0)},
		{Key: "b", Used: at(50)},
		{Key: "c", Used: at(-10)},
		{Key: "busy", Used: at(-100), Busy: true},
	}
	cases := []struct {
		name string
		now  time.Time
		idle time.Duration
		want []string
	}{
		{"none idle yet", at(30), time.Minute, nil},
		{"the oldest first", at(60), time.Minute, []string{"c", "a"}},
		{"exactly the timeout counts", at(110), time.Minute, []string{"c", "a", "b"}},
		{"0 never closes", at(1000), 0, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Idle(es, c.now, c.idle); !slices.Equal(got, c.want) {
				t.Errorf("Idle = %v, want %v", got, c.want)
			}
		})
	}
}

func TestLRU(t *testing.T) {
	cases := []struct {
		name string
		es   []Entry[int]
		want int
		ok   bool
	}{
		{"empty", nil, 0, false},
		{"all busy", []Entry[int]{{Key: 1, Busy: true}, {Key: 2, Busy: true}}, 0, false},
		{"the oldest", []Entry[int]{{Key: 1, Used: at(5)}, {Key: 2, Used: at(1)}, {Key: 3, Used: at(9)}}, 2, true},
		{"the oldest not busy", []Entry[int]{{Key: 1, Used: at(5)}, {Key: 2, Used: at(1), Busy: true}}, 1, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := LRU(c.es)
			if got != c.want || ok != c.ok {
				t.Errorf("LRU = %v, %v; want %v, %v", got, ok, c.want, c.ok)
			}
		})
	}
}

func TestFiles(t *testing.T) {
	cases := []struct {
		name    string
		f       Files
		reserve int
		max     int
	}{
		{"1024 files, 8 a tenant", Files{Limit: 1024, PerTenant: 8}, 256, 96},
		{"256 files keep the minimum reserve", Files{Limit: 256, PerTenant: 8}, 64, 24},
		{"a large limit", Files{Limit: 1 << 20, PerTenant: 8}, 1 << 18, 98304},
		{"a limit below the reserve still serves one", Files{Limit: 32, PerTenant: 8}, 64, 1},
		{"no per-tenant figure", Files{Limit: 1024}, 256, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.f.Reserve(); got != c.reserve {
				t.Errorf("Reserve = %d, want %d", got, c.reserve)
			}
			if got := c.f.Max(); got != c.max {
				t.Errorf("Max = %d, want %d", got, c.max)
			}
		})
	}
}

func TestRoom(t *testing.T) {
	f := Files{Limit: 256, PerTenant: 8} // 192 for tenants
	cases := []struct {
		open int
		want bool
	}{{0, true}, {184, true}, {185, false}, {300, false}}
	for _, c := range cases {
		if got := f.Room(c.open); got != c.want {
			t.Errorf("Room(%d) = %v, want %v", c.open, got, c.want)
		}
	}
}
