package bench

import (
	"fmt"
	"strconv"
	"time"
)

// The pure half of the many-tenants row: its figures, its method note,
// and the figures' values from what tenants.go measured.

func tenantPrefix(p Plan) string { return "tenants." + strconv.Itoa(p.Tenants.N) + "." }

func tenantGroups(p Plan) (turns, footprint string) {
	n := thousands(int64(p.Tenants.N))
	files := thousands(int64(p.Tenants.OpenFiles))
	return n + " tenants, " + files + " files: turns", n + " tenants, " + files + " files: footprint"
}

func tenantFigures(p Plan) []Figure {
	id := tenantPrefix(p)
	g, f := tenantGroups(p)
	return []Figure{
		{ID: id + "failures", Group: g, What: "turns that failed (first, warm and cold)", Unit: "count"},
		{ID: id + "first_ms.p50", Group: g, What: "a tenant's first turn, p50", Unit: "ms"},
		{ID: id + "first_ms.p99", Group: g, What: "a tenant's first turn, p99", Unit: "ms"},
		{ID: id + "first_added_ms.p50", Group: g, What: "first turn − the fake LLM called directly, p50", Unit: "ms"},
		{ID: id + "first_added_ms.p99", Group: g, What: "first turn − the fake LLM called directly, p99", Unit: "ms"},
		{ID: id + "warm_ms.p50", Group: g, What: "warm turn (right after another), p50", Unit: "ms"},
		{ID: id + "warm_ms.p99", Group: g, What: "warm turn, p99", Unit: "ms"},
		{ID: id + "cold_ms.p50", Group: g, What: "cold turn (after the idle timeout), p50", Unit: "ms"},
		{ID: id + "cold_ms.p99", Group: g, What: "cold turn, p99", Unit: "ms"},
		{ID: id + "cold_added_ms.p50", Group: g, What: "cold − warm, p50", Unit: "ms"},
		{ID: id + "cold_added_ms.p99", Group: g, What: "cold − warm, p99", Unit: "ms"},
		{ID: id + "rss_mb.empty", Group: f, What: "gateway RSS before any tenant's turn", Unit: "MB"},
		{ID: id + "rss_mb.active", Group: f, What: "gateway RSS after every first turn", Unit: "MB"},
		{ID: id + "rss_mb.idle", Group: f, What: "gateway RSS after the idle timeout", Unit: "MB"},
		{ID: id + "rss_kb.per_active", Group: f, What: "RSS per warm tenant (active − empty) ÷ warm", Unit: "KB"},
		{ID: id + "rss_kb.per_idle", Group: f, What: "RSS per idle tenant (idle − empty) ÷ tenants", Unit: "KB"},
		{ID: id + "open_files.empty", Group: f, What: "gateway open files before any tenant's turn", Unit: "count"},
		{ID: id + "open_files.active", Group: f, What: "gateway open files after every first turn", Unit: "count"},
		{ID: id + "open_files.idle", Group: f, What: "gateway open files after the idle timeout", Unit: "count"},
		{ID: id + "open_files.per_active", Group: f, What: "open files per warm tenant", Unit: "files"},
		{ID: id + "open_files.per_idle", Group: f, What: "open files per idle tenant", Unit: "files"},
		{ID: id + "heap_kb.per_active", Group: f, What: "live heap per warm tenant", Unit: "KB"},
		{ID: id + "heap_mb.idle", Group: f, What: "live heap of all idle tenants (idle − empty)", Unit: "MB"},
		{ID: id + "heap_kb.per_idle", Group: f, What: "live heap per idle tenant", Unit: "KB"},
		{ID: id + "disk_kb.per_tenant", Group: f, What: "disk per tenant after its turns (tenants/, allocated)", Unit: "KB"},
	}
}

func tenantsMethod(p Plan) string {
	t := p.Tenants
	return fmt.Sprintf("talon only: a fresh state dir with %d tenants (tenants/<id>/talon.json, each with its own gateway token "+
		"and the fake LLM as its model provider, which the root config's tenants.network.allowHosts opens to them); "+
		"talon serve started by sh with ulimit -n %d (hard and soft) and --tenant-idle %s; each tenant's first turn "+
		"(POST /v1/chat/completions, X-Tenant-ID, a new session) from %d clients at a time over keep-alive connections; "+
		"then, one at a time, %d tenants spread evenly get a turn (not measured) and the measured warm turn right after it; "+
		"then nothing until the gateway reports no warm tenant (at most the timeout + max(timeout, 10 s)); then the same "+
		"tenants' cold turns, one at a time. Added over the fake: each first turn − the p50 of 20 direct calls; cold − warm "+
		"compares the percentiles. Footprints are read with the harness's idle connections closed: VmRSS, /proc/PID/fd, "+
		"and the live heap (heapBytes of GET /debug/runtime?gc=1; RssAnon where the binary does not report it). "+
		"Per warm tenant divides by the warm count /debug/runtime reports (else the tenants whose first turn succeeded); "+
		"per idle tenant by all %d. RSS rarely shrinks after idle: Go returns freed memory to the OS slowly. "+
		"Disk: the blocks allocated to every file under tenants/ once idle, configs included",
		t.N, t.OpenFiles, tenantIdle(t), t.Clients, min(t.Sample, t.N), t.N)
}

