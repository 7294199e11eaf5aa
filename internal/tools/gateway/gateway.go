// Package gateway is the gateway tool (owner-only, as OpenClaw's): an
// agent reads the config of its own gateway tenant, as the config.get
// method shows it (secrets redacted), and changes it with a patch through
// the same checks as the config.patch method — the baseHash it read,
// validation, the operator's ceiling for tenants, an atomic write. The
// gateway (tools.Configs) does both; this package checks the model's
// arguments, narrows a read to a path and caps the result. OpenClaw's
// config.schema.lookup and update.run, and the restart of older builds,
// are not built in Talon: they are not in the schema, and a call naming
// one is refused saying so. Safe for concurrent use.
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"talon/internal/config"
	"talon/internal/tools"
)

// New returns the gateway tool.
func New() tools.Tool { return tool{} }

type tool struct{}

var _ tools.Tool = tool{}

func (tool) Name() string { return "gateway" }

func (tool) Description() string {
	return "Read and change this gateway's config. config.get shows it with secrets redacted and its hash; path (agents.list[0].tools) narrows it to a subtree. " +
		"config.patch merges raw, a JSON5 object, into the config (objects merge, null deletes a key, arrays replace, arrays of objects with an id merge by id); " +
		"baseHash must be the hash config.get gave you, else re-read and retry. Redacted values sent back keep the stored secret. " +
		"A change applies from the next turn; Talon needs no restart. Never edit the config file with a shell."
}

// actions are the actions Talon has; notBuilt are OpenClaw's others (and
// those of older builds), each with why it is missing.
var (
	actions  = []string{"config.get", "config.patch"}
	notBuilt = map[string]string{
		"config.schema.lookup": "Talon has no config schema to look up; config.patch names each key it refuses and why",
		"config.schema":        "Talon has no config schema to look up; config.patch names each key it refuses and why",
		"update.run":           "the operator updates the talon binary",
		"restart":              "a config change applies from the next turn without one",
		"config.apply":         "replace keys with config.patch",
		"config.set":           "replace keys with config.patch",
	}
)

var schema = tools.Object(
	tools.Prop{Name: "action", Type: tools.TypeString, Required: true, Enum: actions, Description: "config.get to read, config.patch to change"},
	tools.Prop{Name: "path", Type: tools.TypeString, Description: "config.get: the dotted path of a subtree, such as tools.web.search or agents.list[0]"},
	tools.Prop{Name: "raw", Type: tools.TypeString, Description: `config.patch: a JSON5 object, as a string, to merge into the config, such as {tools: {web: {search: {maxResults: 8}}}}`},
	tools.Prop{Name: "baseHash", Type: tools.TypeString, Description: "config.patch: the hash config.get returned"},
)

func (tool) Schema() json.RawMessage { return schema }

// Limits on what the model passes and is shown. maxResult is OpenClaw's
// MAX_GATEWAY_CONFIG_GET_TEXT_CHARS.
const (
	maxRaw    = 64 << 10
	maxPath   = 500
	maxResult = 12000
)

// request is one checked call.
type request struct {
	action, path, raw, baseHash string
}

func (tool) Run(ctx context.Context, env *tools.Env, raw json.RawMessage) (tools.Result, error) {
	r, err := parse(raw)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	// Defence in depth: the policy removes owner-only tools from a run
	// whose sender is not an owner, so this is reached only if that fails.
	switch {
	case env == nil || !env.Owner:
		return tools.Errorf("gateway: Tool restricted to owner senders."), nil
	case env.Configs == nil:
		return tools.Errorf("gateway: this run cannot reach the gateway's config"), nil
	}
	if r.action == "config.patch" {
		out, err := env.Configs.Patch(ctx, r.raw, r.baseHash)
		if err != nil {
			return tools.ErrorResult(fmt.Errorf("gateway: config.patch: %w", err)), nil
		}
		return patched(out)
	}
	snap, err := env.Configs.Get(ctx)
	if err != nil {
		return tools.ErrorResult(fmt.Errorf("gateway: config.get: %w", err)), nil
	}
	return got(snap, r.path)
}

