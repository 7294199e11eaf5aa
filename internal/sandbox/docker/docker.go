// Package docker is the sandbox backend that runs commands in Docker
// containers, one container per sandbox scope (Spec.ID), through the
// Docker Engine API on the engine's unix socket: plain JSON over HTTP,
// no docker CLI and no Docker SDK.
//
// A container has a read-only root filesystem, no network unless the
// Spec grants it, every capability dropped, no-new-privileges, memory and
// pids limits, rlimits for open files, file size and CPU time, tmpfs at
// /tmp, /var/tmp and /run (each at most the memory limit unless its
// options set a size; the container's memory cgroup counts their pages
// too), the workspace bind-mounted read-write at /workspace, and
// docker-init as PID 1 to reap orphans. Commands run in it with exec; see
// exec.go for how a command is killed, which the Engine API has no call
// for.
//
// The Backend and its Sandboxes are safe for concurrent use.
package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"talon/internal/sandbox"
)

func init() {
	sandbox.Register("docker", func(m map[string]any) (sandbox.Backend, error) {
		return New(m)
	})
}

// ownProcesses is how many processes a container runs besides commands.
const ownProcesses = 4

// Labels on every container the backend creates.
const (
	labelSandbox = "talon.sandbox" // the Spec.ID
	labelSpec    = "talon.spec"    // hash of the container's configuration
)

// Backend runs sandboxes as Docker containers.
type Backend struct {
	set    settings
	engine *engine

	mu         sync.Mutex
	containers map[string]*container // by Spec.ID
	locks      map[string]*sync.Mutex
	swept      bool
}

var _ sandbox.Backend = (*Backend)(nil)

// New builds the backend from sandbox.docker settings (docs/sandbox.md
// lists the keys it honours).
func New(m map[string]any) (*Backend, error) {
	s, err := parseSettings(m)
	if err != nil {
		return nil, err
	}
	sock, err := socketPath(s.Socket, os.Getenv("DOCKER_HOST"))
	if err != nil {
		return nil, err
	}
	return &Backend{
		set:        s,
		engine:     newEngine(sock),
		containers: map[string]*container{},
		locks:      map[string]*sync.Mutex{},
	}, nil
}

// socketPath is the engine's socket: the socket setting, else DOCKER_HOST,
// else /var/run/docker.sock. Only unix sockets are spoken to.
func socketPath(setting, dockerHost string) (string, error) {
	src, v := "sandbox.docker.socket", setting
	if v == "" {
		src, v = "DOCKER_HOST", dockerHost
	}
	if v == "" {
		return DefaultSocket, nil
	}
	p, ok := strings.CutPrefix(v, "unix://")
	if !ok && strings.Contains(v, "://") {
		return "", fmt.Errorf("%s %q: only unix:// sockets are supported (the engine API is not spoken over TCP or SSH)", src, v)
	}
	if !path.IsAbs(p) {
		return "", fmt.Errorf("%s %q: want an absolute socket path or unix:///path", src, v)
	}
	return p, nil
}

// Name is "docker".
func (b *Backend) Name() string { return "docker" }

// Isolated is true.
func (b *Backend) Isolated() bool { return true }

// Image is the image the sandboxes run.
func (b *Backend) Image() string { return b.set.Image }

// Check reports whether an engine answers on the socket and has the image.
func (b *Backend) Check(ctx context.Context) error {
	if err := b.check(ctx); err != nil {
		return fmt.Errorf("sandbox backend docker: %w", err)
	}
	return nil
}

