package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// Figure is one measured number. ID is stable (budgets and later runs
// refer to it); Group is the measurement it belongs to.
type Figure struct {
	ID    string  `json:"id"`
	Group string  `json:"group"`
	What  string  `json:"what"`
	Unit  string  `json:"unit"` // "ms", "µs", "MB" (10^6 bytes), "KB" (10^3), "files" or "count"
	Talon float64 `json:"talon"`
	// OpenClaw is the same figure for OpenClaw when compared; nil when not
	// compared or when OpenClaw has no such figure (goroutines).
	OpenClaw *float64 `json:"openclaw,omitempty"`
	// Ratio is OpenClaw ÷ talon, when both are there and talon's is not 0.
	Ratio *float64 `json:"openclaw_ratio,omitempty"`
}

// Machine says where the figures were measured.
type Machine struct {
	CPUs int    `json:"cpus"`
	CPU  string `json:"cpu"`
	OS   string `json:"os"`
	Arch string `json:"arch"`
	Go   string `json:"go"` // the toolchain that built the harness
}

// Report is the outcome of a run: what `talon bench` prints and writes.
type Report struct {
	Format  int       `json:"format"` // 1; bumped when a field changes meaning
	Date    time.Time `json:"date"`
	Mode    string    `json:"mode"` // quick, full or custom
	Command string    `json:"command,omitempty"`
	Machine Machine   `json:"machine"`
	Binary  string    `json:"talon_binary"`
	// OpenClaw names the OpenClaw install compared against, if any.
	OpenClaw string        `json:"openclaw,omitempty"`
	Plan     Plan          `json:"plan"`
	Seconds  float64       `json:"seconds"`
	Figures  []Figure      `json:"figures"`
	Notes    []string      `json:"notes"`
	Budget   *BudgetResult `json:"budget,omitempty"`
}

// Figure returns the figure with that ID.
func (r *Report) Figure(id string) (Figure, bool) {
	for _, f := range r.Figures {
		if f.ID == id {
			return f, true
		}
	}
	return Figure{}, false
}

// setRatios fills Ratio wherever both sides have a figure.
func (r *Report) setRatios() {
	for i := range r.Figures {
		f := &r.Figures[i]
		f.Ratio = nil
		if f.OpenClaw != nil && f.Talon != 0 {
			v := *f.OpenClaw / f.Talon
			f.Ratio = &v
		}
	}
}

// Markdown writes the report as a heading line, a table with one row per
// figure (and OpenClaw's column and the ratio when compared), the notes,
// and the budget's verdict.
func (r *Report) Markdown(w io.Writer) error {
	var b strings.Builder
	mode := r.Mode
	if len(r.Plan.Only) > 0 {
		mode += ", only " + strings.Join(r.Plan.Only, ", ")
	}
	fmt.Fprintf(&b, "talon bench (%s), %s, %d CPUs (%s), %s %s/%s, %.0f s\n\n", mode,
		r.Date.UTC().Format("2006-01-02 15:04 UTC"), r.Machine.CPUs, r.Machine.CPU, r.Machine.Go, r.Machine.OS, r.Machine.Arch, r.Seconds)
	compared := r.OpenClaw != ""
	if compared {
		fmt.Fprintf(&b, "Compared with %s.\n\n", r.OpenClaw)
	}
	if compared {
		b.WriteString("| measurement | figure | talon | OpenClaw | OpenClaw ÷ talon | id |\n|---|---|---:|---:|---:|---|\n")
	} else {
		b.WriteString("| measurement | figure | talon | id |\n|---|---|---:|---|\n")
	}
	for _, f := range r.Figures {
		fmt.Fprintf(&b, "| %s | %s | %s |", f.Group, f.What, formatValue(f.Talon, f.Unit))
		if compared {
			oc, ratio := "—", "—"
			if f.OpenClaw != nil {
				oc = formatValue(*f.OpenClaw, f.Unit)
			}
			if f.Ratio != nil {
				ratio = formatRatio(*f.Ratio)
			}
			fmt.Fprintf(&b, " %s | %s |", oc, ratio)
		}
		fmt.Fprintf(&b, " `%s` |\n", f.ID)
	}
	if len(r.Notes) > 0 {
		b.WriteString("\n")
		for _, n := range r.Notes {
			b.WriteString("- " + n + "\n")
		}
	}
	if r.Budget != nil {
		b.WriteString("\n" + r.Budget.String() + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the report, indented, to path (atomically: a reader
// never sees half a file).
func (r *Report) WriteJSON(path string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the report: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// formatValue prints about three significant digits, whole counts, and
// thousands separators, with the unit.
func formatValue(v float64, unit string) string {
	var s string
	switch {
	case unit == "count" || math.Abs(v) >= 100:
		s = thousands(int64(math.Round(v)))
	case math.Abs(v) >= 10:
		s = strconv.FormatFloat(v, 'f', 1, 64)
	default:
		s = strconv.FormatFloat(v, 'f', 2, 64)
	}
	if unit == "count" {
		return s
	}
	return s + " " + unit
}

func formatRatio(r float64) string {
	if r >= 10 {
		return thousands(int64(math.Round(r))) + "×"
	}
	return strconv.FormatFloat(r, 'f', 1, 64) + "×"
}

func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}
