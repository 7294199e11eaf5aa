package gateway

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"talon/internal/config"
	"talon/internal/store"
	"talon/protocol"
)

func init() {
	register("usage.cost", protocol.ScopeRead, usageCost)
	register("usage.status", protocol.ScopeRead, usageStatus)
}

// usageParams are usage.cost's params, OpenClaw's: a range of calendar
// days (startDate and endDate, else the last `days` or `range` days up
// to today, 30 by default) in UTC, a fixed offset or a time zone (mode
// "specific"), and one agent or all.
type usageParams struct {
	StartDate  string  `json:"startDate"`
	EndDate    string  `json:"endDate"`
	Days       any     `json:"days"`
	Range      string  `json:"range"`
	Mode       string  `json:"mode"`
	UTCOffset  any     `json:"utcOffset"`
	TimeZone   *string `json:"timeZone"`
	AgentID    string  `json:"agentId"`
	AgentScope string  `json:"agentScope"`
}

// maxUsageDays bounds a range of days, as OpenClaw's (a century).
const maxUsageDays = 36600

var utcOffsetRE = regexp.MustCompile(`^UTC([+-])(\d{1,2})(?::([0-5]\d))?$`)

// location is the time zone the params count days in.
func (p *usageParams) location() (*time.Location, error) {
	if p.Mode != "specific" {
		return time.UTC, nil
	}
	offset, offsetOK := parseUTCOffset(p.UTCOffset)
	if p.TimeZone != nil {
		if tz := strings.TrimSpace(*p.TimeZone); tz != "" && tz != "Local" && !strings.Contains(tz, "..") {
			if loc, err := time.LoadLocation(tz); err == nil {
				return loc, nil
			}
		}
		if offsetOK {
			return offset, nil
		}
		return nil, protocol.Errorf("invalid timeZone: expected a valid IANA time zone")
	}
	if offsetOK {
		return offset, nil
	}
	if s, isString := p.UTCOffset.(string); p.UTCOffset != nil && (!isString || strings.TrimSpace(s) != "") {
		return nil, protocol.Errorf("invalid utcOffset: expected UTC-12:00 through UTC+14:00")
	}
	return time.UTC, nil
}

// parseUTCOffset reads "UTC+5:30" as a fixed zone.
func parseUTCOffset(v any) (*time.Location, bool) {
	s, _ := v.(string)
	m := utcOffsetRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return nil, false
	}
	h, _ := strconv.Atoi(m[2])
	mins, _ := strconv.Atoi(m[3])
	total := h*60 + mins
	if m[1] == "-" {
		total = -total
	}
	if total < -720 || total > 840 {
		return nil, false
	}
	return time.FixedZone(strings.TrimSpace(s), total*60), true
}

// span is the range's first day and the day after its last, in loc.
func (p *usageParams) span(now time.Time, loc *time.Location) (from, to time.Time, err error) {
	day := func(field, s string) (time.Time, error) {
		t, err := time.ParseInLocation(time.DateOnly, strings.TrimSpace(s), loc)
		if err != nil {
			return time.Time{}, protocol.Errorf("invalid %s: expected a valid YYYY-MM-DD calendar date", field)
		}
		return t, nil
	}
	start, end := strings.TrimSpace(p.StartDate), strings.TrimSpace(p.EndDate)
	if start != "" || end != "" {
		if start == "" || end == "" {
			return from, to, protocol.Errorf("startDate and endDate must be provided together")
		}
		if from, err = day("startDate", start); err != nil {
			return from, to, err
		}
		last, err := day("endDate", end)
		if err != nil {
			return from, to, err
		}
		if from.After(last) {
			return from, to, protocol.Errorf("startDate must not be after endDate")
		}
		return from, last.AddDate(0, 0, 1), nil
	}
	y, m, d := now.In(loc).Date()
	to = time.Date(y, m, d+1, 0, 0, 0, 0, loc)
	days := 30
	switch p.Range {
	case "all":
		return time.UnixMilli(0), to, nil
	case "7d":
		days = 7
	case "30d":
		days = 30
	case "90d":
		days = 90
	case "1y":
		days = 365
	default:
		if n, ok := usageDays(p.Days); ok {
			days = max(1, min(n, maxUsageDays))
		}
	}
	return time.Date(y, m, d-(days-1), 0, 0, 0, 0, loc), to, nil
}