func (b *Backend) check(ctx context.Context) error {
	sock := b.engine.socket
	fi, err := os.Stat(sock)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("no Docker engine at %s: install docker.io and start dockerd (or set sandbox.docker.socket / DOCKER_HOST=unix:///path)", sock)
	case err != nil:
		return fmt.Errorf("Docker engine socket %s: %w", sock, err)
	case fi.Mode().Type() != fs.ModeSocket:
		return fmt.Errorf("%s is not a unix socket: point sandbox.docker.socket at the Docker engine's socket", sock)
	}
	if err := b.engine.ping(ctx); err != nil {
		if errors.Is(err, syscall.EACCES) {
			return fmt.Errorf("no permission to use the Docker engine at %s: run Talon as a member of the docker group", sock)
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("no Docker engine answers at %s: start dockerd: %w", sock, err)
		}
		return fmt.Errorf("Docker engine at %s does not answer /_ping: %w", sock, err)
	}
	if _, err := b.engine.negotiate(ctx); err != nil {
		return err
	}
	if _, err := b.imageID(ctx); err != nil {
		return err
	}
	return nil
}

func (b *Backend) imageID(ctx context.Context) (string, error) {
	var img struct {
		ID string `json:"Id"`
	}
	err := b.engine.call(ctx, "GET", "/images/"+b.set.Image+"/json", nil, nil, &img)
	if isStatus(err, 404) {
		return "", fmt.Errorf("image %q not found locally: docker import / load it (no registry is pulled from), or set sandbox.docker.image", b.set.Image)
	}
	if err != nil {
		return "", fmt.Errorf("inspecting image %q: %w", b.set.Image, err)
	}
	return img.ID, nil
}

// container is one running container, shared by the Sandboxes opened on
// its Spec.ID.
type container struct {
	id   string // engine's container id
	name string
	sid  string // Spec.ID
	hash string

	refs     int  // open Sandboxes on it
	replaced bool // removed for a changed spec, or closed

	mu     sync.Mutex
	killer *killer // see kill.go; nil until the first Start
}

// ensureKiller starts c's killer unless it runs.
func (c *container) ensureKiller(ctx context.Context, e *engine) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.killer != nil {
		select {
		case <-c.killer.p.done:
		default:
			return
		}
	}
	c.killer = startKiller(ctx, e, c)
}

// Open starts the container of spec.ID, or joins it when it runs with
// the same configuration. A container of the same ID with another
// configuration is replaced; Sandboxes still open on the old one fail
// their next Start.
func (b *Backend) Open(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	c, err := b.open(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("starting docker sandbox %s: %w", spec.ID, err)
	}
	return &box{b: b, c: c, limits: spec.Limits.WithDefaults()}, nil
}

func (b *Backend) open(ctx context.Context, spec sandbox.Spec) (*container, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if err := b.check(ctx); err != nil {
		return nil, err
	}
	lock := b.idLock(spec.ID)
	lock.Lock()
	defer lock.Unlock()
	b.sweep(ctx)

	cfg, err := b.config(ctx, spec)
	if err != nil {
		return nil, err
	}
	hash := specHash(cfg)
	cfg.Labels = map[string]string{labelSandbox: spec.ID, labelSpec: hash}
	name := b.set.ContainerPrefix + spec.ID

	// The engine, not memory, says whether the container still runs: it
	// may have been stopped, or left by another Talon process. One that
	// runs with the same configuration is joined; any other is replaced.
	var cur struct {
		ID     string `json:"Id"`
		Config struct{ Labels map[string]string }
		State  struct{ Running bool }
	}
	err = b.engine.call(ctx, "GET", "/containers/"+name+"/json", nil, nil, &cur)
	if err != nil && !isStatus(err, 404) {
		return nil, fmt.Errorf("inspecting container %s: %w", name, err)
	}
	exists := err == nil
	same := exists && cur.Config.Labels[labelSpec] == hash && cur.Config.Labels[labelSandbox] == spec.ID
	if same && !cur.State.Running {
		// Stopped (its processes all killed, or the engine restarted):
		// the same container starts again, workspace and all.
		same = b.engine.call(ctx, "POST", "/containers/"+cur.ID+"/start", nil, nil, nil) == nil
	}
	if same {
		b.mu.Lock()
		defer b.mu.Unlock()
		c := b.containers[spec.ID]
		if c != nil && c.id == cur.ID && !c.replaced {
			c.refs++
			return c, nil
		}
		if c != nil {
			c.replaced = true
		}
		c = &container{id: cur.ID, name: name, sid: spec.ID, hash: hash, refs: 1}
		b.containers[spec.ID] = c
		return c, nil
	}
	b.mu.Lock()
	if old := b.containers[spec.ID]; old != nil {
		old.replaced = true
		delete(b.containers, spec.ID)
	}
	b.mu.Unlock()
	if exists {
		if err := b.remove(ctx, cur.ID); err != nil {
			return nil, fmt.Errorf("removing the outdated container %s: %w", name, err)
		}
	}
	c, err := b.create(ctx, spec.ID, name, hash, cfg, spec.Limits.WithDefaults().Timeout)
	if err != nil {
		return nil, err
	}
	c.sid = spec.ID
	b.mu.Lock()
	b.containers[spec.ID] = c
	b.mu.Unlock()
	return c, nil
}

