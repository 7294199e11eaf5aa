package pdf

import (
	"context"
	"testing"
)

// FuzzExtract: no input makes Extract panic or exceed its limits.
func FuzzExtract(f *testing.F) {
	f.Add(makePDF(f, "", []string{"Hello", "World"}, []string{"Page two"}))
	f.Add(handPDF(map[int]string{1: "<< /Type /Catalog /Pages 2 0 R >>", 2: "<< /Type /Pages /Kids [2 0 R] /Count 9 >>"}))
	f.Add([]byte("%PDF-1.4\n%%EOF\n"))
	lim := Limits{MaxPages: 5, MaxContentBytes: 1 << 20, MaxChars: 10_000}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := Extract(context.Background(), data, nil, lim)
		if err != nil {
			return
		}
		n := 0
		for _, p := range doc.Pages {
			n += len(p.Text)
		}
		if len(doc.Pages) > lim.MaxPages || n > lim.MaxChars {
			t.Fatalf("%d pages, %d chars: past the limits", len(doc.Pages), n)
		}
	})
}

// BenchmarkExtractPage: text extraction per page of a 20-page document,
// in process (the parse alone) and as the tool runs it, in a child
// process (its start, limits and the JSON both ways included).
func BenchmarkExtractPage(b *testing.B) {
	var pages [][]string
	for i := range 20 {
		var lines []string
		for j := range 40 {
			lines = append(lines, "Page", "line of body text with some words in it, number", string(rune('a'+(i+j)%26)))
		}
		pages = append(pages, lines[:40])
	}
	data := makePDF(b, "", pages...)
	child, err := DefaultChild()
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		extract extractFunc
	}{{"in-process", Extract}, {"child", child.Extract}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				doc, err := c.extract(context.Background(), data, nil, DefaultLimits)
				if err != nil || len(doc.Pages) != 20 {
					b.Fatal(err, len(doc.Pages))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*20), "ns/page")
		})
	}
}
