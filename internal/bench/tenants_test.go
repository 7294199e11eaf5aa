package bench

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"talon/internal/ceiling"
	"talon/internal/config"
)

func TestTenantValues(t *testing.T) {
	p := QuickPlan()
	p.Tenants.N = 100
	msd := func(v ...float64) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x * float64(time.Millisecond))
		}
		return out
	}
	base := footprint{rssMB: 40, files: 20, heapMB: 5}
	tests := []struct {
		name string
		load tenantLoad
		want map[string]float64
	}{
		{
			name: "every phase answered",
			load: tenantLoad{
				direct: time.Millisecond, first: msd(30, 10, 20), warm: msd(2, 3), cold: msd(7, 5), failed: 1, warmAfter: 10,
				empty: base, active: footprint{rssMB: 50, files: 100, heapMB: 7}, idle: footprint{rssMB: 45, files: 30, heapMB: 5.5},
				diskKB: 12000,
			},
			want: map[string]float64{
				"failures": 1, "first_ms.p50": 20, "first_ms.p99": 30, "first_added_ms.p50": 19, "first_added_ms.p99": 29,
				"warm_ms.p50": 2, "warm_ms.p99": 3, "cold_ms.p50": 5, "cold_ms.p99": 7, "cold_added_ms.p50": 3, "cold_added_ms.p99": 4,
				"rss_mb.empty": 40, "rss_mb.active": 50, "rss_mb.idle": 45, "rss_kb.per_active": 1000, "rss_kb.per_idle": 50,
				"open_files.empty": 20, "open_files.active": 100, "open_files.idle": 30, "open_files.per_active": 8, "open_files.per_idle": 0.1,
				"heap_kb.per_active": 200, "heap_mb.idle": 0.5, "heap_kb.per_idle": 5, "disk_kb.per_tenant": 120,
			},
		},
		{
			name: "no turn answered and no tenant warm",
			load: tenantLoad{direct: time.Millisecond, failed: 300, empty: base, active: base, idle: base},
			want: map[string]float64{
				"failures": 300, "first_ms.p50": 0, "first_ms.p99": 0, "first_added_ms.p50": 0, "first_added_ms.p99": 0,
				"warm_ms.p50": 0, "warm_ms.p99": 0, "cold_ms.p50": 0, "cold_ms.p99": 0, "cold_added_ms.p50": 0, "cold_added_ms.p99": 0,
				"rss_mb.empty": 40, "rss_mb.active": 40, "rss_mb.idle": 40, "rss_kb.per_active": 0, "rss_kb.per_idle": 0,
				"open_files.empty": 20, "open_files.active": 20, "open_files.idle": 20, "open_files.per_active": 0, "open_files.per_idle": 0,
				"heap_kb.per_active": 0, "heap_mb.idle": 0, "heap_kb.per_idle": 0, "disk_kb.per_tenant": 0,
			},
		},
		{
			name: "warm turns failed: no cold − warm",
			load: tenantLoad{direct: 2 * time.Millisecond, first: msd(4), cold: msd(9), warmAfter: 1, empty: base, active: base, idle: base},
			want: map[string]float64{
				"failures": 0, "first_ms.p50": 4, "first_ms.p99": 4, "first_added_ms.p50": 2, "first_added_ms.p99": 2,
				"warm_ms.p50": 0, "warm_ms.p99": 0, "cold_ms.p50": 9, "cold_ms.p99": 9, "cold_added_ms.p50": 0, "cold_added_ms.p99": 0,
				"rss_mb.empty": 40, "rss_mb.active": 40, "rss_mb.idle": 40, "rss_kb.per_active": 0, "rss_kb.per_idle": 0,
				"open_files.empty": 20, "open_files.active": 20, "open_files.idle": 20, "open_files.per_active": 0, "open_files.per_idle": 0,
				"heap_kb.per_active": 0, "heap_mb.idle": 0, "heap_kb.per_idle": 0, "disk_kb.per_tenant": 0,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tenantValues(p, tt.load)
			want := map[string]float64{}
			for k, v := range tt.want {
				want["tenants.100."+k] = v
			}
			if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("values (-want +got):\n%s", diff)
			}
			var declared []string
			for _, f := range tenantFigures(p) {
				declared = append(declared, f.ID)
			}
			if diff := cmp.Diff(slices.Sorted(maps.Keys(got)), slices.Sorted(slices.Values(declared))); diff != "" {
				t.Errorf("values against the declared figures (-values +declared):\n%s", diff)
			}
		})
	}
}

