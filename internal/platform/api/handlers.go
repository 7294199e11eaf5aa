package api

import (
	_ "embed"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"talon/internal/platform"
	"talon/internal/platform/install"
	"talon/internal/store/catalog"
	"talon/internal/tenantid"
	"talon/internal/usage"
)

//go:embed openapi.json
var openAPIDoc []byte

func (s *server) openAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPIDoc)
	return nil
}

func (s *server) library(w http.ResponseWriter, r *http.Request) error {
	list, err := s.p.Library(r.Context())
	if err != nil {
		return err
	}
	loadErrs := []string{}
	for _, e := range s.p.LoadErrors() {
		loadErrs = append(loadErrs, e.Error())
	}
	writeJSON(w, http.StatusOK, map[string]any{"library": nonNil(list), "loadErrors": loadErrs})
	return nil
}

func dryRun(r *http.Request) (bool, error) {
	v := r.URL.Query().Get("dryRun")
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, badField("dryRun", "%q is not true or false", v)
	}
	return b, nil
}

func (s *server) syncAll(w http.ResponseWriter, r *http.Request) error {
	dry, err := dryRun(r)
	if err != nil {
		return err
	}
	res, err := s.p.SyncAll(r.Context(), dry)
	if err != nil {
		return err
	}
	return writeSync(w, dry, res)
}

func (s *server) syncOne(w http.ResponseWriter, r *http.Request) error {
	dry, err := dryRun(r)
	if err != nil {
		return err
	}
	res, err := s.p.Sync(r.Context(), r.PathValue("slug"), dry)
	if err != nil {
		return err
	}
	return writeSync(w, dry, res)
}

func writeSync(w http.ResponseWriter, dry bool, res []platform.SyncResult) error {
	for i := range res {
		if res[i].Summary == nil {
			res[i].Summary = []string{}
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"dryRun": dry, "results": nonNil(res)})
	return nil
}

// tenants lists the tenants, each with its node and whether it can be
// reached now.
func (s *server) tenants(w http.ResponseWriter, r *http.Request) error {
	list, err := s.p.TenantStatuses(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"tenants": nonNil(list)})
	return nil
}

type createTenantReq struct {
	ID   string            `json:"id"`
	Name string            `json:"name"`
	Env  map[string]string `json:"env"`
}

func (q *createTenantReq) check() error {
	switch {
	case q.ID == "":
		return badField("id", "is required")
	case !tenantid.Valid(q.ID):
		return badField("id", "%q is invalid: use letters, digits, _ and -, starting with a letter or digit, at most 128 characters", q.ID)
	case utf8.RuneCountInString(q.Name) > 200 || strings.ContainsAny(q.Name, "\r\n"):
		return badField("name", "must be one line of at most 200 characters")
	}
	for k, v := range q.Env {
		// The installer's rule, checked here so a bad name is a 400
		// naming the field rather than a failure of the install.
		if !install.ValidEnvName(k) {
			return badField("env", "name %q is invalid: use letters, digits and _, not starting with a digit", k)
		}
		if len(v) > 64<<10 {
			return badField("env", "%s is longer than 64 KiB", k)
		}
	}
	return nil
}

func (s *server) createTenant(w http.ResponseWriter, r *http.Request) error {
	var q createTenantReq
	if err := decode(r, &q); err != nil {
		return err
	}
	if err := q.check(); err != nil {
		return err
	}
	if q.Name == "" {
		q.Name = q.ID
	}
	if _, err := s.tenant(r, q.ID); err == nil {
		return errorf(http.StatusConflict, "exists", "tenant %q already exists", q.ID)
	}
	t, err := s.p.CreateTenant(r.Context(), q.ID, q.Name, q.Env)
	if err != nil {
		return err
	}
	rec, err := s.tenant(r, q.ID)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/tenants/"+q.ID)
	writeJSON(w, http.StatusCreated, map[string]any{"tenant": rec, "token": t.Token})
	return nil
}

