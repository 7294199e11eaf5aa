package studio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"talon/internal/config"
	"talon/internal/platform/relay"
	"talon/internal/plugin"
	"talon/internal/policy"
	"talon/internal/sandbox"
	sessiontools "talon/internal/tools/sessions"
	"talon/protocol"
)

// callTimeout bounds one gateway call made for a page.
const callTimeout = 20 * time.Second

// call makes one gateway call for the request's tenant.
func (s *Server) call(q *req, method string, params, out any) error {
	ctx, cancel := context.WithTimeout(q.r.Context(), callTimeout)
	defer cancel()
	return s.o.Relay.Call(ctx, q.tenant, method, params, out)
}

// errText is a failed gateway call as a person reads it: the gateway's
// own message when it refused the call, else a fixed sentence; what went
// wrong (addresses, paths) goes to the log.
func (s *Server) errText(q *req, err error) string {
	if msg, ok := relay.Refusal(err); ok {
		return msg
	}
	s.log.Error("studio: calling the gateway", "tenant", q.tenant, "path", q.r.URL.Path, "err", err)
	return "The gateway could not be reached, or its answer could not be read; the server log says why."
}

// agentInfo is an agents.list row.
type agentInfo struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Workspace string `json:"workspace"`
	Identity  struct {
		Name   string `json:"name"`
		Emoji  string `json:"emoji"`
		Avatar string `json:"avatar"`
	} `json:"identity"`
}

// Label is the agent's name, else its id.
func (a agentInfo) Label() string {
	if a.Name != "" {
		return a.Name
	}
	if a.Identity.Name != "" {
		return a.Identity.Name
	}
	return a.ID
}

// Seed is what the agent's avatar is drawn from.
func (a agentInfo) Seed() string {
	if s, ok := strings.CutPrefix(a.Identity.Avatar, avatarSeedPrefix); ok && s != "" {
		return s
	}
	return a.ID
}

type agentsList struct {
	Agents    []agentInfo `json:"agents"`
	DefaultID string      `json:"defaultId"`
	MainKey   string      `json:"mainKey"`
	Scope     string      `json:"scope"`
}

func (s *Server) agents(q *req) (agentsList, error) {
	var l agentsList
	err := s.call(q, "agents.list", nil, &l)
	return l, err
}

// pathAgent finds the agent the URL names; when it cannot, it shows why
// (the gateway unreachable, or no such agent) and reports false.
func (s *Server) pathAgent(q *req) (agentInfo, agentsList, bool) {
	id := q.r.PathValue("agent")
	l, err := s.agents(q)
	if err != nil {
		s.fail(q.w, q.r, q.sess, http.StatusBadGateway, s.errText(q, err))
		return agentInfo{}, l, false
	}
	a, ok := l.find(id)
	if !ok || id == "" {
		s.fail(q.w, q.r, q.sess, http.StatusNotFound, fmt.Sprintf("There is no agent %q in %s.", id, q.tenantLabel()))
		return agentInfo{}, l, false
	}
	return a, l, true
}

// find returns the agent id (normalised as the gateway does) in l.
func (l agentsList) find(id string) (agentInfo, bool) {
	id = config.NormalizeAgentID(id)
	for _, a := range l.Agents {
		if a.ID == id {
			return a, true
		}
	}
	return agentInfo{}, false
}

// createForm is the create-agent form, kept when it is shown again.
type createForm struct {
	Name, Seed string
}

type agentsData struct {
	List agentsList
	Form createForm
}

func (s *Server) agentsPage(q *req) {
	p := s.newPage(q, "Agents", "agents", nil)
	p.Notice = s.ensureRepair(q)
	l, err := s.agents(q)
	if err != nil {
		p.Error = s.errText(q, err)
	}
	p.Data = agentsData{List: l}
	s.render(q.w, http.StatusOK, "agents", p)
}

const (
	maxAgentName     = 100
	avatarSeedPrefix = "seed:"
)

var seedRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// checkAgentName validates a new agent's name and returns its id.
func checkAgentName(name string) (string, error) {
	switch {
	case name == "":
		return "", errors.New("Give the agent a name.")
	case !utf8.ValidString(name):
		return "", errors.New("The name is not valid text.")
	case utf8.RuneCountInString(name) > maxAgentName:
		return "", fmt.Errorf("The name is %d characters long; at most %d.", utf8.RuneCountInString(name), maxAgentName)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return "", errors.New("The name has a control character (a line break or tab); use one line of text.")
	}
	id := config.NormalizeAgentID(name)
	if id == "main" {
		if strings.EqualFold(name, "main") {
			return "", errors.New(`"main" is the default agent's id; choose another name.`)
		}
		return "", errors.New("The name needs at least one letter or digit: the agent's id is made from them.")
	}
	return id, nil
}

