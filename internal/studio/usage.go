package studio

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"talon/internal/budget"
)

// usageView is the Usage page: the month's usage by day, drawn on the
// server (no script), with the budget in force.
type usageView struct {
	Month  string // "November 2026"
	Status budgetStatus
	Chart  *usageChart
}

// budgetStatus is usage.budget's answer.
type budgetStatus struct {
	Month string `json:"month"`
	Used  struct {
		Tokens  int64   `json:"tokens"`
		CostUSD float64 `json:"costUsd"`
	} `json:"used"`
	Budget *struct {
		MonthlyTokens  *int64   `json:"monthlyTokens"`
		MonthlyCostUSD *float64 `json:"monthlyCostUsd"`
		AlertAt        float64  `json:"alertAt"`
	} `json:"budget"`
	Fraction float64 `json:"fraction"`
	Reached  bool    `json:"reached"`
	ResetsAt string  `json:"resetsAt"`
}

// Summary is the month's total and the budget, in one line.
func (b budgetStatus) Summary() string {
	used := fmt.Sprintf("%s tokens, %s", groupDigits(b.Used.Tokens), budget.USD(int64(b.Used.CostUSD*1e6+0.5)))
	if b.Budget == nil {
		return used + " (no budget)"
	}
	var limits []string
	if b.Budget.MonthlyTokens != nil {
		limits = append(limits, groupDigits(*b.Budget.MonthlyTokens)+" tokens")
	}
	if b.Budget.MonthlyCostUSD != nil {
		limits = append(limits, budget.USD(int64(*b.Budget.MonthlyCostUSD*1e6+0.5)))
	}
	return fmt.Sprintf("%s of %s (%.0f%%)", used, strings.Join(limits, ", "), b.Fraction*100)
}

// dayUsage is one day of usage.cost's daily rows.
type dayUsage struct {
	Date        string  `json:"date"`
	TotalTokens int64   `json:"totalTokens"`
	TotalCost   float64 `json:"totalCost"`
}

func (s *Server) usagePage(q *req) {
	v := &usageView{}
	p := s.newPage(q, "Usage", "usage", v)
	now := time.Now().UTC()
	start, _ := budget.Month(now)
	v.Month = start.Format("January 2006")
	if err := s.call(q, "usage.budget", map[string]any{}, &v.Status); err != nil {
		p.Error = s.errText(q, err)
		s.render(q.w, http.StatusBadGateway, "usage", p)
		return
	}
	var cost struct {
		Daily []dayUsage `json:"daily"`
	}
	params := map[string]any{"agentScope": "all", "startDate": start.Format(time.DateOnly), "endDate": now.Format(time.DateOnly)}
	if err := s.call(q, "usage.cost", params, &cost); err != nil {
		p.Error = s.errText(q, err)
		s.render(q.w, http.StatusBadGateway, "usage", p)
		return
	}
	v.Chart = drawUsage(start, now.Day(), cost.Daily, v.Status)
	s.render(q.w, http.StatusOK, "usage", p)
}

// usageChart is a month's usage as SVG shapes in a Width × Height box:
// a bar per day, the running total as a line, and the budget.
type usageChart struct {
	Width, Height int
	Unit          string // "tokens" or "USD": what the chart counts
	Bars          []chartBar
	Total         string // the running total's points, for a polyline
	Budget        *chartLine
	Alert         *chartLine
	Axis          []chartTick
	Plot          chartBox
}

type chartBar struct {
	X, Y, W, H float64
	Label      string // the day, for its title
}

type chartLine struct {
	Y     float64
	Label string
}

type chartTick struct {
	Y     float64
	Label string
}

type chartBox struct{ Left, Top, Right, Bottom float64 }

// Chart geometry: a fixed view box the page scales to its width.
const (
	chartW, chartH                 = 720, 260
	padLeft, padRight, padTop, pad = 64.0, 12.0, 12.0, 28.0
)

// drawUsage lays out days 1..upTo of the month starting at start. It
// counts cost when the budget limits cost alone, else tokens; the scale
// holds the largest of the running total and the budget.
func drawUsage(start time.Time, upTo int, daily []dayUsage, st budgetStatus) *usageChart {
	days := start.AddDate(0, 1, -1).Day()
	byDate := map[string]dayUsage{}
	for _, d := range daily {
		byDate[d.Date] = d
	}
	costOnly := st.Budget != nil && st.Budget.MonthlyTokens == nil && st.Budget.MonthlyCostUSD != nil
	c := &usageChart{Width: chartW, Height: chartH, Unit: "tokens",
		Plot: chartBox{padLeft, padTop, chartW - padRight, chartH - pad}}
	value := func(d dayUsage) float64 { return float64(d.TotalTokens) }
	var limit float64 = -1
	if costOnly {
		c.Unit = "USD"
		value = func(d dayUsage) float64 { return d.TotalCost }
		limit = *st.Budget.MonthlyCostUSD
	} else if st.Budget != nil && st.Budget.MonthlyTokens != nil {
		limit = float64(*st.Budget.MonthlyTokens)
	}
	vals := make([]float64, days)
	running, top := 0.0, 0.0
	for i := range min(upTo, days) {
		vals[i] = value(byDate[start.AddDate(0, 0, i).Format(time.DateOnly)])
		running += vals[i]
	}
	top = max(running, limit)
	if top <= 0 {
		top = 1
	}
	top *= 1.1
	plotH := c.Plot.Bottom - c.Plot.Top
	slot := (c.Plot.Right - c.Plot.Left) / float64(days)
	y := func(v float64) float64 { return round1(c.Plot.Bottom - v/top*plotH) }
	var pts []string
	sum := 0.0
	for i := range min(upTo, days) {
		x := c.Plot.Left + float64(i)*slot
		sum += vals[i]
		day := start.AddDate(0, 0, i).Format("2 Jan")
		if vals[i] > 0 {
			c.Bars = append(c.Bars, chartBar{X: round1(x + slot*0.15), Y: y(vals[i]), W: round1(slot * 0.7),
				H: round1(c.Plot.Bottom - y(vals[i])), Label: day + ": " + show(vals[i], c.Unit)})
		}
		pts = append(pts, fmt.Sprintf("%g,%g", round1(x+slot/2), y(sum)))
	}
	c.Total = strings.Join(pts, " ")
	if limit >= 0 {
		c.Budget = &chartLine{Y: y(limit), Label: "budget " + show(limit, c.Unit)}
		c.Alert = &chartLine{Y: y(limit * st.Budget.AlertAt), Label: fmt.Sprintf("alert at %.0f%%", st.Budget.AlertAt*100)}
	}
	for _, f := range []float64{0, 0.5, 1} {
		v := top / 1.1 * f
		c.Axis = append(c.Axis, chartTick{Y: y(v), Label: show(v, c.Unit)})
	}
	return c
}

func round1(v float64) float64 { return float64(int64(v*10+0.5)) / 10 }

// show is a value of the chart's unit as an axis or a title says it.
func show(v float64, unit string) string {
	if unit == "USD" {
		return budget.USD(int64(v*1e6 + 0.5))
	}
	return groupDigits(int64(v+0.5)) + " tokens"
}

// groupDigits writes n with thousands separated: 1,234,567.
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
