package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"talon/internal/talonproc"
)

// Token is the gateway.auth.token of every config the harness writes.
const Token = "bench-token"

// UpstreamKey is the API key the configs give the fake LLMs, which
// require it: a gateway that does not pass it on fails the run.
const UpstreamKey = "sk-bench"

// The agents of the configs the harness writes, each on its own fake.
const (
	agentPlain  = "main"   // the default agent, on Upstreams.Plain
	agentReader = "reader" // on Upstreams.Tool, with its own workspace
	agentSlow   = "slow"   // on Upstreams.Slow
)

// readFile is the file the tool-call turns read, in the reader's workspace.
const readFile = "bench-read.txt"

// Upstreams are the fake LLMs' base URLs a gateway config points at; an
// empty one is left out of the config with its agent.
type Upstreams struct {
	Plain string // provider "fake"; the default agent "main"
	Tool  string // provider "faketool"; agent "reader"
	Slow  string // provider "fakeslow"; agent "slow"
}

// upstream is one provider+agent pair of a config.
type upstream struct{ provider, agent, url string }

func (u Upstreams) list() []upstream {
	var out []upstream
	for _, x := range []upstream{{"fake", agentPlain, u.Plain}, {"faketool", agentReader, u.Tool}, {"fakeslow", agentSlow, u.Slow}} {
		if x.url != "" {
			out = append(out, x)
		}
	}
	return out
}

// config builds a config's models.providers and agents.list, one entry
// each per upstream, with provider entries and model references in the
// gateway's own shape: the default agent main, the reader with its own
// workspace.
func (u Upstreams) config(stateDir string, provider func(url string) map[string]any, model func(ref string) any) (map[string]any, []any) {
	providers := map[string]any{}
	var agents []any
	for _, x := range u.list() {
		providers[x.provider] = provider(x.url)
		a := map[string]any{"id": x.agent, "model": model(x.provider + "/fake-model")}
		switch x.agent {
		case agentPlain:
			a["default"] = true
		case agentReader:
			a["workspace"] = readerWorkspace(stateDir)
		}
		agents = append(agents, a)
	}
	return providers, agents
}

// readerWorkspace is the reader agent's workspace; both gateways' configs
// name it explicitly, since their defaults for a second agent differ.
func readerWorkspace(stateDir string) string {
	return filepath.Join(stateDir, "workspace-"+agentReader)
}

// WriteConfig writes stateDir/talon.json in OpenClaw's shape: token auth,
// one provider per upstream (api openai-completions, model fake-model),
// the default agent main on provider "fake", and an agent per other
// upstream.
func WriteConfig(stateDir string, u Upstreams) error {
	return writeState(stateDir, "talon.json", talonConfig(stateDir, u, Token), u.Tool != "")
}

// talonConfig is the config WriteConfig writes, with token as the
// gateway's secret.
func talonConfig(stateDir string, u Upstreams, token string) map[string]any {
	providers, agents := u.config(stateDir, talonProvider, func(ref string) any { return ref })
	return map[string]any{
		"gateway": map[string]any{"auth": map[string]any{"mode": "token", "token": token}},
		"models":  map[string]any{"providers": providers},
		"agents":  map[string]any{"defaults": map[string]any{"model": "fake/fake-model"}, "list": agents},
	}
}

// talonProvider is a models.providers entry for a fake at url.
func talonProvider(url string) map[string]any {
	return map[string]any{"baseUrl": url, "api": "openai-completions", "apiKey": UpstreamKey,
		"models": []any{map[string]any{"id": "fake-model"}}}
}

// writeState writes a config into a new state dir and, when the reader
// agent is configured, the file its tool call reads.
func writeState(stateDir, name string, cfg any, reader bool) error {
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the config: %w", err)
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return fmt.Errorf("creating the state dir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(stateDir, name), b, 0o600); err != nil {
		return fmt.Errorf("writing the config: %w", err)
	}
	if reader {
		ws := readerWorkspace(stateDir)
		if err := os.MkdirAll(ws, 0o700); err != nil {
			return fmt.Errorf("creating the reader's workspace: %w", err)
		}
		if err := os.WriteFile(filepath.Join(ws, readFile), []byte(readMarker+"\n"), 0o600); err != nil {
			return fmt.Errorf("writing the file the tool call reads: %w", err)
		}
	}
	return nil
}

// readMarker is the text of readFile; a tool result without it means the
// read did not happen.
const readMarker = "talon bench: the read tool returned this line"

// StartTalon starts `bin serve --state-dir stateDir` (the config must be
// there) with HOME pointing at the state dir and no TALON_ variable from
// the caller's environment, and waits for /readyz 200, polling every
// 0.2 ms so that the start time is exact to that.
func StartTalon(bin, stateDir string) (*talonproc.Proc, error) {
	p, err := talonproc.Start(talonproc.Options{
		Bin: bin, StateDir: stateDir, Env: talonEnv(stateDir), ReadyTimeout: 10 * time.Second, PollEvery: 200 * time.Microsecond,
	})
	if err != nil {
		return nil, fmt.Errorf("starting talon serve: %w", err)
	}
	return p, nil
}

// talonEnv is the environment of a measured talon: the caller's without
// any TALON_ variable, and HOME the state dir.
func talonEnv(stateDir string) []string {
	return append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "TALON_") || strings.HasPrefix(kv, "HOME=")
	}), "HOME="+stateDir)
}

// talonTarget is the talon binary at bin as a target.
func talonTarget(bin string) *target {
	return &target{
		name: "talon", binary: bin, token: Token, turnTimeout: time.Minute, stopTimeout: 30 * time.Second,
		start: func(stateDir string, u Upstreams) (*talonproc.Proc, error) {
			if err := WriteConfig(stateDir, u); err != nil {
				return nil, err
			}
			return StartTalon(bin, stateDir)
		},
		goroutines: func(ctx context.Context, p *talonproc.Proc) (int, error) { return p.Goroutines(ctx, Token) },
	}
}
