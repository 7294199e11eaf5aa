package bench

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Scale is how much of each measurement one gateway gets.
type Scale struct {
	ColdStarts int `json:"cold_starts"` // fresh starts, each with a new state dir
	WarmPairs  int `json:"warm_pairs"`  // unmeasured pairs before the turn pairs
	Pairs      int `json:"pairs"`       // measured pairs, non-streamed and again streamed
	ToolPairs  int `json:"tool_pairs"`  // measured pairs of a plain turn and a tool-call turn
	// Concurrency lists the numbers of simultaneous streaming turns, each
	// run Rounds times.
	Concurrency []int `json:"concurrency"`
	Rounds      int   `json:"rounds"`
}

// Plan is what a run measures and how much.
type Plan struct {
	Talon Scale `json:"talon"`
	// OpenClaw is used with a comparison; it is smaller because an
	// OpenClaw turn takes ≈250 ms and a start ≈18 s. Its concurrency
	// levels must be among talon's.
	OpenClaw     Scale `json:"openclaw"`
	IdleMS       int   `json:"idle_ms"`       // after ready, before the idle RSS
	StreamMS     int   `json:"stream_ms"`     // how long the fake streams in the concurrency runs
	StreamChunks int   `json:"stream_chunks"` // over how many content chunks
	// Tenants is the many-tenants row (talon only).
	Tenants Tenants `json:"tenants"`
	// Only, when set, names the measurements to run (e.g. "tenants" for
	// `talon bench --tenants N`); the others yield no figures.
	Only []string `json:"only,omitempty"`
}

// Tenants is how the many-tenants row loads one gateway: N tenants, each
// given one turn by Clients clients at a time, Sample of them a second
// (warm) turn and, once idle, a cold one.
type Tenants struct {
	N       int `json:"n"`
	Clients int `json:"clients"`
	Sample  int `json:"sample"`
	// IdleMS is the gateway's --tenant-idle: how long a tenant stays warm
	// after its last turn.
	IdleMS int `json:"idle_ms"`
	// OpenFiles is the gateway's RLIMIT_NOFILE, hard and soft.
	OpenFiles int `json:"open_files"`
}

// tenantOpenFiles is the descriptor limit the issue sets for 10,000
// tenants on one machine.
const tenantOpenFiles = 1024

// QuickTenants is the many-tenants row of `--quick` (what CI runs): more
// tenants than a gateway that keeps every tenant's files open can serve
// with 1,024 descriptors (≈ 8 each), so it fails unless tenants are
// closed and reopened.
func QuickTenants() Tenants {
	return Tenants{N: 300, Clients: 4, Sample: 50, IdleMS: 5000, OpenFiles: tenantOpenFiles}
}

// FullTenants is the many-tenants row of the full run: the same tenants
// as --quick, so that one budget file holds both runs, with a larger
// sample; `talon bench --tenants 10000` is the goal.
func FullTenants() Tenants {
	return Tenants{N: 300, Clients: 4, Sample: 200, IdleMS: 10000, OpenFiles: tenantOpenFiles}
}

// QuickPlan is `talon bench --quick`: every figure of the full run from
// fewer samples, under a minute on 2 cores for talon alone.
func QuickPlan() Plan {
	return Plan{
		Talon:    Scale{ColdStarts: 3, WarmPairs: 30, Pairs: 300, ToolPairs: 100, Concurrency: []int{100, 1000}, Rounds: 1},
		OpenClaw: Scale{ColdStarts: 1, WarmPairs: 10, Pairs: 20, ToolPairs: 5, Concurrency: []int{100}, Rounds: 1},
		IdleMS:   1000, StreamMS: 2000, StreamChunks: 20, Tenants: QuickTenants(),
	}
}

// FullPlan is `talon bench`: enough samples for a stable p99.
func FullPlan() Plan {
	return Plan{
		Talon:    Scale{ColdStarts: 10, WarmPairs: 200, Pairs: 3000, ToolPairs: 1000, Concurrency: []int{100, 1000}, Rounds: 3},
		OpenClaw: Scale{ColdStarts: 3, WarmPairs: 20, Pairs: 100, ToolPairs: 30, Concurrency: []int{100, 1000}, Rounds: 1},
		IdleMS:   1000, StreamMS: 2000, StreamChunks: 20, Tenants: FullTenants(),
	}
}

// maxConcurrency is the largest level a plan may ask for: each turn holds
// two connections in the harness and two in the gateway.
const maxConcurrency = 5000

// Validate checks the plan; compare says whether OpenClaw's scale is used.
func (p Plan) Validate(compare bool) error {
	if err := p.Talon.validate("talon"); err != nil {
		return err
	}
	if compare {
		if err := p.OpenClaw.validate("openclaw"); err != nil {
			return err
		}
		for _, n := range p.OpenClaw.Concurrency {
			if !slices.Contains(p.Talon.Concurrency, n) {
				return fmt.Errorf("plan: openclaw concurrency %d is not among talon's %v", n, p.Talon.Concurrency)
			}
		}
	}
	switch {
	case p.IdleMS < 0:
		return fmt.Errorf("plan: idle_ms %d: want 0 or more", p.IdleMS)
	case p.StreamMS < 0:
		return fmt.Errorf("plan: stream_ms %d: want 0 or more", p.StreamMS)
	case p.StreamChunks < 1:
		return fmt.Errorf("plan: stream_chunks %d: want 1 or more", p.StreamChunks)
	}
	for _, name := range p.Only {
		if !slices.ContainsFunc(measurements, func(m measurement) bool { return m.name == name }) {
			return fmt.Errorf("plan: only %q: no such measurement (want one of %s)", name, strings.Join(measurementNames(), ", "))
		}
	}
	return p.Tenants.validate()
}

