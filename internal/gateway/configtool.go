package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"talon/internal/tools"
	"talon/protocol"
)

// configTools serves the gateway tool of tenant t's runs: the config file
// of t alone — there is no way to name another tenant's, or the root
// config from a tenant — read by snapshotConfig and patched by
// writeConfig, the functions behind the config.get and config.patch
// methods, so the model's reads are redacted and its writes checked
// (baseHash, schema, the operator's ceiling, atomic write) exactly as a
// client's of the same tenant. What it answers is shown to t as the WS
// edge shows it: without host paths.
type configTools struct {
	s *Server
	t *tenant
}

var _ tools.Configs = configTools{}

func (x configTools) file(ctx context.Context) (configFile, error) {
	if err := ctx.Err(); err != nil {
		return configFile{}, err
	}
	rt, err := x.t.current(x.s)
	if err != nil {
		return configFile{}, err
	}
	return configFile{t: x.t, rt: rt}, nil
}

func (x configTools) Get(ctx context.Context) (json.RawMessage, error) {
	cf, err := x.file(ctx)
	if err != nil {
		return nil, x.modelErr(err)
	}
	snap, err := snapshotConfig(cf)
	if err != nil {
		return nil, x.modelErr(err)
	}
	return x.encode(snap)
}

func (x configTools) Patch(ctx context.Context, raw, baseHash string) (json.RawMessage, error) {
	const m = "config.patch"
	cf, err := x.file(ctx)
	if err != nil {
		return nil, x.modelErr(err)
	}
	in, err := parseRaw(m, raw)
	if err != nil {
		return nil, x.modelErr(err)
	}
	out, err := writeConfig(cf, m, in, baseHash)
	if err != nil {
		return nil, x.modelErr(err)
	}
	return x.encode(out)
}

func (x configTools) encode(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding the config: %w", err)
	}
	return x.t.hide(b), nil
}

// modelErr is err as the model reads it: a refusal's message, with the
// file's hash now when the baseHash was stale, and no host path.
func (x configTools) modelErr(err error) error {
	msg := err.Error()
	var pe *protocol.Error
	if errors.As(err, &pe) {
		msg = pe.Message
		if d, ok := pe.Details.(map[string]any); ok {
			if h, ok := d["hash"].(string); ok {
				msg += " (the config's hash is now " + h + ")"
			}
		}
	}
	return errors.New(x.t.hideString(msg))
}
