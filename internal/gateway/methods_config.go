package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"talon/internal/atomicfile"
	"talon/internal/config"
	"talon/protocol"
)

// The config file over the control plane (gateway-protocol.md §6):
// config.get shows it with secrets redacted; config.patch merges into it,
// config.set and config.apply replace it. Writes are hash-guarded and
// atomic, and Talon does not restart after one: the tenant's next call or
// turn re-reads the file (tenant.current), so clients need not reconnect.
func init() {
	register("config.get", protocol.ScopeRead, configGet)
	register("config.patch", protocol.ScopeAdmin, configPatch)
	register("config.set", protocol.ScopeAdmin, configSet)
	register("config.apply", protocol.ScopeAdmin, configApply)
}

// configIssue is an issue as clients read it.
type configIssue struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

func issuesOf(in []config.Issue) []configIssue {
	out := make([]configIssue, 0, len(in))
	for _, is := range in {
		out = append(out, configIssue{Path: is.Path, Message: is.Message})
	}
	return out
}

// diskConfig is the config file as it is on disk now.
type diskConfig struct {
	raw    []byte
	exists bool
	hash   string
	// file is nil when the file does not parse.
	file *config.File
	// issues say why the file is not valid: a syntax error, type and
	// value errors.
	issues []config.Issue
	// beyond are a tenant's keys beyond the operator's ceiling: the file
	// is valid and in force held to the ceiling; a write must not keep
	// them.
	beyond []config.Issue
}

// configFile is a tenant's config file as the config methods and the
// gateway tool reach it: t's, whose writes are held to the ceiling of the
// root config of rt (the runtime in force). Both go through the functions
// below, so a model's patch is checked exactly as a client's.
type configFile struct {
	t  *tenant
	rt *runtime
}

// file is the config file of the call's tenant.
func (c *call) file() configFile { return configFile{t: c.t, rt: c.rt} }