func (b *Backend) idLock(id string) *sync.Mutex {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.locks[id]
	if l == nil {
		l = &sync.Mutex{}
		b.locks[id] = l
	}
	return l
}

// sweep removes, once per Backend, the Talon containers that no longer
// run: left by a Talon that crashed or by a stopped engine. Running ones
// may belong to another Talon process and stay.
func (b *Backend) sweep(ctx context.Context) {
	b.mu.Lock()
	done := b.swept
	b.swept = true
	b.mu.Unlock()
	if done {
		return
	}
	filters, _ := json.Marshal(map[string][]string{
		"label":  {labelSandbox},
		"status": {"created", "exited", "dead"},
	})
	var list []struct {
		ID string `json:"Id"`
	}
	q := url.Values{"all": {"1"}, "filters": {string(filters)}}
	if err := b.engine.call(ctx, "GET", "/containers/json", q, nil, &list); err != nil {
		return // best effort: a failure here fails the create that follows anyway
	}
	for _, c := range list {
		_ = b.remove(ctx, c.ID)
	}
}

func (b *Backend) remove(ctx context.Context, id string) error {
	return b.engine.removeContainer(ctx, id)
}

// createConfig is the body of POST /containers/create.
type createConfig struct {
	Image      string
	Cmd        []string
	Env        []string
	User       string
	WorkingDir string
	Labels     map[string]string `json:",omitempty"`
	HostConfig hostConfig
	// ImageID is not sent: it is part of the hash, so re-importing the
	// image replaces the containers that run the old one.
	ImageID string `json:"-"`
}

type hostConfig struct {
	NetworkMode    string
	ReadonlyRootfs bool
	Init           bool
	Memory         int64
	MemorySwap     int64
	PidsLimit      int64
	NanoCpus       int64 `json:",omitempty"`
	CapDrop        []string
	SecurityOpt    []string
	Mounts         []mount
	Tmpfs          map[string]string
	Ulimits        []ulimit
	DNS            []string `json:"Dns,omitempty"`
	ExtraHosts     []string `json:",omitempty"`
}

type mount struct {
	Type        string
	Source      string
	Target      string
	ReadOnly    bool
	BindOptions struct{ Propagation string }
}

