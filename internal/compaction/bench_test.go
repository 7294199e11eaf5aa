package compaction

import (
	"fmt"
	"strings"
	"testing"

	"talon/internal/llm"
)

// session is a transcript of n messages in turns of a user message, a
// tool call, its result and an answer, each answer with the usage of its
// call: what a long-lived employee's session holds.
func session(n int) []Entry {
	es := make([]Entry, 0, n)
	for i := 0; len(es) < n; i++ {
		id := fmt.Sprint("c", i)
		for _, m := range []llm.Message{
			user(strings.Repeat("please look at the report ", 8)),
			calls("read", `{"path":"reports/q3.md"}`, id),
			result(id, "read", strings.Repeat("revenue grew in every region; ", 70)),
			says(strings.Repeat("The report says revenue grew. ", 15)),
		} {
			e := Entry{ID: fmt.Sprint("e", len(es)+1), Kind: KindMessage, Message: m}
			if m.Role == llm.RoleAssistant && m.Content != "" {
				e.Usage = Usage{Input: int64(len(es)) * 700, Output: 120}
			}
			es = append(es, e)
		}
	}
	return es[:n]
}

// BenchmarkEstimate is a turn's estimate: anchored on the last answer's
// usage it reads only what came after, whatever the session's length;
// without usage (right after a compaction, or a provider that reports
// none) it estimates the whole view.
func BenchmarkEstimate(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		es := append(session(n), Entry{ID: "new", Kind: KindMessage, Message: user("and the next quarter?")})
		b.Run(fmt.Sprintf("anchored/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Estimate(es)
			}
		})
		bare := make([]Entry, len(es))
		copy(bare, es)
		for i := range bare {
			bare[i].Usage = Usage{}
		}
		b.Run(fmt.Sprintf("unanchored/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Estimate(bare)
			}
		})
	}
}

// BenchmarkView is a turn's view: all of a session that has never been
// compacted, and the same session after a compaction, built from the
// tail the store reads (the kept tail and what followed).
func BenchmarkView(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		es := session(n)
		b.Run(fmt.Sprintf("uncompacted/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = BuildView(es)
			}
		})
		tail := append([]Entry(nil), es[n-80:]...)
		tail = append(tail, Entry{ID: "c", Kind: KindCompaction, Compaction: &Compaction{Summary: strings.Repeat("s", 8_000), FirstKeptEntryID: tail[0].ID}})
		tail = append(tail, session(40)...)
		b.Run(fmt.Sprintf("compacted/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = BuildView(tail)
			}
		})
	}
}

// BenchmarkPrepare is planning a compaction of a whole session.
func BenchmarkPrepare(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		es := session(n)
		budget := SettingsFor(nil, "main").Budget(200_000, 5_000)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Prepare(es, budget, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
