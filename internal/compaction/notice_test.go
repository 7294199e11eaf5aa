package compaction

import "testing"

// TestFormatTokens: R9.1's compact counts, as OpenClaw formats them.
func TestFormatTokens(t *testing.T) {
	for n, want := range map[int64]string{
		-5: "0", 0: "0", 950: "950", 999: "999", 1_000: "1.0k", 5_500: "5.5k", 9_949: "9.9k", 10_000: "10k",
		145_000: "145k", 145_499: "145k", 200_000: "200k", 999_499: "999k", 999_500: "1.0m", 1_050_000: "1.1m",
	} {
		if got := FormatTokens(n); got != want {
			t.Errorf("FormatTokens(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestNotices: R9.1's /compact replies.
func TestNotices(t *testing.T) {
	tests := []struct{ got, want string }{
		{NoticeCompacted(145_000, 30_000, 200_000), "⚙️ Compacted (145k → 30k) • Context 30k/200k (15%)"},
		{NoticeSkipped(ErrNothingToCompact.Error(), 12_000, 200_000), "⚙️ Compaction skipped: nothing compactable in this session yet • Context 12k/200k (6%)"},
		{NoticeFailed("the summary model timed out", 190_000, 200_000), "⚙️ Compaction failed: the summary model timed out • Context 190k/200k (95%)"},
		{NoticeUnavailable("the previous run is still stopping"), "⚙️ Compaction unavailable: the previous run is still stopping."},
		{ContextUsage(0, 200_000), "Context ?/200k"},
		{ContextUsage(5_000, 0), "Context 5.0k/?"},
		{ContextUsage(3_000_000, 1_000), "Context 3.0m/1.0k (999%)"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
