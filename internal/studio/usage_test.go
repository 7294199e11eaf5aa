package studio

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"talon/internal/store"
)

// TestUsagePage: a tenant's Usage page draws its month on the server as
// SVG — a bar per day with usage, the running total, the operator's
// budget line and its alert line, at the places the data puts them — and
// the admin's tenants list shows each tenant's month against its budget.
func TestUsagePage(t *testing.T) {
	e := newEnv(t, `{tenants: {budget: {monthlyTokens: 1000, alertAt: 0.5}}}`)
	now := time.Now().UTC()
	first := time.Date(now.Year(), now.Month(), 1, 1, 0, 0, 0, time.UTC)
	db, err := store.Open(filepath.Join(e.state, "tenants", "acme", "talon.db"))
	if err != nil {
		t.Fatal(err)
	}
	err = db.RecordCalls(context.Background(),
		&store.Call{At: first.UnixMilli(), AgentID: "main", Kind: store.CallTurn, Provider: "p", Model: "m", Input: 250, Output: 50, Cost: 1_000_000, Priced: true},
		&store.Call{At: now.UnixMilli(), AgentID: "main", Kind: store.CallCron, Provider: "p", Model: "m", Input: 150, Output: 50, Cost: 500_000, Priced: true},
		&store.Call{At: first.AddDate(0, -1, 0).UnixMilli(), AgentID: "main", Kind: store.CallTurn, Provider: "p", Model: "m", Input: 99_999}, // last month
	)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	b := e.signIn(acmeToken, "acme")
	res, body := b.get("/t/acme/usage")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("usage page: %d\n%s", res.StatusCode, body)
	}
	const summary = "500 tokens, $1.50 of 1,000 tokens (50%)"
	if !strings.Contains(body, `<p id="usage-total" class="usage-total">`+summary+`</p>`) {
		t.Errorf("the month's total %q is not on the page:\n%s", summary, body)
	}
	svg := body[strings.Index(body, "<svg"):]
	svg = svg[:strings.Index(svg, "</svg>")]
	// The plot is 220 high from y=12 to y=232 and its scale tops at
	// 1.1 × the budget (1,100 tokens): 1,000 is at y=32, 500 at y=132,
	// 300 at y=172, 200 at y=192.
	bars := regexp.MustCompile(`<rect class="bar" x="[0-9.]+" y="([0-9.]+)" width="[0-9.]+" height="([0-9.]+)"><title>([^<]*)</title></rect>`).FindAllStringSubmatch(svg, -1)
	var got []string
	for _, m := range bars {
		got = append(got, m[1]+"/"+m[2]+" "+m[3])
	}
	want := []string{"172/60 " + first.Format("2 Jan") + ": 300 tokens", "192/40 " + now.Format("2 Jan") + ": 200 tokens"}
	if now.Day() == 1 {
		want = []string{"132/100 " + first.Format("2 Jan") + ": 500 tokens"}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("bars %q, want %q", got, want)
	}
	points := regexp.MustCompile(`<polyline class="total" points="([^"]*)"`).FindStringSubmatch(svg)
	if points == nil || len(strings.Fields(points[1])) != now.Day() || !strings.HasSuffix(points[1], ",132") {
		t.Errorf("running total %v: want a point a day up to today, ending at 500 tokens (y=132)", points)
	}
	for _, line := range []string{
		`<line class="budget-line" x1="64" x2="708" y1="32" y2="32"><title>budget 1,000 tokens</title></line>`,
		`<line class="alert-line" x1="64" x2="708" y1="132" y2="132"><title>alert at 50%</title></line>`,
	} {
		if !strings.Contains(svg, line) {
			t.Errorf("the chart lacks %s:\n%s", line, svg)
		}
	}
	if strings.Contains(body, "<script>") || strings.Contains(svg, "style=") {
		t.Error("the chart uses an inline script or style, which the CSP refuses")
	}

	// The tenants list is the platform's: a tenant made there shows its
	// (empty) month against the operator's budget.
	admin := e.signIn(adminToken, "")
	res, body = admin.post("/tenants", url.Values{"id": {"globex"}})
	const empty = "0 tokens, $0.00 of 1,000 tokens (0%)"
	if res.StatusCode != http.StatusOK || !strings.Contains(body, `Usage this month: <a href="/t/globex/usage">`+empty+`</a>`) {
		t.Errorf("tenants list: %d, want globex's usage %q:\n%s", res.StatusCode, empty, body)
	}
}