// config is the container spec describes.
func (b *Backend) config(ctx context.Context, spec sandbox.Spec) (createConfig, error) {
	s := b.set
	lim := spec.Limits.WithDefaults()
	user, err := b.user(spec.Root)
	if err != nil {
		return createConfig{}, err
	}
	imgID, err := b.imageID(ctx)
	if err != nil {
		return createConfig{}, err
	}
	cfg := createConfig{
		Image: s.Image,
		// docker-init (Init) is PID 1 and reaps what commands leave
		// behind; this loop only keeps the container up.
		Cmd: []string{"/bin/sh", "-c", "while :; do sleep 86400; done"},
		Env: append([]string{
			"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			// HOME is on the tmpfs: the root is read-only, and dot files
			// do not belong in the workspace.
			"HOME=/tmp",
			"LANG=C.UTF-8",
		}, s.Env...),
		User:       user,
		WorkingDir: sandbox.Workdir,
		ImageID:    imgID,
	}
	h := &cfg.HostConfig
	h.NetworkMode = "none"
	if spec.Network {
		h.NetworkMode = s.Network
		if h.NetworkMode == "none" {
			h.NetworkMode = "bridge"
		}
		h.DNS, h.ExtraHosts = s.DNS, s.ExtraHosts
	}
	h.ReadonlyRootfs = s.ReadOnlyRoot
	h.Init = true
	h.Memory = orDefault(s.Memory, lim.Memory)
	h.MemorySwap = orDefault(s.MemorySwap, h.Memory)
	// limits.processes is what commands may use: the container's own
	// processes (docker-init, the keep-alive loop and its sleep, the
	// killer) come on top. OpenClaw's pidsLimit is the container's total.
	h.PidsLimit = orDefault(s.PidsLimit, int64(lim.Processes)+ownProcesses)
	h.NanoCpus = s.NanoCPUs
	h.CapDrop = s.CapDrop
	h.SecurityOpt = append([]string{"no-new-privileges"}, s.SecurityOpt...)
	h.Mounts = append(h.Mounts, bind(spec.Root, sandbox.Workdir, false))
	for _, m := range append(slices.Clone(spec.Mounts), s.Binds...) {
		if _, err := os.Stat(m.Source); err != nil {
			return createConfig{}, fmt.Errorf("mount source: %w", err)
		}
		h.Mounts = append(h.Mounts, bind(m.Source, path.Clean(m.Target), m.ReadOnly))
	}
	tmpfsSize := h.Memory
	if tmpfsSize <= 0 { // docker.memory -1: the container has no limit
		tmpfsSize = lim.Memory
	}
	h.Tmpfs = tmpfsMounts(s.Tmpfs, tmpfsSize)
	cpu := max(1, int64((lim.CPUTime+time.Second-1)/time.Second)) // 0 would kill at once
	ul := map[string]ulimit{
		"nofile": {Name: "nofile", Soft: int64(lim.OpenFiles), Hard: int64(lim.OpenFiles)},
		"fsize":  {Name: "fsize", Soft: lim.FileSize, Hard: lim.FileSize},
		"cpu":    {Name: "cpu", Soft: cpu, Hard: cpu},
	}
	for n, u := range s.Ulimits {
		ul[n] = u
	}
	for _, n := range sortedKeys(ul) {
		h.Ulimits = append(h.Ulimits, ul[n])
	}
	return cfg, nil
}

// tmpfsMounts are the container's tmpfs mounts ("path" or
// "path:options") as the Engine takes them. One whose options set no size
// gets size bytes: the kernel's default is half the host's memory. The
// container's memory cgroup counts tmpfs pages too, but a tmpfs bounded
// on its own fails a write with ENOSPC, not by an OOM kill of whatever
// process the kernel picks, and still holds with memorySwap -1.
func tmpfsMounts(list []string, size int64) map[string]string {
	m := map[string]string{}
	for _, t := range list {
		p, opts, _ := strings.Cut(t, ":")
		if opts == "" {
			opts = "rw,nosuid,nodev,exec,mode=1777"
		}
		sized := false
		for _, o := range strings.Split(opts, ",") {
			k, _, _ := strings.Cut(o, "=")
			sized = sized || k == "size" || k == "nr_blocks"
		}
		if !sized {
			opts += fmt.Sprintf(",size=%dk", max(size>>10, 1))
		}
		m[path.Clean(p)] = opts
	}
	return m
}

func orDefault(setting, fallback int64) int64 {
	if setting != 0 {
		return setting
	}
	return fallback
}