// createAgent is seed 002's create flow: config.get for the config's
// path, the workspace <state dir>/workspace-<id> beside it, then
// agents.create, which writes nothing unless everything is in place.
func (s *Server) createAgent(q *req) {
	q.r.Body = http.MaxBytesReader(q.w, q.r.Body, 64<<10)
	f := createForm{Name: strings.TrimSpace(q.r.PostFormValue("name")), Seed: strings.TrimSpace(q.r.PostFormValue("avatarSeed"))}
	again := func(status int, msg string) {
		p := s.newPage(q, "Agents", "agents", nil)
		p.Error = msg
		l, err := s.agents(q)
		if err != nil {
			p.Error += " (" + s.errText(q, err) + ")"
		}
		p.Data = agentsData{List: l, Form: f}
		s.render(q.w, status, "agents", p)
	}
	id, err := checkAgentName(f.Name)
	if err != nil {
		again(http.StatusBadRequest, err.Error())
		return
	}
	if f.Seed != "" && !seedRE.MatchString(f.Seed) {
		again(http.StatusBadRequest, "The avatar seed is 1 to 64 letters, digits, _ or -.")
		return
	}
	var snap struct {
		Path string `json:"path"`
	}
	if err := s.call(q, "config.get", nil, &snap); err != nil {
		again(http.StatusBadGateway, s.errText(q, err))
		return
	}
	if snap.Path == "" || !filepath.IsAbs(snap.Path) {
		again(http.StatusBadGateway, "The gateway did not say where its config is, so the workspace path cannot be chosen.")
		return
	}
	params := map[string]string{"name": f.Name, "workspace": filepath.Join(filepath.Dir(snap.Path), "workspace-"+id)}
	if f.Seed != "" {
		params["avatar"] = avatarSeedPrefix + f.Seed
	}
	var res struct {
		AgentID string `json:"agentId"`
	}
	if err := s.call(q, "agents.create", params, &res); err != nil {
		status := http.StatusBadGateway
		var pe *protocol.Error
		if errors.As(err, &pe) {
			status = http.StatusConflict
		}
		again(status, s.errText(q, err))
		return
	}
	http.Redirect(q.w, q.r, q.base+"/agents/"+res.AgentID+"?created=1", http.StatusSeeOther)
}

// configSnapshot is config.get's answer: the parsed file (secrets
// redacted) and its hash, the base of a config.patch.
type configSnapshot struct {
	Path   string          `json:"path"`
	Hash   string          `json:"hash"`
	Parsed json.RawMessage `json:"parsed"`
	Valid  bool            `json:"valid"`
}

// tree decodes the parsed config.
func (c configSnapshot) tree() (map[string]any, error) { return object(c.Parsed, "the config") }

// object decodes a JSON object keeping numbers as written (a timestamp
// written back must not become 1.7e+12); null is an empty object.
func object(raw json.RawMessage, what string) (map[string]any, error) {
	m := map[string]any{}
	if len(raw) == 0 || string(raw) == "null" {
		return m, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("reading %s the gateway sent: %w", what, err)
	}
	return m, nil
}

// agentEntry finds the agent's agents.list entry in a config tree.
func agentEntry(cfg map[string]any, id string) map[string]any {
	l, _ := dig(cfg, "agents")["list"].([]any)
	for _, it := range l {
		e, _ := it.(map[string]any)
		if s, _ := e["id"].(string); e != nil && config.NormalizeAgentID(s) == id {
			return e
		}
	}
	return nil
}

// approvalsSnapshot is exec.approvals.get's answer.
type approvalsSnapshot struct {
	Exists bool            `json:"exists"`
	Hash   string          `json:"hash"`
	File   json.RawMessage `json:"file"`
}

func (a approvalsSnapshot) agent(id string) (security, ask string) {
	f, _ := object(a.File, "the approvals file")
	e, _ := dig(f, "agents")[id].(map[string]any)
	security, _ = e["security"].(string)
	ask, _ = e["ask"].(string)
	return security, ask
}

// sessionRow is a sessions.list row.
type sessionRow struct {
	Key          string `json:"key"`
	Kind         string `json:"kind"`
	UpdatedAt    int64  `json:"updatedAt"`
	DisplayName  string `json:"displayName"`
	Label        string `json:"label"`
	Model        string `json:"model"`
	ExecHost     string `json:"execHost"`
	ExecSecurity string `json:"execSecurity"`
	ExecAsk      string `json:"execAsk"`
	// The context in use of the model's window (an estimate after a
	// compaction, until the next turn), and the compactions.
	TotalTokens      int64 `json:"totalTokens"`
	TotalTokensFresh *bool `json:"totalTokensFresh"`
	ContextTokens    int64 `json:"contextTokens"`
	CompactionCount  int64 `json:"compactionCount"`
}

