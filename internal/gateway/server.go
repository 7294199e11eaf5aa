package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"talon/internal/authlimit"
	"talon/internal/automation/cron"
	"talon/internal/channel/hub"
	"talon/internal/config"
	"talon/internal/sandbox"
	"talon/internal/tools"
)

// Options configure a Server.
type Options struct {
	// StateDir holds the default tenant's files and tenants/<id>/.
	StateDir string
	// ConfigPath is the default tenant's config; empty means the first of
	// config.Names in StateDir, else StateDir/talon.json.
	ConfigPath string
	// Addr is host:port to listen on.
	Addr string
	// Tools is the registry of core tools; every tenant shares it.
	Tools *tools.Registry
	// Env reads environment variables (API keys, TALON_GATEWAY_TOKEN);
	// nil means os.Getenv.
	Env func(string) string
	// Logger receives the server's log; nil means slog.Default().
	Logger *slog.Logger
	// MaxBodyBytes bounds a request body; 0 means 20 MiB.
	MaxBodyBytes int64
	// ShutdownTimeout bounds how long Shutdown waits for runs; 0 means 30 s.
	ShutdownTimeout time.Duration
	// HandshakeTimeout bounds the wait for a WS client's connect request;
	// 0 means 15 s.
	HandshakeTimeout time.Duration
	// TickInterval is the WS keepalive period; 0 means 30 s.
	TickInterval time.Duration
	// API, when set, serves /api/ (the workforce platform's REST API in
	// `talon serve`); it does its own auth.
	API http.Handler
	// UI, when set, serves every other path that is not a WebSocket
	// upgrade (Studio in `talon serve`); it does its own auth.
	UI http.Handler
	// Model, when set, is the model of every run of every tenant, over
	// what configs, sessions and requests name (talon serve --model).
	Model string
	// SyncWindow is the session stores' store.Options.SyncWindow: 0
	// fsyncs every commit before a turn is answered.
	SyncWindow time.Duration
	// DefaultToken is a secret of the default tenant beside its config's,
	// as TALON_GATEWAY_TOKEN is (which wins when both are set): `talon
	// serve` passes the token it keeps in STATE/gateway.token when nothing
	// else sets one. Empty leaves such a gateway open on loopback.
	DefaultToken string
	// TenantIdle is how long a tenant goes unused before its handles
	// close (warm.go); 0 never closes an idle one (the bound below still
	// closes the least recently used for room).
	TenantIdle time.Duration
	// MaxWarmTenants bounds the tenants open at once; 0 means as many as
	// the process's RLIMIT_NOFILE allows beside a reserve for sockets.
	MaxWarmTenants int
	// AuthLimit throttles failed bearer and WebSocket authentication;
	// `talon serve` shares one with the platform API and Studio. Nil
	// means one of the server's own.
	AuthLimit *authlimit.Guard
	// Node, when set, serves /node/ (package node: the node API the
	// platform uses when tenants are spread over several gateways); it
	// does its own auth. Unset, every /node/ path is 404.
	Node http.Handler
	// DrainTimeout bounds how long DrainTenant waits for a tenant's runs
	// before aborting them; 0 means ShutdownTimeout.
	DrainTimeout time.Duration
}

// Server is the gateway.
type Server struct {
	opts          Options
	log           *slog.Logger
	tools         *tools.Registry
	defaultTenant *tenant
	tenants       tenants
	locks         sessionLocks
	loopback      bool
	bindIP        net.IP // the listening IP; nil before Listen or for "localhost"
	limit         *authlimit.Guard
	warm          warmSet // the tenants whose handles are open (warm.go)
	// checks are the sandbox backends' passed checks, shared by every
	// tenant's sandbox manager: a tenant opening again does not probe.
	checks *sandbox.Checks
	hubs   hubs        // WebSocket clients per tenant
	runs   runRegistry // chat.send and agent runs, idempotency caches
	drains drains      // tenants moving to another node (drain.go)
	// channelTokens is the process's registry of channel bot tokens: one
	// connection per token, whichever tenant configures it.
	channelTokens *hub.Tokens
	// stopChannels ends the watch of tenants' channel configs.
	stopChannels context.CancelFunc
	// cron runs every tenant's cron jobs (cron.go); made when the gateway
	// starts serving.
	cron *cron.Scheduler
	// beats are the scheduled heartbeats (heartbeats.go).
	beats   beats
	started time.Time
	// loading is the start-up's loading of tenants' cron work, which goes
	// on in the background once the gateway serves (startCron).
	loading sync.WaitGroup

	// srvMu guards httpSrv and shut: Shutdown may come before Serve has
	// built its http.Server (a test that ends at once), and then Serve
	// must not start.
	srvMu   sync.Mutex
	httpSrv *http.Server
	shut    bool
	ready   chan struct{}
	once    sync.Once
}

