package config

import "fmt"

// The pdf tool's limits: OpenClaw's defaults for agents.defaults.pdfMaxMb
// and pdfMaxPages, and Talon's ceilings on them. OpenClaw has no ceiling;
// Talon holds one because a tenant's config sets these keys and every
// megabyte and page is read into the gateway's memory.
const (
	DefaultPDFMaxMb    = 10
	DefaultPDFMaxPages = 20
	MaxPDFMaxMb        = 50
	MaxPDFMaxPages     = 200
)

// PDFMaxBytes is the per-PDF size cap of agents.defaults.pdfMaxMb in
// bytes, DefaultPDFMaxMb when it is unset.
func (d *AgentDefaults) PDFMaxBytes() int64 {
	mb := float64(DefaultPDFMaxMb)
	if d != nil && d.PDFMaxMb != nil {
		mb = *d.PDFMaxMb
	}
	return int64(mb * (1 << 20))
}

// PDFMaxPageCount is agents.defaults.pdfMaxPages, floored as OpenClaw
// does, DefaultPDFMaxPages when it is unset.
func (d *AgentDefaults) PDFMaxPageCount() int {
	if d == nil || d.PDFMaxPages == nil {
		return DefaultPDFMaxPages
	}
	return int(*d.PDFMaxPages)
}

// pdf checks agents.defaults.pdfMaxMb and pdfMaxPages.
func (k *checker) pdf(at string, d *AgentDefaults) {
	if v := d.PDFMaxMb; v != nil && !(*v > 0 && *v <= MaxPDFMaxMb) {
		k.fail(at+".pdfMaxMb", fmt.Sprintf("expected a number of megabytes above 0 and at most %d (got %v)", MaxPDFMaxMb, *v))
	}
	if v := d.PDFMaxPages; v != nil && !(*v >= 1 && *v < MaxPDFMaxPages+1) {
		k.fail(at+".pdfMaxPages", fmt.Sprintf("expected a number of pages from 1 to %d (got %v)", MaxPDFMaxPages, *v))
	}
}