func TestSampleOf(t *testing.T) {
	tests := []struct {
		n, k int
		want []int
	}{
		{10, 3, []int{0, 3, 6}},
		{10, 10, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{3, 50, []int{0, 1, 2}},
		{10000, 4, []int{0, 2500, 5000, 7500}},
		{1, 1, []int{0}},
	}
	for _, tt := range tests {
		t.Run("", func(t *testing.T) {
			if got := sampleOf(tt.n, tt.k); !slices.Equal(got, tt.want) {
				t.Errorf("sampleOf(%d, %d) = %v, want %v", tt.n, tt.k, got, tt.want)
			}
		})
	}
}

func TestTenantPlanValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Plan)
		want string
	}{
		{"quick", func(*Plan) {}, ""},
		{"the issue's 10,000", func(p *Plan) { p.Tenants.N = 10000 }, ""},
		{"only the tenants", func(p *Plan) { p.Only = []string{"tenants"} }, ""},
		{"no tenants", func(p *Plan) { p.Tenants.N = 0 }, "tenants n 0: want 1 to 100000"},
		{"too many tenants", func(p *Plan) { p.Tenants.N = 100001 }, "tenants n 100001"},
		{"no clients", func(p *Plan) { p.Tenants.Clients = 0 }, "tenants clients 0"},
		{"no sample", func(p *Plan) { p.Tenants.Sample = 0 }, "tenants sample 0"},
		{"an idle timeout too short", func(p *Plan) { p.Tenants.IdleMS = 50 }, "tenants idle_ms 50: want 100 or more"},
		{"too few files", func(p *Plan) { p.Tenants.OpenFiles = 10 }, "tenants open_files 10"},
		{"an unknown measurement", func(p *Plan) { p.Only = []string{"tenant"} }, `only "tenant": no such measurement`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := QuickPlan()
			tt.edit(&p)
			err := p.Validate(false)
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Validate = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestOnly: a plan with Only declares only those measurements' figures.
func TestOnly(t *testing.T) {
	p := QuickPlan()
	p.Only = []string{"tenants"}
	figs := Catalog(p)
	if len(figs) != len(tenantFigures(p)) {
		t.Fatalf("%d figures, want the tenants' %d", len(figs), len(tenantFigures(p)))
	}
	for _, f := range figs {
		if !strings.HasPrefix(f.ID, "tenants.300.") {
			t.Errorf("figure %s in a tenants-only plan", f.ID)
		}
	}
	if all, only := Estimate(QuickPlan(), false), Estimate(p, false); all == only {
		t.Errorf("the estimate of the tenants alone is the whole run's: %s", only)
	}
}

// TestWriteTenants: talon's own loader and the operator's ceiling take
// what the harness writes: every tenant with its own token, and its model
// provider on loopback allowed by the root config, with no violation.
func TestWriteTenants(t *testing.T) {
	dir := t.TempDir()
	const llm = "http://127.0.0.1:4567/v1"
	ts, err := writeTenants(dir, llm, 12)
	if err != nil {
		t.Fatal(err)
	}
	root, err := config.Load(filepath.Join(dir, "talon.json"))
	if err != nil {
		t.Fatal(err)
	}
	if root.Config.Gateway.Auth.Token != Token {
		t.Errorf("root token %q", root.Config.Gateway.Auth.Token)
	}
	ceil, issues := ceiling.New(root, nil)
	if len(issues) > 0 {
		t.Fatalf("the root config's ceiling: %v", issues)
	}
	tokens := map[string]bool{}
	for i, tn := range ts {
		if want := fmt.Sprintf("t%02d", i); tn.id != want {
			t.Errorf("tenant %d is %q, want %q", i, tn.id, want)
		}
		tdir := filepath.Join(dir, "tenants", tn.id)
		f, err := config.Load(filepath.Join(tdir, "talon.json"))
		if err != nil {
			t.Fatal(err)
		}
		eff, res, err := ceil.Effective(f, tdir)
		if err != nil || len(res.Violations) > 0 {
			t.Fatalf("tenant %s held to the ceiling: %v, %+v", tn.id, err, res.Violations)
		}
		if got := eff.Config.Gateway.Auth.Token; got != tn.token || len(got) != 32 || tokens[got] {
			t.Errorf("tenant %s: token %q (want its own %q)", tn.id, got, tn.token)
		}
		tokens[tn.token] = true
		if p := eff.Config.Models.Providers["fake"]; p.BaseURL != llm || p.APIKey != UpstreamKey {
			t.Errorf("tenant %s: provider %+v", tn.id, p)
		}
	}
}

// TestReadRuntime: both shapes of GET /debug/runtime decode, the one
// before issue 25 with nil for what it lacks; ?gc=1 is asked for.
func TestReadRuntime(t *testing.T) {
	tests := []struct {
		name, body string
		gc         bool
		heap       int64 // -1: none
		warm       int   // -1: none
	}{
		{"before issue 25", `{"goroutines":12}`, false, -1, -1},
		{"with the tenants", `{"goroutines":12,"heapBytes":5000000,"openFiles":40,"tenants":{"known":300,"warm":2}}`, true, 5000000, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var query, auth string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				query, auth = r.URL.RawQuery, r.Header.Get("Authorization")
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			rt, err := readRuntime(context.Background(), srv.Client(), srv.URL, "tok", tt.gc)
			if err != nil {
				t.Fatal(err)
			}
			if wantQ := map[bool]string{true: "gc=1", false: ""}[tt.gc]; query != wantQ || auth != "Bearer tok" {
				t.Errorf("query %q, auth %q", query, auth)
			}
			if rt.Goroutines != 12 || (rt.HeapBytes == nil) != (tt.heap < 0) || (rt.Tenants == nil) != (tt.warm < 0) {
				t.Fatalf("decoded %+v", rt)
			}
			if tt.heap >= 0 && (*rt.HeapBytes != tt.heap || rt.Tenants.Warm != tt.warm || rt.Tenants.Known != 300) {
				t.Errorf("decoded heap %d, tenants %+v", *rt.HeapBytes, rt.Tenants)
			}
		})
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.NotFound(w, nil) }))
	defer srv.Close()
	if _, err := readRuntime(context.Background(), srv.Client(), srv.URL, "tok", false); err == nil || !strings.Contains(err.Error(), "status 404") {
		t.Errorf("a 404: %v", err)
	}
}

// TestDiskKB: the blocks files take, whatever their apparent size.
func TestDiskKB(t *testing.T) {
	dir := t.TempDir()
	if got, err := diskKB(dir); err != nil || got != 0 {
		t.Fatalf("an empty dir: %v, %v", got, err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a", "b", "data"), make([]byte, 64<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	// A sparse file takes (almost) nothing.
	f, err := os.Create(filepath.Join(dir, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(1 << 30)
	f.Close()
	got, err := diskKB(dir)
	if err != nil || got < 65.5 || got > 65.5+64 {
		t.Errorf("64 KiB written and a 1 GiB sparse file: %v KB, %v", got, err)
	}
	if _, err := diskKB(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing dir: no error")
	}
}
