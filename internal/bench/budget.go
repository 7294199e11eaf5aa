package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
)

// Budget is a checked-in ceiling for figures: `{"comment": "…", "max":
// {"<figure id>": number, …}}`. A figure breaks its budget when it is
// above its max.
type Budget struct {
	File string
	Max  map[string]float64
}

// Breach is a figure over its budget.
type Breach struct {
	ID    string  `json:"id"`
	What  string  `json:"what"`
	Unit  string  `json:"unit"`
	Value float64 `json:"value"`
	Max   float64 `json:"max"`
}

func (b Breach) String() string {
	return fmt.Sprintf("%s (%s) = %s, budget ≤ %s", b.ID, b.What, formatValue(b.Value, b.Unit), formatValue(b.Max, b.Unit))
}

// BudgetResult is a budget's verdict on a run.
type BudgetResult struct {
	File    string   `json:"file"`
	Checked int      `json:"checked"`
	Broken  []Breach `json:"broken"`
}

func (r *BudgetResult) String() string {
	if len(r.Broken) == 0 {
		return fmt.Sprintf("Budget %s: all %d budgeted figures within budget.", r.File, r.Checked)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Budget %s: %d of %d budgeted figures BROKE their budget:", r.File, len(r.Broken), r.Checked)
	for _, x := range r.Broken {
		b.WriteString("\n- " + x.String())
	}
	return b.String()
}

// LoadBudget reads and parses a budget file.
func LoadBudget(path string) (*Budget, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the budget file: %w", err)
	}
	return ParseBudget(path, data)
}

// ParseBudget parses a budget file's bytes; name is used in errors. Keys
// other than "comment" and "max", a figure named twice, and values that
// are not finite non-negative numbers are errors.
func ParseBudget(name string, data []byte) (*Budget, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("budget file %s: "+format, append([]any{name}, args...)...)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fail("not a JSON object: %v", err)
	}
	for k := range top {
		if k != "comment" && k != "max" {
			return nil, fail("unknown key %q (want \"comment\" and \"max\")", k)
		}
	}
	if c, ok := top["comment"]; ok {
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return nil, fail("\"comment\": want a string, got %s", c)
		}
	}
	raw, ok := top["max"]
	if !ok {
		return nil, fail("no \"max\" object: nothing to check")
	}
	keys, err := objectKeys(raw)
	if err != nil {
		return nil, fail("\"max\": %v", err)
	}
	var vals map[string]json.RawMessage
	if err := json.Unmarshal(raw, &vals); err != nil {
		return nil, fail("\"max\": %v", err)
	}
	b := &Budget{File: name, Max: map[string]float64{}}
	for _, k := range keys {
		if _, dup := b.Max[k]; dup {
			return nil, fail("\"max\": %q is given twice", k)
		}
		var v float64
		if err := json.Unmarshal(vals[k], &v); err != nil || string(vals[k]) == "null" {
			return nil, fail("\"max\".%q: want a number, got %s", k, vals[k])
		}
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fail("\"max\".%q: %v is not a budget (want a number ≥ 0)", k, v)
		}
		b.Max[k] = v
	}
	if len(b.Max) == 0 {
		return nil, fail("\"max\" is empty: nothing to check")
	}
	return b, nil
}

// objectKeys lists a JSON object's keys in order, duplicates included
// (json.Unmarshal keeps only the last of a duplicate).
func objectKeys(raw json.RawMessage) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("want an object of figure id → number")
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, t.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	if _, err := dec.Token(); err != nil && err != io.EOF {
		return nil, err
	}
	return keys, nil
}

// Validate fails when the budget names a figure that is not among figs
// (a typo, or a figure this plan does not measure), listing the ones it
// could name.
func (b *Budget) Validate(figs []Figure) error {
	known := map[string]bool{}
	var ids []string
	for _, f := range figs {
		known[f.ID] = true
		ids = append(ids, f.ID)
	}
	var unknown []string
	for id := range b.Max {
		if !known[id] {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return fmt.Errorf("budget file %s: no such figure %s; the figures are: %s",
			b.File, strings.Join(quoteAll(unknown), ", "), strings.Join(ids, ", "))
	}
	return nil
}

// Check compares talon's figures against the budget, in the figures'
// order.
func (b *Budget) Check(figs []Figure) *BudgetResult {
	r := &BudgetResult{File: b.File, Broken: []Breach{}}
	for _, f := range figs {
		limit, ok := b.Max[f.ID]
		if !ok {
			continue
		}
		r.Checked++
		if f.Talon > limit || math.IsNaN(f.Talon) {
			r.Broken = append(r.Broken, Breach{ID: f.ID, What: f.Group + ": " + f.What, Unit: f.Unit, Value: f.Talon, Max: limit})
		}
	}
	return r
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = fmt.Sprintf("%q", x)
	}
	return out
}