// tenantIdle is the plan's idle timeout as --tenant-idle takes it.
func tenantIdle(t Tenants) string {
	return (time.Duration(t.IdleMS) * time.Millisecond).String()
}

// tenantLoad is what the many-tenants row measured.
type tenantLoad struct {
	direct            time.Duration   // p50 of calls straight to the fake
	first, warm, cold []time.Duration // of the turns that succeeded
	failed            int
	// warmAfter is how many tenants were warm after the first turns.
	warmAfter           int
	empty, active, idle footprint
	// diskKB is what the tenants' directories take on disk once idle.
	diskKB float64
}

// footprint is the gateway's use of memory and files at one moment.
type footprint struct {
	rssMB  float64
	files  int
	heapMB float64
}

// tenantValues turns a load of n tenants into the figures tenantFigures
// declares. A phase without a successful turn has 0 for its latencies
// (its failures are counted), and per-warm-tenant figures are 0 when no
// tenant was warm.
func tenantValues(p Plan, l tenantLoad) map[string]float64 {
	id := tenantPrefix(p)
	n := float64(p.Tenants.N)
	first, warm, cold := sorted(msAll(l.first)), sorted(msAll(l.warm)), sorted(msAll(l.cold))
	pct := func(v []float64, q float64, minus float64) float64 {
		if len(v) == 0 {
			return 0
		}
		return Percentile(v, q) - minus
	}
	perWarm := func(delta float64) float64 {
		if l.warmAfter <= 0 {
			return 0
		}
		return delta / float64(l.warmAfter)
	}
	direct := ms(l.direct)
	v := map[string]float64{
		id + "failures":           float64(l.failed),
		id + "first_ms.p50":       pct(first, 50, 0),
		id + "first_ms.p99":       pct(first, 99, 0),
		id + "first_added_ms.p50": pct(first, 50, direct),
		id + "first_added_ms.p99": pct(first, 99, direct),
		id + "warm_ms.p50":        pct(warm, 50, 0),
		id + "warm_ms.p99":        pct(warm, 99, 0),
		id + "cold_ms.p50":        pct(cold, 50, 0),
		id + "cold_ms.p99":        pct(cold, 99, 0),
		id + "cold_added_ms.p50":  0,
		id + "cold_added_ms.p99":  0,

		id + "rss_mb.empty":          l.empty.rssMB,
		id + "rss_mb.active":         l.active.rssMB,
		id + "rss_mb.idle":           l.idle.rssMB,
		id + "rss_kb.per_active":     perWarm(l.active.rssMB-l.empty.rssMB) * 1000,
		id + "rss_kb.per_idle":       (l.idle.rssMB - l.empty.rssMB) * 1000 / n,
		id + "open_files.empty":      float64(l.empty.files),
		id + "open_files.active":     float64(l.active.files),
		id + "open_files.idle":       float64(l.idle.files),
		id + "open_files.per_active": perWarm(float64(l.active.files - l.empty.files)),
		id + "open_files.per_idle":   float64(l.idle.files-l.empty.files) / n,
		id + "heap_kb.per_active":    perWarm(l.active.heapMB-l.empty.heapMB) * 1000,
		id + "heap_mb.idle":          l.idle.heapMB - l.empty.heapMB,
		id + "heap_kb.per_idle":      (l.idle.heapMB - l.empty.heapMB) * 1000 / n,
		id + "disk_kb.per_tenant":    l.diskKB / n,
	}
	if len(warm) > 0 && len(cold) > 0 {
		v[id+"cold_added_ms.p50"] = Percentile(cold, 50) - Percentile(warm, 50)
		v[id+"cold_added_ms.p99"] = Percentile(cold, 99) - Percentile(warm, 99)
	}
	return v
}

// sampleOf picks k of n indices spread evenly, the first one 0.
func sampleOf(n, k int) []int {
	k = min(k, n)
	out := make([]int, k)
	for i := range out {
		out[i] = i * n / k
	}
	return out
}