// New prepares a server; it opens nothing until Serve or the first request.
func New(opts Options) (*Server, error) {
	if opts.StateDir == "" {
		return nil, errors.New("gateway: state dir is required")
	}
	// Tenant directories are compared with the paths their configs lead
	// to, which are absolute.
	abs, err := filepath.Abs(opts.StateDir)
	if err != nil {
		return nil, fmt.Errorf("gateway: state dir: %w", err)
	}
	opts.StateDir = abs
	if opts.Env == nil {
		opts.Env = os.Getenv
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 20 << 20
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = 30 * time.Second
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = opts.ShutdownTimeout
	}
	if opts.Tools == nil {
		return nil, errors.New("gateway: a tool registry is required")
	}
	if opts.AuthLimit == nil {
		opts.AuthLimit = authlimit.NewGuard()
	}
	cfgPath := opts.ConfigPath
	if cfgPath == "" {
		if p, ok := config.Find(opts.StateDir); ok {
			cfgPath = p
		} else {
			cfgPath = filepath.Join(opts.StateDir, config.Filename)
		}
	}
	s := &Server{
		opts:  opts,
		log:   opts.Logger,
		tools: opts.Tools,
		defaultTenant: &tenant{
			dir: opts.StateDir, configPath: cfgPath, envToken: cmp.Or(opts.Env("TALON_GATEWAY_TOKEN"), opts.DefaultToken),
		},
		limit:         opts.AuthLimit,
		tenants:       tenants{m: map[string]*tenant{}},
		ready:         make(chan struct{}),
		started:       time.Now(),
		channelTokens: hub.NewTokens(),
		checks:        sandbox.NewChecks(),
	}
	s.warm.init(opts.MaxWarmTenants)
	return s, nil
}

// Handler returns the HTTP routes, behind the browser-safety rules
// (browser.go).
func (s *Server) Handler() http.Handler {
	return s.browserSafe(s.routes())
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/chat/completions", s.handleChatCompletions)
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("GET /v1/models/{id...}", s.handleModel)
	mux.HandleFunc("/v1/models", methodNotAllowed(http.MethodGet))
	mux.HandleFunc("/v1/models/", methodNotAllowed(http.MethodGet))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"ok": true})
	})
	mux.HandleFunc("GET /readyz", s.handleReady)
	mux.HandleFunc("POST /channels/{tenant}/{channel}/{account}", s.handleChannelWebhook)
	mux.HandleFunc("GET /debug/runtime", s.handleDebugRuntime)
	if s.opts.API != nil {
		mux.Handle("/api/", s.opts.API)
	}
	if s.opts.Node != nil {
		mux.Handle("/node/", s.opts.Node)
	} else {
		mux.HandleFunc("/node/", func(w http.ResponseWriter, _ *http.Request) {
			writeError(w, http.StatusNotFound, errNotFound, "not found")
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if isWebSocket(r) {
			s.handleWS(w, r)
			return
		}
		if s.serveHooks(w, r) {
			return
		}
		if s.opts.UI != nil {
			s.opts.UI.ServeHTTP(w, r)
			return
		}
		writeError(w, http.StatusNotFound, errNotFound, "not found")
	})
	return mux
}

// Listen checks the security defaults and binds the address. Binding
// anything but loopback needs a token or password for the default tenant.
func (s *Server) Listen() (net.Listener, error) {
	host, _, err := net.SplitHostPort(s.opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("gateway: address %q: %w", s.opts.Addr, err)
	}
	s.loopback = isLoopbackHost(host)
	s.bindIP = net.ParseIP(host)
	rt, err := s.defaultTenant.current(s)
	if err != nil {
		return nil, err
	}
	if !s.loopback && len(s.defaultTenant.token(rt.file.Config)) == 0 {
		return nil, fmt.Errorf("gateway: refusing to listen on %s without auth: set gateway.auth.token in %s or TALON_GATEWAY_TOKEN, or bind 127.0.0.1", s.opts.Addr, s.defaultTenant.configPath)
	}
	ln, err := net.Listen("tcp", s.opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("gateway: listening on %s: %w", s.opts.Addr, err)
	}
	return ln, nil
}

// Serve serves on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.srvMu.Lock()
	if s.shut {
		s.srvMu.Unlock()
		_ = ln.Close()
		return nil
	}
	s.httpSrv = hs
	ctx, stop := context.WithCancel(context.Background())
	s.stopChannels = stop
	s.cron = s.newCron()
	s.srvMu.Unlock()
	s.startChannels(ctx)
	s.startCron(ctx)
	s.startSweeper()
	s.once.Do(func() { close(s.ready) })
	err := hs.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting requests, waits for runs in flight up to the