// parse checks the model's arguments.
func parse(raw json.RawMessage) (request, error) {
	var r request
	a, err := tools.ParseArgsFor(raw, schema)
	if err != nil {
		return r, err
	}
	// Name an action Talon lacks before the enum check would only list
	// the ones it has.
	if s, _ := a.String("action", false); notBuilt[s] != "" {
		return r, fmt.Errorf("gateway: %s is not built in Talon: %s", s, notBuilt[s])
	}
	if r.action, err = a.StringEnum("action", true, actions...); err != nil {
		return r, err
	}
	str := func(name string, limit int) (string, error) {
		v, err := a.String(name, false)
		if err == nil && len(v) > limit {
			err = fmt.Errorf("gateway: %s is over %d bytes", name, limit)
		}
		return strings.TrimSpace(v), err
	}
	if r.path, err = str("path", maxPath); err != nil {
		return r, err
	}
	if r.raw, err = str("raw", maxRaw); err != nil {
		return r, err
	}
	if r.baseHash, err = str("baseHash", 128); err != nil {
		return r, err
	}
	switch {
	case r.action == "config.patch" && r.raw == "":
		return r, errors.New(`gateway: config.patch needs raw, a JSON5 object as a string, such as {tools: {profile: "coding"}}`)
	case r.action == "config.patch" && r.path != "":
		return r, errors.New("gateway: path is for config.get; config.patch takes the change in raw, from the config's root")
	case r.action == "config.get" && (r.raw != "" || r.baseHash != ""):
		return r, errors.New("gateway: raw and baseHash are for config.patch")
	}
	return r, nil
}

// got is config.get's result as OpenClaw's tool gives it: {ok, result},
// where result is the snapshot, or with path {hash, path, config} of the
// subtree; refused when it is too long for the model.
func got(snapshot json.RawMessage, path string) (tools.Result, error) {
	result := snapshot
	if path != "" {
		var snap struct {
			Hash   string          `json:"hash"`
			Config json.RawMessage `json:"config"`
		}
		if err := json.Unmarshal(snapshot, &snap); err != nil {
			return tools.Result{}, fmt.Errorf("gateway: reading config.get's snapshot: %w", err)
		}
		tree, err := config.FromJSON(snap.Config)
		if err != nil {
			return tools.Result{}, fmt.Errorf("gateway: reading config.get's config: %w", err)
		}
		v := lookup(tree, path)
		if v == nil {
			return tools.Errorf("gateway: config path not found: %s", path), nil
		}
		if result, err = json.Marshal(struct {
			Hash   string        `json:"hash,omitempty"`
			Path   string        `json:"path"`
			Config *config.Value `json:"config"`
		}{snap.Hash, path, v}); err != nil {
			return tools.Result{}, fmt.Errorf("gateway: encoding the subtree: %w", err)
		}
	}
	text, err := okText(result)
	if err != nil {
		return tools.Result{}, err
	}
	if len(text) > maxResult {
		return tools.Errorf("gateway: config.get response is too large; use path to request a narrower config subtree"), nil
	}
	return tools.Result{Text: text}, nil
}

// patched is config.patch's result: the write's answer without the
// config it wrote, which config.get shows — a large config would
// otherwise hide that the write succeeded, and the new hash.
func patched(out json.RawMessage) (tools.Result, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(out, &m); err != nil {
		return tools.Result{}, fmt.Errorf("gateway: reading config.patch's answer: %w", err)
	}
	delete(m, "config")
	b, err := json.Marshal(m)
	if err != nil {
		return tools.Result{}, fmt.Errorf("gateway: encoding config.patch's answer: %w", err)
	}
	text, err := okText(b)
	if err != nil {
		return tools.Result{}, err
	}
	return tools.Result{Text: text}, nil
}

// okText is {"ok": true, "result": result}, indented as OpenClaw's.
func okText(result json.RawMessage) (string, error) {
	b, err := json.MarshalIndent(struct {
		OK     bool            `json:"ok"`
		Result json.RawMessage `json:"result"`
	}{true, result}, "", "  ")
	if err != nil {
		return "", fmt.Errorf("gateway: encoding the result: %w", err)
	}
	return string(b), nil
}

// lookup follows path — keys split at dots, [n] an array index — as
// OpenClaw's config.get path does; nil when a step is missing.
func lookup(v *config.Value, path string) *config.Value {
	parts := strings.FieldsFunc(path, func(r rune) bool { return r == '.' || r == '[' || r == ']' })
	if len(parts) == 0 {
		return nil
	}
	for _, part := range parts {
		switch {
		case v == nil:
			return nil
		case v.Kind == config.Array:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(v.Items) {
				return nil
			}
			v = v.Items[i]
		default:
			v = v.Get(part)
		}
	}
	return v
}
