package hooks

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"talon/internal/authlimit"
	"talon/internal/config"
)

// Limits of §10 (R10.1, R10.3–R10.5) and Talon's bounds on texts.
const (
	MaxBody          = 256 << 10
	BodyTimeout      = 30 * time.Second
	AdmissionTimeout = 15 * time.Second
	// MaxAuthFailures from one client in AuthWindow throttle it (429).
	MaxAuthFailures = 20
	AuthWindow      = time.Minute
	// MaxText bounds a wake text and an agent message, given or rendered.
	MaxText     = 64 << 10
	MaxFanOut   = 200
	maxName     = 200
	maxField    = 512
	maxIdemKey  = 256
	maxThrottle = 10000 // clients the throttle remembers
)

// Options make a Handler.
type Options struct {
	// Config is the tenant's validated config; its hooks section decides
	// everything. Hooks not enabled (or without a token) answer 404.
	Config     *config.Config
	Dispatcher Dispatcher
	// Now is the clock of the throttle and the replay cache; nil is
	// time.Now.
	Now func() time.Time
	// NewID makes the id of a generated hook:<id> session key; nil is a
	// random UUID.
	NewID func() string
	Log   *slog.Logger
	// BodyTimeout and AdmissionTimeout replace the defaults when set.
	BodyTimeout      time.Duration
	AdmissionTimeout time.Duration
}

// Handler serves one tenant's hooks. Mount it at Path() and below
// (Path()+"/"); it reads the request's path as given, so a gateway that
// puts tenants under a prefix strips that prefix first.
type Handler struct {
	cfg       *config.Config
	hooks     *config.Hooks
	base      string
	token     [32]byte // SHA-256 of the token: compared in constant time
	d         Dispatcher
	now       func() time.Time
	newID     func() string
	log       *slog.Logger
	bodyTime  time.Duration
	admitTime time.Duration
	throttle  *authlimit.Limiter
	replays   *replays
}

// New makes the handler of one tenant config.
func New(o Options) *Handler {
	cfg := o.Config
	if cfg == nil {
		cfg = &config.Config{}
	}
	h := &Handler{
		cfg: cfg, hooks: &cfg.Hooks, base: config.HooksPath(cfg.Hooks.Path), d: o.Dispatcher,
		now: o.Now, newID: o.NewID, log: o.Log, bodyTime: o.BodyTimeout, admitTime: o.AdmissionTimeout,
		throttle: authlimit.NewLimiter(MaxAuthFailures, AuthWindow, maxThrottle),
		token:    sha256.Sum256([]byte(cfg.Hooks.Token)),
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.newID == nil {
		h.newID = randomUUID
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.bodyTime <= 0 {
		h.bodyTime = BodyTimeout
	}
	if h.admitTime <= 0 {
		h.admitTime = AdmissionTimeout
	}
	h.replays = newReplays(h.now)
	return h
}

// Path is the base path the handler serves (hooks.path normalised).
func (h *Handler) Path() string { return h.base }

// Active reports whether hooks are on; when not, every request is 404.
func (h *Handler) Active() bool { return h.hooks.Active() && h.d != nil }

// reply is a response: a status and a JSON body.
type reply struct {
	status int
	body   any
}

func fail(status int, format string, args ...any) reply {
	return reply{status, map[string]any{"ok": false, "error": fmt.Sprintf(format, args...)}}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, ok := h.route(r.URL.Path)
	if !ok || !h.Active() {
		http.NotFound(w, r)
		return
	}
	rep := h.serve(w, r, name)
	if rep.status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", http.MethodPost)
	}
	writeJSON(w, rep)
}

// route is the sub-path of a request under the base path, slashes
// trimmed; false when the path is not under it.
func (h *Handler) route(p string) (string, bool) {
	rest, ok := strings.CutPrefix(p, h.base)
	if !ok || rest != "" && rest[0] != '/' {
		return "", false
	}
	return strings.Trim(rest, "/"), true
}

// serve runs R10.1's transport checks in order, then the endpoint.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, name string) reply {
	if r.Method != http.MethodPost {
		return fail(http.StatusMethodNotAllowed, "hooks: use POST")
	}
	if r.URL.Query().Has("token") {
		// A token in a URL ends up in logs and proxies: refuse the
		// request even when a header carries the right one.
		return fail(http.StatusBadRequest, "hooks: a token in the query string is refused; send it in the Authorization header")
	}
	addr := authlimit.Addr(r)
	if wait := h.throttle.Wait(addr, h.now()); wait > 0 {
		w.Header().Set("Retry-After", authlimit.RetryAfter(wait))
		return fail(http.StatusTooManyRequests, "hooks: too many failed authentications; retry later")
	}
	if !tokenMatches(h.token, requestToken(r)) {
		h.throttle.Fail(addr, h.now())
		return fail(http.StatusUnauthorized, "hooks: missing or wrong token")
	}
	if name == "" {
		return fail(http.StatusNotFound, "hooks: no action at the base path; POST to /wake, /agent or a mapped name")
	}
	body, rep := h.readBody(w, r)
	if rep.status != 0 {
		return rep
	}
	payload, err := decodeBody(body)
	if err != nil {
		return fail(http.StatusBadRequest, "hooks: reading the body: %v", err)
	}
	req := &request{r: r, name: name, payload: payload}
	switch name {
	case "wake":
		return h.wake(r.Context(), req)
	case "agent":
		return h.agent(r.Context(), req)
	}
	return h.mapped(r.Context(), req)
}

