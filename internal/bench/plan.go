package bench

import (
	"errors"
	"fmt"
	"slices"
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
}

// QuickPlan is `talon bench --quick`: every figure of the full run from
// fewer samples, under a minute on 2 cores for talon alone.
func QuickPlan() Plan {
	return Plan{
		Talon:    Scale{ColdStarts: 3, WarmPairs: 30, Pairs: 300, ToolPairs: 100, Concurrency: []int{100, 1000}, Rounds: 1},
		OpenClaw: Scale{ColdStarts: 1, WarmPairs: 10, Pairs: 20, ToolPairs: 5, Concurrency: []int{100}, Rounds: 1},
		IdleMS:   1000, StreamMS: 2000, StreamChunks: 20,
	}
}

// FullPlan is `talon bench`: enough samples for a stable p99.
func FullPlan() Plan {
	return Plan{
		Talon:    Scale{ColdStarts: 10, WarmPairs: 200, Pairs: 3000, ToolPairs: 1000, Concurrency: []int{100, 1000}, Rounds: 3},
		OpenClaw: Scale{ColdStarts: 3, WarmPairs: 20, Pairs: 100, ToolPairs: 30, Concurrency: []int{100, 1000}, Rounds: 1},
		IdleMS:   1000, StreamMS: 2000, StreamChunks: 20,
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
	return nil
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
// beyond the stream; for OpenClaw (under load) a start ≈ 30 s, a turn
// ≈ 0.5 s, a tool turn ≈ 2.5 s and, as it runs 8 at a time on 2 cores,
// ≈ 0.9 s per concurrent turn. Each level also waits up to 5 s for counts
// to settle.
func Estimate(p Plan, compare bool) string {
	seconds := func(s Scale, start, turn, tool, concurrent float64) float64 {
		sec := float64(s.ColdStarts)*(start+float64(p.IdleMS)/1000) + start
		sec += float64(2*(s.WarmPairs+s.Pairs)) * turn
		sec += float64(s.ToolPairs+max(2, s.WarmPairs/10)) * tool
		sec += float64(p.StreamMS) / 1000 // the warm-up stream
		for _, n := range s.Concurrency {
			sec += float64(s.Rounds)*(float64(p.StreamMS)/1000+float64(n)*concurrent) + 3
		}
		return sec
	}
	// The idle WebSocket clients: a start, ≈ 7 ms a handshake (each
	// hello-ok lists every client already connected), 3 s of waiting.
	ws := 0.015 + float64(wsConns(p))*0.007 + 3
	msg := fmt.Sprintf("about %.0f s for talon", seconds(p.Talon, 0.015, 0.003, 0.006, 0.01)+ws)
	if compare {
		msg += fmt.Sprintf(", then about %.0f min for OpenClaw", seconds(p.OpenClaw, 30, 0.5, 2.5, 0.9)/60+0.5)
	}
	return msg
}
