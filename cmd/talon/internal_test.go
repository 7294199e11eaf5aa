package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"talon/internal/tools/pdf"
)

// TestInternalPDFText: `talon internal pdf-text` is the pdf tool's child —
// the main binary extracts a PDF sent by the tool's own Child — and the
// internal commands are hidden from help.
func TestInternalPDFText(t *testing.T) {
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		"<< /Length 35 >>\nstream\nBT /F1 12 Tf (Served by main) Tj ET\nendstream",
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	}
	var b strings.Builder
	b.WriteString("%PDF-1.4\n")
	xref := "xref\n0 6\n0000000000 65535 f \n"
	for i, o := range objs {
		xref += fmt.Sprintf("%010d 00000 n \n", b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	fmt.Fprintf(&b, "%strailer\n<< /Size 6 /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", xref, b.Len())
	data := []byte(b.String())
	c := pdf.Child{Path: os.Args[0], Args: pdf.ChildArgs, Env: []string{"TALON_TEST_MAIN=1"}, Limits: pdf.DefaultChildLimits}
	doc, err := c.Extract(context.Background(), data, nil, pdf.DefaultLimits)
	if err != nil || len(doc.Pages) != 1 || doc.Pages[0].Text != "Served by main" {
		t.Fatalf("Extract through talon internal pdf-text = %+v, %v", doc, err)
	}
	out, _, _ := talon(t, "", "--help")
	if strings.Contains(out, "internal") {
		t.Errorf("help shows the internal commands:\n%s", out)
	}
}