// requestToken is the token a request presents: a non-empty Bearer
// token, else x-openclaw-token, else Talon's x-talon-token.
func requestToken(r *http.Request) string {
	if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		if t := strings.TrimSpace(a[7:]); t != "" {
			return t
		}
	}
	if t := strings.TrimSpace(r.Header.Get("X-Openclaw-Token")); t != "" {
		return t
	}
	return strings.TrimSpace(r.Header.Get("X-Talon-Token"))
}

// tokenMatches compares digests, so that the time taken depends on
// neither the token's length nor how much of it a guess got right.
func tokenMatches(want [32]byte, got string) bool {
	if got == "" {
		return false
	}
	sum := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(want[:], sum[:]) == 1
}

// readBody reads at most MaxBody bytes within the body timeout.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, reply) {
	rc := http.NewResponseController(w)
	// A writer without deadlines (a test recorder) leaves the server's
	// own timeouts in charge.
	deadline := rc.SetReadDeadline(time.Now().Add(h.bodyTime)) == nil
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		// The rest of the body is not worth waiting for: the server
		// would read it before answering to keep the connection.
		w.Header().Set("Connection", "close")
	} else if deadline {
		_ = rc.SetReadDeadline(time.Time{})
	}
	var tooBig *http.MaxBytesError
	var nerr net.Error
	switch {
	case err == nil:
		return body, reply{}
	case errors.As(err, &tooBig):
		return nil, fail(http.StatusRequestEntityTooLarge, "hooks: the body is larger than %d bytes", MaxBody)
	case errors.As(err, &nerr) && nerr.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return nil, fail(http.StatusRequestTimeout, "hooks: the body did not arrive within %s", h.bodyTime)
	}
	return nil, fail(http.StatusBadRequest, "hooks: reading the body: %v", err)
}

// decodeBody parses one JSON value (numbers kept as written); an empty
// body is an empty object.
func decodeBody(body []byte) (any, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("invalid JSON: data after the value")
	}
	return v, nil
}

func writeJSON(w http.ResponseWriter, rep reply) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(rep.status)
	if rep.status == http.StatusNoContent {
		return
	}
	_ = json.NewEncoder(w).Encode(rep.body)
}

// randomUUID is a version 4 UUID.
func randomUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	s := hex.EncodeToString(b[:])
	return s[:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:]
}

// request is a hook request past the transport checks.
type request struct {
	r       *http.Request
	name    string
	payload any
}