// usageDays reads `days`, a number or a numeric string, as OpenClaw does.
func usageDays(v any) (int, bool) {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case string:
		n, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil {
			return 0, false
		}
		f = n
	default:
		return 0, false
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return int(max(min(math.Floor(f), maxUsageDays), -1)), true
}

// costTotals are OpenClaw's usage totals. The ledger keeps one cost per
// call, so the cost by kind of token (inputCost, …) is not given.
type costTotals struct {
	Input              int64   `json:"input"`
	Output             int64   `json:"output"`
	CacheRead          int64   `json:"cacheRead"`
	CacheWrite         int64   `json:"cacheWrite"`
	TotalTokens        int64   `json:"totalTokens"`
	TotalCost          float64 `json:"totalCost"`
	MissingCostEntries int64   `json:"missingCostEntries"`
}

func costTotalsOf(t *store.UsageTotals) costTotals {
	return costTotals{Input: t.Input, Output: t.Output, CacheRead: t.CacheRead, CacheWrite: t.CacheWrite,
		TotalTokens: t.Tokens(), TotalCost: usd(t.Cost), MissingCostEntries: t.Unpriced}
}

// usd is micro-dollars as dollars.
func usd(micros int64) float64 { return float64(micros) / 1e6 }

type costDay struct {
	Date string `json:"date"`
	costTotals
}

// usageCost answers usage.cost from the tenant's usage ledger: the
// totals and the days of the range, of one agent (the default one when
// none is named) or, with agentScope "all", of every agent.
func usageCost(_ *Server, c *call) (any, error) {
	var p usageParams
	if err := c.params(&p); err != nil {
		return nil, err
	}
	loc, err := p.location()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	from, to, err := p.span(now, loc)
	if err != nil {
		return nil, err
	}
	agentID := strings.TrimSpace(p.AgentID)
	if p.AgentScope == "all" && agentID != "" {
		return nil, protocol.Errorf("agentScope=all cannot be combined with agentId")
	}
	cfg := c.rt.file.Config
	if p.AgentScope != "all" {
		if agentID == "" {
			agentID = cfg.DefaultAgentID()
		}
		agentID = config.NormalizeAgentID(agentID)
		if !cfg.HasAgent(agentID) {
			return nil, protocol.Errorf("unknown agent id %q", agentID)
		}
	}
	total, groups, err := c.storeOf().Usage(c.ctx, store.UsageQuery{
		Since: from.UnixMilli(), Until: to.UnixMilli(), AgentID: agentID, By: store.ByDay, Location: loc,
	})
	if err != nil {
		return nil, err
	}
	daily := make([]costDay, 0, len(groups))
	for i := range groups {
		daily = append(daily, costDay{Date: groups[i].Key, costTotals: costTotalsOf(&groups[i].UsageTotals)})
	}
	days := int(math.Round(to.Sub(from).Hours() / 24))
	if p.Range == "all" {
		days = len(daily)
	}
	return map[string]any{
		"updatedAt": now.UnixMilli(),
		"days":      days,
		"daily":     daily,
		"totals":    costTotalsOf(&total),
	}, nil
}

// usageStatus answers usage.status: OpenClaw reads each provider's quota
// windows from the provider's own usage API. Talon reads none, so every
// provider the tenant configures is listed as OpenClaw lists one it has
// no usage reader for. A tenant's config is the one held to the
// operator's ceiling: a provider whose baseUrl the ceiling refuses (a
// private or loopback address) is not there, as the tenant cannot call
// it.
func usageStatus(_ *Server, c *call) (any, error) {
	cfg := c.rt.file.Config
	type snapshot struct {
		Provider    string `json:"provider"`
		DisplayName string `json:"displayName"`
		Windows     []any  `json:"windows"`
		Error       string `json:"error"`
	}
	names := make([]string, 0, len(cfg.Models.Providers))
	for n := range cfg.Models.Providers {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]snapshot, 0, len(names))
	for _, n := range names {
		out = append(out, snapshot{Provider: n, DisplayName: n, Windows: []any{}, Error: "Unsupported provider"})
	}
	return map[string]any{"updatedAt": time.Now().UnixMilli(), "providers": out}, nil
}