func bind(src, dst string, ro bool) mount {
	m := mount{Type: "bind", Source: src, Target: dst, ReadOnly: ro}
	m.BindOptions.Propagation = "rprivate"
	return m
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// user is who commands run as: the user setting, else the owner of the
// workspace, so that what commands write belongs to the same host user
// as the workspace itself, and the fs tools can edit it. A workspace
// owned by root is refused rather than run as root: the container would
// then run as root or be unable to write its own workspace.
func (b *Backend) user(root string) (string, error) {
	if b.set.User != "" {
		return b.set.User, nil
	}
	fi, err := os.Stat(root)
	if err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("workspace %s is not a directory", root)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", fmt.Errorf("workspace %s: cannot read its owner", root)
	}
	if st.Uid == 0 {
		return "", fmt.Errorf("workspace %s is owned by root, and sandboxed commands do not run as root: run Talon as a user other than root, chown the workspace to the user commands should run as (for example chown -R 65534:65534 %s), or set agents.defaults.sandbox.docker.user to a user who can write it", root, root)
	}
	return strconv.FormatUint(uint64(st.Uid), 10) + ":" + strconv.FormatUint(uint64(st.Gid), 10), nil
}

// specHash names a container configuration; it is the talon.spec label.
func specHash(cfg createConfig) string {
	b, _ := json.Marshal(struct {
		C       createConfig
		ImageID string
	}{cfg, cfg.ImageID})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// create creates and starts a container, and runs the setup command in
// it. A container that fails any step is removed.
func (b *Backend) create(ctx context.Context, sid, name, hash string, cfg createConfig, timeout time.Duration) (*container, error) {
	var created struct {
		ID       string `json:"Id"`
		Warnings []string
	}
	err := b.engine.call(ctx, "POST", "/containers/create", url.Values{"name": {name}}, cfg, &created)
	if err != nil {
		return nil, fmt.Errorf("creating container %s: %w", name, err)
	}
	c := &container{id: created.ID, name: name, sid: sid, hash: hash, refs: 1}
	fail := func(err error) (*container, error) {
		_ = b.remove(context.WithoutCancel(ctx), c.id)
		return nil, err
	}
	// The engine drops a limit the kernel cannot enforce with only a
	// warning; a sandbox without its limits is not the one asked for.
	if len(created.Warnings) > 0 {
		return fail(fmt.Errorf("creating container %s: the engine would not apply the whole configuration: %s", name, strings.Join(created.Warnings, "; ")))
	}
	if err := b.engine.call(ctx, "POST", "/containers/"+c.id+"/start", nil, nil, nil); err != nil {
		return fail(fmt.Errorf("starting container %s: %w", name, err))
	}
	if b.set.SetupCommand != "" {
		var out strings.Builder
		p, err := startExec(ctx, b.engine, c, sandbox.Command{
			Argv:   []string{"/bin/sh", "-lc", b.set.SetupCommand},
			Stdout: &out, Stderr: &out,
		}, timeout, nil)
		if err != nil {
			return fail(fmt.Errorf("running setupCommand in %s: %w", name, err))
		}
		if ex, err := p.Wait(); err != nil || ex.Code != 0 {
			return fail(fmt.Errorf("setupCommand in %s failed (exit %d, %v): %s", name, ex.Code, err, tail(out.String(), 2000)))
		}
	}
	return c, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// release drops one reference to c and removes the container with the
// last one.
func (b *Backend) release(c *container) error {
	b.mu.Lock()
	c.refs--
	last := c.refs == 0 && !c.replaced
	if last {
		c.replaced = true
		if b.containers[c.sid] == c {
			delete(b.containers, c.sid)
		}
	}
	b.mu.Unlock()
	if !last {
		return nil
	}
	c.mu.Lock()
	c.killer.close()
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := b.remove(ctx, c.id); err != nil {
		return fmt.Errorf("removing docker sandbox container %s: %w", c.name, err)
	}
	return nil
}
