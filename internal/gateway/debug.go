package gateway

import (
	"net"
	"net/http"
	goruntime "runtime"

	"talon/internal/authlimit"
)

// handleDebugRuntime answers GET /debug/runtime with the process's
// goroutine count, so that `talon bench` and soak tests can see from the
// outside whether a load left goroutines behind. It is an operator's
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
	if ok, _ := s.checkSecret(authlimit.Addr(r), "", s.defaultTenant, rt, bearer(r)); !ok {
		writeError(w, http.StatusNotFound, errNotFound, "not found")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"goroutines": goruntime.NumGoroutine()})
}