// Context is the row's context in use of the window, "12k/200k (6%)",
// "~" before an estimate.
func (r sessionRow) Context() string {
	return strings.TrimPrefix(sessiontools.ContextLine(r.TotalTokens, r.ContextTokens, r.TotalTokensFresh != nil && !*r.TotalTokensFresh), "Context: ")
}

// Updated is the row's time for people.
func (r sessionRow) Updated() string {
	if r.UpdatedAt == 0 {
		return ""
	}
	return time.UnixMilli(r.UpdatedAt).UTC().Format("2006-01-02 15:04 UTC")
}

func (s *Server) sessions(q *req, agentID string) ([]sessionRow, error) {
	var l struct {
		Sessions []sessionRow `json:"sessions"`
	}
	err := s.call(q, "sessions.list", map[string]any{"agentId": agentID, "limit": 200}, &l)
	return l.Sessions, err
}

// agentView is everything the agent's page shows.
type agentView struct {
	Agent    agentInfo
	Tools    *explained
	Sandbox  *sandbox.Explanation
	Roles    []Role
	Role     string
	Custom   string
	Security string
	Ask      string
	Main     sessionRow
	MainKey  string
	// SandboxAllow is the agent's own tools.sandbox.tools.allow.
	SandboxAllowSet bool
	SandboxAllow    []string
	SandboxMeaning  string
	Created         bool
	Changed         []string
}

// explained is tools.explain's answer.
type explained struct {
	policy.Explanation
	Plugins []plugin.Status `json:"plugins"`
}

func (s *Server) agentPage(q *req) { s.showAgent(q, http.StatusOK, "", nil) }

// showAgent renders the agent's page, with an error or a list of what a
// change did.
func (s *Server) showAgent(q *req, status int, errMsg string, changed []string) {
	a, _, ok := s.pathAgent(q)
	if !ok {
		return
	}
	v := agentView{Agent: a, Roles: Roles, Created: q.r.URL.Query().Get("created") == "1", Changed: changed}
	p := s.newPage(q, a.Label(), "agents", &v)
	p.Notice = s.ensureRepair(q)
	p.Error = errMsg
	var errs []string
	var x explained
	// Studio's chat runs as the tenant's owner: explain the tools as one
	// gets them (owner-only tools such as cron included).
	if err := s.call(q, "tools.explain", map[string]any{"agentId": a.ID, "owner": true}, &x); err != nil {
		errs = append(errs, "Tools: "+s.errText(q, err))
	} else {
		v.Tools = &x
	}
	var sx sandbox.Explanation
	if err := s.call(q, "sandbox.explain", map[string]string{"agentId": a.ID}, &sx); err != nil {
		errs = append(errs, "Sandbox: "+s.errText(q, err))
	} else {
		v.Sandbox = &sx
		v.MainKey = sx.Plan.MainSessionKey
	}
	st, err := s.roleState(q, a.ID, &v)
	if err != nil {
		errs = append(errs, "Execution role: "+s.errText(q, err))
	} else {
		v.Role, v.Custom = currentRole(st)
	}
	if v.MainKey != "" {
		if rows, err := s.sessions(q, a.ID); err == nil {
			for _, r := range rows {
				if r.Key == v.MainKey {
					v.Main = r
				}
			}
		}
	}
	if len(errs) > 0 {
		if p.Error != "" {
			p.Error += " "
		}
		p.Error += strings.Join(errs, " ")
	}
	s.render(q.w, status, "agent", p)
}

// roleState reads the approvals entry and the agent's tool lists, and
// fills the sandbox allow list of v.
func (s *Server) roleState(q *req, id string, v *agentView) (roleState, error) {
	var ap approvalsSnapshot
	if err := s.call(q, "exec.approvals.get", nil, &ap); err != nil {
		return roleState{}, err
	}
	var snap configSnapshot
	if err := s.call(q, "config.get", nil, &snap); err != nil {
		return roleState{}, err
	}
	cfg, err := snap.tree()
	if err != nil {
		return roleState{}, err
	}
	st := roleState{}
	st.Security, st.Ask = ap.agent(id)
	v.Security, v.Ask = st.Security, st.Ask
	if e := agentEntry(cfg, id); e != nil {
		st.RuntimeDenied, st.RuntimeGranted = runtimeState(e)
		allow, present := dig(e, "tools", "sandbox", "tools")["allow"]
		v.SandboxAllowSet = present
		v.SandboxAllow = list(allow)
	}
	v.SandboxMeaning = sandboxAllowMeaning(v.SandboxAllowSet, v.SandboxAllow)
	return st, nil
}