// shutdown timeout, then closes the stores.
//
// WS chat and agent runs are waited for too; those still going when the
// timeout ends are aborted, and their clients get the aborted events
// before the shutdown event and the close.
func (s *Server) Shutdown(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.ShutdownTimeout)
	defer cancel()
	s.srvMu.Lock()
	s.shut = true
	hs := s.httpSrv
	s.stopSweeper()
	if s.stopChannels != nil {
		s.stopChannels()
	}
	s.srvMu.Unlock()
	// Channels first: no new message starts a run while runs drain, and
	// a channel's run cut short is run again after the restart. The cron
	// scheduler likewise: a run it cancels is recorded once as lost and
	// caught up after the restart (R5.7).
	for _, t := range s.channelTenants() {
		s.closeChannels(t)
	}
	// The start-up's loading stops at its next tenant (stopChannels ended
	// its context); what it opened is closed with the others below.
	s.loading.Wait()
	if s.cron != nil {
		if err := s.cron.Close(ctx); err != nil {
			s.log.Error("stopping the cron scheduler", "err", err)
		}
	}
	httpDone := make(chan error, 1)
	if hs != nil {
		go func() { httpDone <- hs.Shutdown(ctx) }()
	} else {
		httpDone <- nil
	}
	s.runs.drain(ctx)
	s.closeWS(shutdownCloseText)
	err := <-httpDone
	if err != nil {
		hs.Close()
	}
	s.closeTenants()
	// Tools that hold processes of their own (the browser's Chromium)
	// end them with the gateway.
	for _, tool := range s.tools.All() {
		if c, ok := tool.(io.Closer); ok {
			if cerr := c.Close(); cerr != nil {
				s.log.Warn("closing a tool", "tool", tool.Name(), "err", cerr)
			}
		}
	}
	return err
}

func (s *Server) handleReady(w http.ResponseWriter, _ *http.Request) {
	select {
	case <-s.ready:
	default:
		writeError(w, http.StatusServiceUnavailable, errAPI, "starting")
		return
	}
	if _, err := s.defaultTenant.current(s); err != nil {
		writeError(w, http.StatusServiceUnavailable, errAPI, "default tenant not ready")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true})
}

func methodNotAllowed(allow string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Allow", allow)
		writeError(w, http.StatusMethodNotAllowed, errInvalidRequest, "method not allowed; use "+allow)
	}
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sessionLocks serialises runs per session: one lock per session key in
// use, dropped when no run holds or waits for it. (Striped locks, tried
// first, made unrelated sessions wait for each other's whole turn: with
// 1,000 concurrent streams only a quarter reached the model at once.)
type sessionLocks struct {
	mu sync.Mutex
	m  map[lockKey]*sessionLock
}

// lockKey names one session's run lock. It is a struct, not a joined
// string, so that the HTTP endpoint, the WS chat methods and resets, which
// must exclude each other on one session, have one spelling of it
// (sessionLockKey) and no way to build another.
type lockKey struct{ tenant, session string }

// sessionLockKey is the run lock of a tenant's session, the key canonical.
func sessionLockKey(t *tenant, key string) lockKey { return lockKey{tenant: t.id, session: key} }

type sessionLock struct {
	held chan struct{} // holds one token while a run has the session
	refs int           // runs holding or waiting; guarded by sessionLocks.mu
}

// lock waits for key's lock, or for ctx to be done (the client left while
// another run of its session went on).
func (l *sessionLocks) lock(ctx context.Context, key lockKey) (unlock func(), err error) {
	e := l.acquire(key)
	select {
	case e.held <- struct{}{}:
		return l.unlocker(key, e), nil
	case <-ctx.Done():
		l.release(key, e)
		return nil, ctx.Err()
	}
}

// acquire returns key's lock, created when no run holds or waits for
// it, counting the caller in; release counts it out.
func (l *sessionLocks) acquire(key lockKey) *sessionLock {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[lockKey]*sessionLock{}
	}
	e := l.m[key]
	if e == nil {
		e = &sessionLock{held: make(chan struct{}, 1)}
		l.m[key] = e
	}
	e.refs++
	return e
}

// unlocker is the unlock function of a lock taken.
func (l *sessionLocks) unlocker(key lockKey, e *sessionLock) func() {
	return func() {
		<-e.held
		l.release(key, e)
	}
}

func (l *sessionLocks) release(key lockKey, e *sessionLock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.refs--; e.refs == 0 {
		delete(l.m, key)
	}
}

// waiting reports whether a run waits for key's lock while another holds
// it.
func (l *sessionLocks) waiting(key lockKey) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.m[key]
	return e != nil && e.refs > 1
}

// len is how many sessions have a lock; for tests.
func (l *sessionLocks) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}