// readConfig reads the tenant's config file afresh, not the version in
// force: a file that does not load leaves the last good one in force
// (tenant.current), and this is what a client must see and repair.
func readConfig(cf configFile) (*diskConfig, error) {
	t := cf.t
	raw, err := os.ReadFile(t.configPath)
	if errors.Is(err, fs.ErrNotExist) {
		return &diskConfig{hash: config.Hash(nil), file: &config.File{
			Path: t.configPath, Hash: config.Hash(nil), Tree: config.NewObject(), Config: &config.Config{},
		}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading config %s: %w", t.configPath, err)
	}
	d := &diskConfig{raw: raw, exists: true, hash: config.Hash(raw)}
	f, err := config.Parse(t.configPath, raw)
	var ve *config.ValidationError
	switch {
	case f == nil:
		d.issues = []config.Issue{{Path: "(root)", Message: err.Error()}}
		return d, nil
	case errors.As(err, &ve):
		d.issues = append(d.issues, ve.Issues...)
	case err != nil:
		d.issues = []config.Issue{{Path: "(root)", Message: err.Error()}}
	}
	d.file = f
	d.beyond = tenantIssues(cf, f.Tree)
	return d, nil
}

// tenantIssues are the keys of a tenant's config beyond the operator's
// ceiling (internal/ceiling): sandbox, network, programs, plugins and
// paths. A write with any is refused; the default tenant has none.
func tenantIssues(cf configFile, tree *config.Value) []config.Issue {
	if cf.rt.root == nil {
		return nil
	}
	var out []config.Issue
	for _, v := range cf.rt.root.ceil.Apply(tree, cf.t.dir).Violations {
		out = append(out, config.Issue{Path: v.Path, Message: "beyond the operator's ceiling for tenants: " + v.Message})
	}
	return out
}

// invalidErr is the error for a config that does not validate, with the
// issues in details as OpenClaw sends them.
func invalidErr(msg string, issues []config.Issue) *protocol.Error {
	return &protocol.Error{Code: protocol.CodeInvalidRequest, Message: msg, Details: map[string]any{"issues": issuesOf(issues)}}
}

// mustBeValid refuses to edit a config that does not load: a merge into a
// broken file could not be checked against what the client saw.
func (d *diskConfig) mustBeValid() error {
	if len(d.issues) > 0 {
		return invalidErr("invalid config; fix before patching", d.issues)
	}
	return nil
}

// checkBaseHash applies §6's guard: a file that exists may only be
// replaced by a client that read this version of it. A blank or
// non-string baseHash counts as absent. A mismatch's details carry the
// file's hash now (OpenClaw's message is kept as it is).
func (d *diskConfig) checkBaseHash(v any) error {
	if !d.exists {
		return nil
	}
	h, _ := v.(string)
	switch h = strings.TrimSpace(h); {
	case h == "":
		return protocol.Errorf("config base hash required; re-run config.get and retry")
	case h != d.hash:
		e := protocol.Errorf("config changed since last load; re-run config.get and retry")
		e.Details = map[string]any{"hash": d.hash}
		return e
	}
	return nil
}

// configTx is one write of a tenant's config file: it holds the tenant's
// write lock from begin to done, so the file read at the start is the one
// replaced (unless something outside this gateway writes it meanwhile).
type configTx struct {
	t   *tenant
	cf  configFile
	cur *diskConfig
}

func beginConfig(cf configFile) (*configTx, error) {
	t := cf.t
	t.writeMu.Lock()
	cur, err := readConfig(cf)
	if err != nil {
		t.writeMu.Unlock()
		return nil, err
	}
	return &configTx{t: t, cf: cf, cur: cur}, nil
}

func (tx *configTx) done() { tx.t.writeMu.Unlock() }

// beginEdit begins a write that edits the config, which must be valid.
func beginEdit(c *call) (*configTx, error) {
	tx, err := beginConfig(c.file())
	if err != nil {
		return nil, err
	}
	if err := tx.cur.mustBeValid(); err != nil {
		tx.done()
		return nil, err
	}
	return tx, nil
}

// check validates the tree that is to be written, exactly as it will be
// written, and returns it loaded.
func (tx *configTx) check(next *config.Value) (*config.File, error) {
	f, err := config.Parse(tx.t.configPath, next.Indented())
	if f == nil {
		return nil, fmt.Errorf("re-reading the config to write: %w", err)
	}
	var issues []config.Issue
	var ve *config.ValidationError
	if errors.As(err, &ve) {
		issues = ve.Issues
	} else if err != nil {
		issues = []config.Issue{{Path: "(root)", Message: err.Error()}}
	}
	issues = append(issues, tenantIssues(tx.cf, f.Tree)...)
	if len(issues) > 0 {
		return nil, invalidErr((&config.ValidationError{Issues: issues}).Error(), issues)
	}
	return f, nil
}

// save writes f atomically, keeping the version it replaces as
// <config>.bak, and has the tenant's next call load it.
func (tx *configTx) save(f *config.File) error {
	path := tx.t.configPath
	if tx.cur.exists {
		if err := atomicfile.Write(path+".bak", tx.cur.raw, 0o600); err != nil {
			return &protocol.Error{Code: protocol.CodeUnavailable, Message: fmt.Sprintf("backing up config %s: %v", path, err)}
		}
	}
	hash, err := config.Save(path, f.Tree)
	if err != nil {
		return &protocol.Error{Code: protocol.CodeUnavailable, Message: err.Error()}
	}
	if hash != f.Hash {
		return fmt.Errorf("saving config %s: wrote hash %s, checked %s", path, hash, f.Hash)
	}
	tx.t.reload()
	return nil
}

// reload makes the tenant's next call re-read its config file even if a
// write left its size and modification time as they were. The reload
// builds a new runtime from one read of the file and swaps it in whole
// (tenant.current), so a call or turn sees the old config or the new one,
// never a mix; tool policy, agents and sandbox settings come from it.
func (t *tenant) reload() {
	t.mu.Lock()
	t.stamp = fileStamp{}
	t.mu.Unlock()
}

// configSnapshot is config.get's payload. Talon has no $include or env
// substitution, so parsed and config are the same tree; both are sent
// because clients read either. There are no legacy migrations, so
// legacyIssues is always empty.
type configSnapshot struct {
	Path         string          `json:"path"`
	Exists       bool            `json:"exists"`
	Raw          *string         `json:"raw"`
	Parsed       json.RawMessage `json:"parsed"`
	Valid        bool            `json:"valid"`
	Config       json.RawMessage `json:"config"`
	Hash         string          `json:"hash"`
	Issues       []configIssue   `json:"issues"`
	Warnings     []configIssue   `json:"warnings"`
	LegacyIssues []configIssue   `json:"legacyIssues"`
}

func configGet(_ *Server, c *call) (any, error) {
	if err := c.params(&struct{}{}); err != nil {
		return nil, err
	}
	return snapshotConfig(c.file())
}

// snapshotConfig is config.get's payload, secrets redacted: the one
// reading of a config file a client or a model is shown.
func snapshotConfig(cf configFile) (*configSnapshot, error) {
	d, err := readConfig(cf)
	if err != nil {
		return nil, err
	}
	snap := &configSnapshot{
		Path: cf.t.configPath, Exists: d.exists, Valid: len(d.issues) == 0, Hash: d.hash,
		Parsed: json.RawMessage("{}"), Config: json.RawMessage("{}"),
		Issues: issuesOf(d.issues), Warnings: []configIssue{}, LegacyIssues: []configIssue{},
	}
	// A file that does not parse cannot be redacted (nothing says which
	// text is a secret), so its text is not sent; the issue says where it
	// breaks, and config.set with this hash replaces it.
	if d.file != nil {
		snap.Parsed = config.RedactedJSON(d.file.Tree)
		snap.Config = snap.Parsed
		snap.Warnings = issuesOf(append(d.beyond, d.file.Warnings...))
		if d.exists {
			raw := config.RedactText(d.raw, d.file.Tree)
			snap.Raw = &raw
		}
	}
	return snap, nil
}

// writeParams are the params of config.patch, config.set and config.apply.
// sessionKey, note and restartDelayMs steer OpenClaw's restart, which
// Talon does not do; they are checked and otherwise unused.
type writeParams struct {
	Raw            *string  `json:"raw"`
	BaseHash       any      `json:"baseHash"`
	SessionKey     string   `json:"sessionKey"`
	Note           string   `json:"note"`
	RestartDelayMs *float64 `json:"restartDelayMs"`
}

// parse decodes the params and reads raw, which must be a JSON5 object.
func (p *writeParams) parse(c *call) (*config.Value, error) {
	if err := c.params(p); err != nil {
		return nil, err
	}
	m := c.req.Method
	if p.RestartDelayMs != nil && *p.RestartDelayMs < 0 {
		return nil, protocol.Errorf("invalid %s params: restartDelayMs must be >= 0", m)
	}
	if p.Raw == nil {
		return nil, protocol.Errorf("invalid %s params: raw (a JSON5 object, as a string) is required", m)
	}
	return parseRaw(m, *p.Raw)
}

// parseRaw reads the raw of a write of method m: a JSON5 object.
func parseRaw(m, raw string) (*config.Value, error) {
	tree, err := config.ParseJSON5([]byte(raw))
	if err != nil {
		return nil, protocol.Errorf("invalid %s params: raw: %v", m, err)
	}
	if tree.Kind != config.Object {
		return nil, protocol.Errorf("invalid %s params: raw must hold a JSON5 object, not %s", m, tree.Kind)
	}
	return tree, nil
}

// restoreSecrets puts the stored secrets back in place of the redaction
// sentinel, so a client can send back what config.get gave it.
func restoreSecrets(method string, next, onDisk *config.Value) (*config.Value, error) {
	out, err := config.Restore(next, onDisk)
	var re *config.RestoreError
	switch {
	case errors.As(err, &re):
		return nil, protocol.Errorf("invalid %s params: raw: %s: %s", method, re.Path, re.Reason)
	case err != nil:
		return nil, protocol.Errorf("invalid %s params: raw: %v", method, err)
	}
	return out, nil
}

// hotReload is the restart block of a write's result: Talon applies a
// config at the next call or turn and never restarts for it.
var hotReload = map[string]any{"required": false, "reason": "hot-reload"}

func configPatch(_ *Server, c *call) (any, error) { return writeParamsConfig(c) }
func configSet(_ *Server, c *call) (any, error)   { return writeParamsConfig(c) }
func configApply(_ *Server, c *call) (any, error) { return writeParamsConfig(c) }

// writeParamsConfig is a write as a client asks for it.
func writeParamsConfig(c *call) (any, error) {
	var p writeParams
	in, err := p.parse(c)
	if err != nil {
		return nil, err
	}
	return writeConfig(c.file(), c.req.Method, in, p.BaseHash)
}

// writeConfig serves the three writes (method), from a client or the
// gateway tool: check baseHash against the file on disk, build the next
// tree (merge in, or in itself), restore redacted secrets from disk,
// validate (held to the tenant ceiling), save atomically. A patch needs a
// valid file to merge into; set and apply may replace a broken one,
// which is how it gets repaired.
func writeConfig(cf configFile, method string, in *config.Value, baseHash any) (map[string]any, error) {
	patch := method == "config.patch"
	tx, err := beginConfig(cf)
	if err != nil {
		return nil, err
	}
	defer tx.done()
	if err := tx.cur.checkBaseHash(baseHash); err != nil {
		return nil, err
	}
	next := in
	if patch {
		if err := tx.cur.mustBeValid(); err != nil {
			return nil, err
		}
		next = config.MergePatch(tx.cur.file.Tree, in)
	}
	var onDisk *config.Value
	if tx.cur.file != nil {
		onDisk = tx.cur.file.Tree
	}
	if next, err = restoreSecrets(method, next, onDisk); err != nil {
		return nil, err
	}
	f, err := tx.check(next)
	if err != nil {
		return nil, err
	}
	if err := tx.save(f); err != nil {
		return nil, err
	}
	out := map[string]any{"ok": true, "path": cf.t.configPath, "config": json.RawMessage(config.RedactedJSON(f.Tree)), "hash": f.Hash}
	if method != "config.set" {
		out["restart"] = hotReload
	}
	return out, nil
}
