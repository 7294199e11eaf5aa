package plugin

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"talon/internal/netguard"
	"talon/internal/plugin/yamltool"
	"talon/internal/tools"
)

// APITools is the id of the bundled plugin that turns the agent
// workspace's YAML files into tools (internal/plugin/apitools). Its entry
// config (APIToolsConfig) also grants on-disk plugins' YAML tools their
// process variables.
const APITools = "api-tools"

// apiToolsDir is the folder of YAML tools, in an agent workspace or an
// on-disk plugin.
const apiToolsDir = "api-tools"

// Bounds on a folder of YAML tools and on what a call reads back.
const (
	maxToolFiles    = 200
	maxToolFile     = 256 << 10
	maxResponseBody = 1 << 20
)

// YAMLTools loads the tools of root's api-tools/ folder for run, as the
// host loads an on-disk plugin's: with the config's env, and the process
// variables cfg grants. The api-tools plugin gives it the agent
// workspace. A file that does not load is an error naming it, and the
// others still load.
func (p *Provision) YAMLTools(root string, run Run, cfg APIToolsConfig) ([]Tool, error) {
	ts, errs := p.host.yamlTools(filepath.Join(root, apiToolsDir), yamlEnv(run, cfg))
	if len(errs) > 0 {
		return ts, errors.New(strings.Join(errs, "; "))
	}
	return ts, nil
}

// yamlCache keeps parsed YAML tools by path, valid while the file's size
// and mtime stay the same.
type yamlCache struct {
	mu sync.Mutex
	m  map[string]yamlEntry
}

type yamlEntry struct {
	size int64
	mod  time.Time
	tool *yamltool.Tool
	err  error
}

// yamlTools loads the *.yaml and *.yml files of dir (not following
// symlinks), one tool each; each file that does not load is an error
// naming it, and the others still load.
func (h *Host) yamlTools(dir string, env toolEnv) ([]Tool, []string) {
	if err := h.confined(dir); err != nil {
		return nil, []string{err.Error()}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, []string{fmt.Sprintf("reading %s: %v", dir, err)}
	}
	var (
		out  []Tool
		errs []string
		n    int
	)
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, e := range entries {
		name := e.Name()
		if ext := filepath.Ext(name); ext != ".yaml" && ext != ".yml" {
			continue
		}
		if n++; n > maxToolFiles {
			errs = append(errs, fmt.Sprintf("%s: more than %d tool files; the rest are ignored", dir, maxToolFiles))
			break
		}
		t, err := h.yamlTool(filepath.Join(dir, name))
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s/%s: %v", apiToolsDir, name, err))
			continue
		}
		out = append(out, Tool{Tool: &apiTool{t: t, h: h, env: env}})
	}
	return out, errs
}

func (h *Host) yamlTool(path string) (*yamltool.Tool, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file (symlinks are not followed)")
	}
	c := &h.yaml
	c.mu.Lock()
	e, ok := c.m[path]
	c.mu.Unlock()
	if ok && e.size == fi.Size() && e.mod.Equal(fi.ModTime()) {
		return e.tool, e.err
	}
	e = yamlEntry{size: fi.Size(), mod: fi.ModTime()}
	data, err := readRegular(path, maxToolFile)
	if err == nil {
		e.tool, err = yamltool.Parse(filepath.Base(path), data)
	}
	e.err = err
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]yamlEntry{}
	}
	c.m[path] = e
	c.mu.Unlock()
	return e.tool, e.err
}

// apiTool sends one YAML tool's request through the network guard, with
// the env of the run's config. Everything it returns passes through the
// call's Redact: the model never sees an env value, whether our message
// quotes the URL or the server echoes what it received.
type apiTool struct {
	t   *yamltool.Tool
	h   *Host
	env toolEnv
}

var _ tools.Tool = (*apiTool)(nil)

func (a *apiTool) Name() string            { return a.t.Name }
func (a *apiTool) Description() string     { return a.t.Description }
func (a *apiTool) Schema() json.RawMessage { return a.t.Schema() }

func (a *apiTool) Run(ctx context.Context, env *tools.Env, raw json.RawMessage) (tools.Result, error) {
	var args map[string]any
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&args); err != nil || args == nil {
		return tools.Errorf("%s: arguments must be a JSON object", a.t.Name), nil
	}
	call, err := a.t.Request(args, a.env.lookup)
	if unset, ok := errors.AsType[*yamltool.EnvUnsetError](err); ok {
		return tools.Errorf("%v: %s", unset, a.env.hint), nil
	}
	if err != nil {
		return tools.Errorf("%v", err), nil
	}
	ctx, cancel := context.WithTimeout(ctx, a.t.Timeout)
	defer cancel()
	base := a.h.client(env.AllowLoopback)
	client := *base
	client.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		if err := base.CheckRedirect(r, via); err != nil {
			return err
		}
		if !a.t.AllowsHost(r.URL.Hostname()) {
			return fmt.Errorf("redirect to %s: host is not in allowed_hosts", r.URL.Hostname())
		}
		return nil
	}
	resp, err := client.Do(call.Req.WithContext(ctx))
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return tools.Errorf("%s: no answer within %s", a.t.Name, a.t.Timeout), nil
		}
		return tools.Errorf("%s: request refused or failed: %s", a.t.Name, call.Error(err)), nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBody))
	if err != nil {
		return tools.Errorf("%s: reading the answer: %s", a.t.Name, call.Error(err)), nil
	}
	text := call.Redact(a.t.Summarize(resp.StatusCode, body))
	return tools.Result{Text: text, IsError: resp.StatusCode < 200 || resp.StatusCode > 299}, nil
}

// clients are the host's guarded HTTP clients, one per loopback setting,
// so connections are reused across calls.
type clients struct {
	mu sync.Mutex
	c  [2]*http.Client
}

func (h *Host) client(loopback bool) *http.Client {
	c := &h.clients
	i := 0
	if loopback {
		i = 1
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.c[i] == nil {
		// The per-call context carries each tool's own timeout.
		cl := netguard.NewClient(netguard.Options{AllowLoopback: loopback, Timeout: yamltool.MaxTimeout, Resolver: h.opts.Resolver})
		if h.opts.RootCAs != nil {
			cl.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: h.opts.RootCAs, MinVersion: tls.VersionTLS12}
		}
		c.c[i] = cl
	}
	return c.c[i]
}

func (c *clients) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cl := range c.c {
		if cl != nil {
			cl.CloseIdleConnections()
		}
	}
}
