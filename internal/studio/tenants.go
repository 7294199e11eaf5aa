package studio

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"talon/internal/platform"
	"talon/internal/store/catalog"
	"talon/internal/tenantid"
)

// platformTimeout bounds one platform operation (a sync of every tenant
// of a template may write many files).
const platformTimeout = 2 * time.Minute

// tenantsView is the tenants and library page.
type tenantsView struct {
	// NoDefault hides the default tenant: Studio in front of gateway
	// nodes has none.
	NoDefault     bool
	Tenants       []tenantRow
	Library       []catalog.Entry
	Form          tenantForm
	CreatedToken  string
	CreatedTenant string
	// Sync is a sync's outcome (a dry run's diff, or what was applied).
	Sync       []platform.SyncResult
	SyncSlug   string
	SyncDryRun bool
}

type tenantRow struct {
	// TenantStatus has its node, and why it is unavailable when it is.
	platform.TenantStatus
	Installed []catalog.Installation
	// Usage is the month's usage and budget (usage.budget); UsageErr
	// says why it could not be read.
	Usage    *budgetStatus
	UsageErr string
}

type tenantForm struct{ ID, Name string }

func (s *Server) platform() (*platform.Platform, error) {
	if s.o.Platform == nil {
		return nil, errors.New("this Studio runs without the workforce platform")
	}
	return s.o.Platform()
}

// platformFor returns the platform and a context bounded by
// platformTimeout for one change; without a platform it shows the page
// saying why, with v (the form as typed), and reports false.
func (s *Server) platformFor(q *req, v *tenantsView) (*platform.Platform, context.Context, context.CancelFunc, bool) {
	pl, err := s.platform()
	if err != nil {
		s.showTenants(q, http.StatusServiceUnavailable, "", v, nil)
		return nil, nil, nil, false
	}
	ctx, cancel := context.WithTimeout(q.r.Context(), platformTimeout)
	return pl, ctx, cancel, true
}

// changeStatus is the status of a refused platform change.
func changeStatus(err error) int {
	if errors.Is(err, platform.ErrNoTemplate) {
		return http.StatusNotFound
	}
	return http.StatusConflict
}

func (s *Server) tenantsPage(q *req) { s.showTenants(q, http.StatusOK, "", nil, nil) }

// showTenants renders the page; v carries what a form did.
func (s *Server) showTenants(q *req, status int, errMsg string, v *tenantsView, notice []string) {
	if v == nil {
		v = &tenantsView{}
	}
	p := s.newPage(q, "Tenants and library", "tenants", v)
	p.Error, p.Notice = errMsg, notice
	pl, err := s.platform()
	if err != nil {
		p.Error = strings.TrimSpace(p.Error + " " + err.Error())
		s.render(q.w, http.StatusServiceUnavailable, "tenants", p)
		return
	}
	ctx, cancel := context.WithTimeout(q.r.Context(), platformTimeout)
	defer cancel()
	v.NoDefault = s.o.NoDefaultTenant
	ts, err := pl.TenantStatuses(ctx)
	if err == nil {
		var ins []catalog.Installation
		ins, err = pl.Installations(ctx, catalog.Filter{})
		for _, t := range ts {
			row := tenantRow{TenantStatus: t}
			for _, in := range ins {
				if in.TenantID == t.ID {
					row.Installed = append(row.Installed, in)
				}
			}
			if t.Available {
				// A tenant on a down node is not asked: it says why instead.
				row.Usage, row.UsageErr = s.tenantUsage(q, t.ID)
			}
			v.Tenants = append(v.Tenants, row)
		}
	}
	if err == nil {
		v.Library, err = pl.Library(ctx)
	}
	if err != nil {
		p.Error = strings.TrimSpace(p.Error + " Reading the catalog: " + err.Error())
	}
	s.render(q.w, status, "tenants", p)
}

// checkTenantForm validates a new tenant.
func checkTenantForm(f tenantForm) error {
	switch {
	case f.ID == "":
		return errors.New("Give the tenant an id.")
	case !tenantid.Valid(f.ID):
		return fmt.Errorf("%q is not a tenant id: 1 to 128 letters, digits, _ or -, starting with a letter or digit.", f.ID)
	case !utf8.ValidString(f.Name) || utf8.RuneCountInString(f.Name) > 200:
		return errors.New("The display name is at most 200 characters of text.")
	case strings.IndexFunc(f.Name, unicode.IsControl) >= 0:
		return errors.New("The display name is one line of text.")
	}
	return nil
}

