package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"talon/internal/talonproc"
)

// tinyPlan measures every figure from a handful of samples: a check that
// the harness works against the real binary, not a measurement.
func tinyPlan() Plan {
	return Plan{
		Talon:  Scale{ColdStarts: 2, WarmPairs: 2, Pairs: 10, ToolPairs: 5, Concurrency: []int{3, 20}, Rounds: 2},
		IdleMS: 50, StreamMS: 300, StreamChunks: 4,
		Tenants: Tenants{N: 6, Clients: 2, Sample: 3, IdleMS: 500, OpenFiles: 1024},
	}
}

// TestRun runs the harness in a tiny plan against talon built from this
// tree, and checks the report: every declared figure present and
// plausible, no failed turn, the markdown and JSON carrying them, and a
// budget check that breaks.
func TestRun(t *testing.T) {
	bin, err := talonproc.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	r, err := Run(context.Background(), Options{Binary: bin, Mode: "custom", Plan: tinyPlan(), Progress: &progress})
	if err != nil {
		t.Fatalf("Run: %v\nprogress:\n%s", err, progress.String())
	}
	catalog := Catalog(tinyPlan())
	if len(r.Figures) != len(catalog) {
		t.Fatalf("%d figures, want the %d declared", len(r.Figures), len(catalog))
	}
	for i, f := range r.Figures {
		if f.ID != catalog[i].ID {
			t.Errorf("figure %d is %s, want %s", i, f.ID, catalog[i].ID)
		}
		if f.OpenClaw != nil || f.Ratio != nil {
			t.Errorf("%s has an OpenClaw side without a comparison", f.ID)
		}
		if math.IsNaN(f.Talon) || math.IsInf(f.Talon, 0) {
			t.Errorf("%s = %v", f.ID, f.Talon)
		}
		switch {
		case strings.HasPrefix(f.ID, "tenants."):
			// Differences of footprints and latencies may be 0 or below.
			if strings.HasSuffix(f.ID, ".failures") && f.Talon != 0 ||
				strings.Contains(f.ID, "_ms.p") && !strings.Contains(f.ID, "added") && f.Talon <= 0 ||
				strings.HasSuffix(f.ID, ".empty") && f.Talon <= 0 {
				t.Errorf("%s = %v\n%s", f.ID, f.Talon, strings.Join(r.Notes, "\n"))
			}
		case strings.HasSuffix(f.ID, ".errors"):
			if f.Talon != 0 {
				t.Errorf("%s = %v, want 0 failed turns\n%s", f.ID, f.Talon, strings.Join(r.Notes, "\n"))
			}
		case strings.Contains(f.ID, "added_ms"):
			// A difference may be negative for a few pairs, not its p99.
			if strings.HasSuffix(f.ID, "p99") && f.Talon <= 0 {
				t.Errorf("%s = %v, want > 0", f.ID, f.Talon)
			}
		case f.Talon <= 0:
			t.Errorf("%s = %v, want > 0", f.ID, f.Talon)
		}
	}
	for _, n := range []string{"3", "20"} {
		if f, _ := r.Figure("concurrency." + n + ".upstream_peak"); f.Talon > map[string]float64{"3": 3, "20": 20}[n] {
			t.Errorf("%s = %v: more streams at the fake than turns", f.ID, f.Talon)
		}
	}
	if notes := strings.Join(r.Notes, "\n"); strings.Contains(notes, "(OpenClaw:") || strings.Contains(notes, "for OpenClaw)") {
		t.Errorf("notes speak of OpenClaw's samples in a run without it:\n%s", notes)
	}
	if !strings.Contains(progress.String(), "talon: cold start 2/2") || !strings.Contains(progress.String(), "talon: tenants: 3 cold turns") {
		t.Errorf("progress:\n%s", progress.String())
	}

	var md bytes.Buffer
	if err := r.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, f := range r.Figures {
		if !strings.Contains(md.String(), "`"+f.ID+"`") {
			t.Errorf("the table has no row for %s", f.ID)
		}
	}
	path := filepath.Join(t.TempDir(), "bench.json")
	if err := r.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	var back Report
	if err := json.Unmarshal(data, &back); err != nil || len(back.Figures) != len(r.Figures) || back.Plan.Talon.Pairs != 10 {
		t.Errorf("JSON round trip: %v, %d figures", err, len(back.Figures))
	}

	b, err := ParseBudget("tight.json", []byte(`{"max":{"cold_start.ready_ms.median":0,"concurrency.20.errors":0}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Validate(r.Figures); err != nil {
		t.Fatal(err)
	}
	res := b.Check(r.Figures)
	if res.Checked != 2 || len(res.Broken) != 1 || res.Broken[0].ID != "cold_start.ready_ms.median" {
		t.Errorf("a zero cold-start budget: %+v", res)
	}
}

func TestRunRefusesBadInput(t *testing.T) {
	bad := tinyPlan()
	bad.Talon.Pairs = 0
	if _, err := Run(context.Background(), Options{Binary: "/bin/true", Plan: bad}); err == nil || !strings.Contains(err.Error(), "pairs 0") {
		t.Errorf("bad plan: %v", err)
	}
	if _, err := Run(context.Background(), Options{Binary: t.TempDir(), Plan: tinyPlan()}); err == nil || !strings.Contains(err.Error(), "not an executable file") {
		t.Errorf("a directory as the binary: %v", err)
	}
}