// tenant returns the catalog's tenant id: 404 when there is none. The
// installer's own errors do not say "not found" in a way a caller can
// test, so routes on a tenant ask the catalog first.
func (s *server) tenant(r *http.Request, id string) (catalog.Tenant, error) {
	list, err := s.p.Tenants(r.Context())
	if err != nil {
		return catalog.Tenant{}, err
	}
	for _, t := range list {
		if t.ID == id {
			return t, nil
		}
	}
	return catalog.Tenant{}, errorf(http.StatusNotFound, "no_tenant", "no tenant %q", id)
}

func (s *server) deleteTenant(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	_, known := s.tenant(r, id)
	if err := s.p.DeleteTenant(r.Context(), id); err != nil {
		var ae *apiError
		if errors.As(known, &ae) {
			// Neither the catalog nor the directory had it.
			return errorf(http.StatusNotFound, "no_tenant", "no tenant %q (%v)", id, err)
		}
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *server) installations(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if _, err := s.tenant(r, id); err != nil {
		return err
	}
	list, err := s.p.Installations(r.Context(), catalog.Filter{TenantID: id})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"installations": nonNil(list)})
	return nil
}

func (s *server) install(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	var q struct {
		Slug string `json:"slug"`
	}
	if err := decode(r, &q); err != nil {
		return err
	}
	if q.Slug == "" {
		return badField("slug", "is required")
	}
	if _, err := s.tenant(r, id); err != nil {
		return err
	}
	in, err := s.p.Install(r.Context(), id, q.Slug)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/tenants/"+id+"/installations/"+q.Slug)
	writeJSON(w, http.StatusCreated, in)
	return nil
}

// uninstall answers with what went: the workspace, memory included.
func (s *server) uninstall(w http.ResponseWriter, r *http.Request) error {
	id, slug := r.PathValue("id"), r.PathValue("slug")
	if err := s.p.Uninstall(r.Context(), id, slug); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"tenant": id, "slug": slug, "message": platform.UninstalledMessage(id, slug)})
	return nil
}

// nonNil makes an empty list [] in JSON rather than null.
func nonNil[T any](list []T) []T {
	if list == nil {
		return []T{}
	}
	return list
}

// usageQuery reads the since and by query parameters.
func usageQuery(r *http.Request) (usage.Query, error) {
	v := r.URL.Query()
	since, err := usage.ParseSince(v.Get("since"), time.Now())
	if err != nil {
		return usage.Query{}, badField("since", "%v", err)
	}
	if err := usage.CheckBy(v.Get("by")); err != nil {
		return usage.Query{}, badField("by", "%v", err)
	}
	return usage.Query{Since: since, By: v.Get("by")}, nil
}

// usage answers a tenant's usage, the JSON of `talon usage --json`. The
// route's access is tenant: a tenant's token reads its own alone.
func (s *server) usage(w http.ResponseWriter, r *http.Request) error {
	q, err := usageQuery(r)
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	if _, err := s.tenant(r, id); err != nil {
		return err
	}
	rep, err := s.p.Usage(r.Context(), id, q)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}

// allUsage answers every tenant's totals and their sum (admin only).
func (s *server) allUsage(w http.ResponseWriter, r *http.Request) error {
	q, err := usageQuery(r)
	if err != nil {
		return err
	}
	if q.By != "" {
		return badField("by", "the all-tenants view has one row per tenant; ask /api/tenants/{id}/usage for rows by %s", q.By)
	}
	rep, err := s.p.AllUsage(r.Context(), q.Since)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}

// nodes lists the gateway nodes with their health (admin only).
func (s *server) nodes(w http.ResponseWriter, r *http.Request) error {
	list, err := s.p.NodeStatuses(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"nodes": nonNil(list)})
	return nil
}

// move moves a tenant to another node (admin only); the answer comes
// when the move is done or undone.
func (s *server) move(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	var q struct {
		Node string `json:"node"`
	}
	if err := decode(r, &q); err != nil {
		return err
	}
	if q.Node == "" {
		return badField("node", "is required")
	}
	if err := catalog.CheckNodeID(q.Node); err != nil {
		return badField("node", "%q is not a node id", q.Node)
	}
	if _, err := s.tenant(r, id); err != nil {
		return err
	}
	res, err := s.p.Move(r.Context(), id, q.Node)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}