func (s *Server) createTenant(q *req) {
	q.r.Body = http.MaxBytesReader(q.w, q.r.Body, 16<<10)
	f := tenantForm{ID: strings.TrimSpace(q.r.PostFormValue("id")), Name: strings.TrimSpace(q.r.PostFormValue("name"))}
	v := &tenantsView{Form: f}
	if err := checkTenantForm(f); err != nil {
		s.showTenants(q, http.StatusBadRequest, err.Error(), v, nil)
		return
	}
	pl, ctx, cancel, ok := s.platformFor(q, v)
	if !ok {
		return
	}
	defer cancel()
	t, err := pl.CreateTenant(ctx, f.ID, f.Name, nil)
	if err != nil {
		s.showTenants(q, http.StatusConflict, "Creating the tenant: "+err.Error(), v, nil)
		return
	}
	// The token is shown once, as the platform's API does.
	s.showTenants(q, http.StatusOK, "", &tenantsView{CreatedToken: t.Token, CreatedTenant: f.ID}, []string{"Tenant " + f.ID + " created."})
}

// installForm reads and checks the tenant and slug of an install or
// uninstall.
func (s *Server) installForm(q *req) (tenant, slug string, ok bool) {
	q.r.Body = http.MaxBytesReader(q.w, q.r.Body, 16<<10)
	tenant, slug = q.r.PathValue("tenant"), strings.TrimSpace(q.r.PostFormValue("slug"))
	switch {
	case !tenantid.Valid(tenant):
		s.showTenants(q, http.StatusBadRequest, fmt.Sprintf("%q is not a tenant id.", tenant), nil, nil)
	case slug == "":
		s.showTenants(q, http.StatusBadRequest, "Choose an employee from the library.", nil, nil)
	case !tenantid.Valid(slug):
		s.showTenants(q, http.StatusBadRequest, fmt.Sprintf("%q is not an employee of the library.", slug), nil, nil)
	default:
		return tenant, slug, true
	}
	return "", "", false
}

func (s *Server) install(q *req) {
	tenant, slug, ok := s.installForm(q)
	if !ok {
		return
	}
	s.platformDo(q, func(ctx context.Context, pl *platform.Platform) error {
		_, err := pl.Install(ctx, tenant, slug)
		return err
	}, "Installing "+slug+" for "+tenant, slug+" is installed for tenant "+tenant+".")
}

func (s *Server) uninstall(q *req) {
	tenant, slug, ok := s.installForm(q)
	if !ok {
		return
	}
	s.platformDo(q, func(ctx context.Context, pl *platform.Platform) error {
		return pl.Uninstall(ctx, tenant, slug)
	}, "Uninstalling "+slug+" from "+tenant, platform.UninstalledMessage(tenant, slug)+".")
}

// platformDo runs one platform change and shows the page with its outcome.
func (s *Server) platformDo(q *req, do func(context.Context, *platform.Platform) error, what, done string) {
	pl, ctx, cancel, ok := s.platformFor(q, nil)
	if !ok {
		return
	}
	defer cancel()
	if err := do(ctx, pl); err != nil {
		s.showTenants(q, changeStatus(err), what+": "+err.Error(), nil, nil)
		return
	}
	s.showTenants(q, http.StatusOK, "", nil, []string{done})
}

// sync syncs every installation of a template: with dry-run=1 it only
// shows the diff, with a button to apply it.
func (s *Server) sync(q *req) {
	q.r.Body = http.MaxBytesReader(q.w, q.r.Body, 16<<10)
	slug := q.r.PathValue("slug")
	dry := q.r.PostFormValue("dryRun") == "1"
	if !tenantid.Valid(slug) {
		s.showTenants(q, http.StatusBadRequest, fmt.Sprintf("%q is not an employee of the library.", slug), nil, nil)
		return
	}
	pl, ctx, cancel, ok := s.platformFor(q, nil)
	if !ok {
		return
	}
	defer cancel()
	res, err := pl.Sync(ctx, slug, dry)
	if err != nil {
		s.showTenants(q, changeStatus(err), "Syncing "+slug+": "+err.Error(), nil, nil)
		return
	}
	v := &tenantsView{Sync: res, SyncSlug: slug, SyncDryRun: dry}
	var notice []string
	if !dry {
		notice = []string{fmt.Sprintf("Synced %s: %d installation(s).", slug, len(res))}
	}
	s.showTenants(q, http.StatusOK, "", v, notice)
}

// tenantUsage is tenant id's month of usage and its budget, for the
// tenants list; a tenant whose gateway cannot answer shows why instead.
func (s *Server) tenantUsage(q *req, id string) (*budgetStatus, string) {
	ctx, cancel := context.WithTimeout(q.r.Context(), callTimeout)
	defer cancel()
	var st budgetStatus
	if err := s.o.Relay.Call(ctx, id, "usage.budget", map[string]any{}, &st); err != nil {
		return nil, s.errText(q, err)
	}
	return &st, ""
}
