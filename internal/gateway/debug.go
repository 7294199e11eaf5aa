package gateway

import (
	"net"
	"net/http"
	goruntime "runtime"

	"talon/internal/authlimit"
)

// handleDebugRuntime answers GET /debug/runtime with the process's
// goroutine count, heap (after a GC with ?gc=1), open descriptors and
// tenants (known: records in memory, warm: with their handles open), so
// that `talon bench` and soak tests can see from the outside whether a
// load left something behind. It is an operator's
// figure about the whole process, so only a loopback connection carrying
// the default tenant's secret gets it; anything else gets the 404 every
// unknown path gets, so the route does not advertise itself.
func (s *Server) handleDebugRuntime(w http.ResponseWriter, r *http.Request) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		writeError(w, http.StatusNotFound, errNotFound, "not found")
		return
	}
	rt, err := s.defaultTenant.current(s)
	if err != nil {
		writeError(w, http.StatusNotFound, errNotFound, "not found")
		return
	}
	// Throttled like any bearer auth, and a throttled try is the same 404.
	if ok, _ := s.checkSecret(authlimit.Addr(r), "", s.defaultTenant, rt.file.Config, bearer(r)); !ok {
		writeError(w, http.StatusNotFound, errNotFound, "not found")
		return
	}
	if r.URL.Query().Get("gc") == "1" {
		goruntime.GC() // so that heapBytes is the live heap
	}
	var mem goruntime.MemStats
	goruntime.ReadMemStats(&mem)
	files, err := openFiles()
	if err != nil {
		files = -1
	}
	s.tenants.mu.Lock()
	known := len(s.tenants.m)
	s.tenants.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"goroutines": goruntime.NumGoroutine(), "heapBytes": mem.HeapAlloc, "openFiles": files,
		"tenants": map[string]int{"known": known, "warm": s.warm.len()},
	})
}