// Limits of the many-tenants row: the harness writes every tenant
// directory, and a tenant's idle timeout below 100 ms would close it
// between two turns of one client.
const (
	maxTenants       = 100_000
	maxTenantClients = 64
	minTenantIdleMS  = 100
	minTenantFiles   = 64
)

func (t Tenants) validate() error {
	switch {
	case t.N < 1 || t.N > maxTenants:
		return fmt.Errorf("plan: tenants n %d: want 1 to %d", t.N, maxTenants)
	case t.Clients < 1 || t.Clients > maxTenantClients:
		return fmt.Errorf("plan: tenants clients %d: want 1 to %d", t.Clients, maxTenantClients)
	case t.Sample < 1:
		return fmt.Errorf("plan: tenants sample %d: want 1 or more", t.Sample)
	case t.IdleMS < minTenantIdleMS:
		return fmt.Errorf("plan: tenants idle_ms %d: want %d or more", t.IdleMS, minTenantIdleMS)
	case t.OpenFiles < minTenantFiles:
		return fmt.Errorf("plan: tenants open_files %d: want %d or more", t.OpenFiles, minTenantFiles)
	}
	return nil
}

// runs says whether the plan runs measurement name.
func (p Plan) runs(name string) bool {
	return len(p.Only) == 0 || slices.Contains(p.Only, name)
}

func (s Scale) validate(who string) error {
	for _, c := range []struct {
		name string
		v    int
		min  int
	}{{"cold_starts", s.ColdStarts, 1}, {"warm_pairs", s.WarmPairs, 0}, {"pairs", s.Pairs, 1}, {"tool_pairs", s.ToolPairs, 1}, {"rounds", s.Rounds, 1}} {
		if c.v < c.min {
			return fmt.Errorf("plan: %s %s %d: want %d or more", who, c.name, c.v, c.min)
		}
	}
	if len(s.Concurrency) == 0 {
		return fmt.Errorf("plan: %s concurrency: want at least one level", who)
	}
	for i, n := range s.Concurrency {
		if n < 1 || n > maxConcurrency {
			return fmt.Errorf("plan: %s concurrency %d: want 1 to %d", who, n, maxConcurrency)
		}
		if i > 0 && n <= s.Concurrency[i-1] {
			return errors.New("plan: " + who + " concurrency levels must increase")
		}
	}
	return nil
}

// Estimate says roughly how long a plan takes on a 2-core machine, from
// the per-step costs measured there: for talon a start ≈ 15 ms, a turn
// pair ≈ 3 ms, a tool pair ≈ 6 ms, a turn of a concurrency round ≈ 10 ms
// beyond the stream, a tenant's first turn ≈ 15 ms of wall time (4 at a
// time: 10,000 took 141 s); for OpenClaw (under load) a start ≈ 30 s, a turn ≈ 0.5 s, a tool
// turn ≈ 2.5 s and, as it runs 8 at a time on 2 cores, ≈ 0.9 s per
// concurrent turn. Each level also waits up to 5 s for counts to settle.
func Estimate(p Plan, compare bool) string {
	parts := func(s Scale, start, turn, tool, concurrent float64) map[string]float64 {
		conc := float64(p.StreamMS) / 1000 // the warm-up stream
		for _, n := range s.Concurrency {
			conc += float64(s.Rounds)*(float64(p.StreamMS)/1000+float64(n)*concurrent) + 3
		}
		return map[string]float64{
			"cold start":    float64(s.ColdStarts)*(start+float64(p.IdleMS)/1000) + start,
			"turn overhead": float64(2*(s.WarmPairs+s.Pairs)) * turn,
			"tool call":     float64(s.ToolPairs+max(2, s.WarmPairs/10)) * tool,
			"concurrency":   conc,
		}
	}
	sum := func(m map[string]float64) float64 {
		total := 0.0
		for name, sec := range m {
			if p.runs(name) {
				total += sec
			}
		}
		return total
	}
	talon := parts(p.Talon, 0.015, 0.003, 0.006, 0.01)
	// The idle WebSocket clients: a start, ≈ 7 ms a handshake (each
	// hello-ok lists every client already connected), 3 s of waiting.
	talon["websocket idle"] = 0.015 + float64(wsConns(p))*0.007 + 3
	// The tenants: their first turns, two turns and a cold one per
	// sampled tenant, the idle timeout and 2 s, and three footprints.
	t := p.Tenants
	talon["tenants"] = float64(t.N)*0.015 + float64(3*min(t.Sample, t.N))*0.005 + float64(t.IdleMS)/1000 + 2 + 3
	msg := fmt.Sprintf("about %.0f s for talon", sum(talon))
	if compare {
		msg += fmt.Sprintf(", then about %.0f min for OpenClaw", sum(parts(p.OpenClaw, 30, 0.5, 2.5, 0.9))/60+0.5)
	}
	return msg
}
