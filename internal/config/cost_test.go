package config

import (
	"math"
	"testing"
)

// TestModelCost: the price is found by provider and model id, and a
// call's cost is its counts times the prices per million tokens, in
// micro-dollars.
func TestModelCost(t *testing.T) {
	cfg, _, err := decodeJSON5(t, `{models: {providers: {
		p: {models: [{id: "m", cost: {input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75}}, {id: "free"}]},
	}}}`)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name                 string
		ref                  ModelRef
		in, out, read, write int64
		want                 int64
		priced               bool
	}{
		{"all kinds", ModelRef{Provider: "p", Model: "m"}, 1000, 200, 10_000, 400, 3000 + 3000 + 3000 + 1500, true},
		{"rounded", ModelRef{Provider: "p", Model: "m"}, 0, 0, 1, 0, 0, true},
		{"negative counts are none", ModelRef{Provider: "p", Model: "m"}, -5, 1, 0, 0, 15, true},
		{"saturates", ModelRef{Provider: "p", Model: "m"}, 0, math.MaxInt64, 0, 0, math.MaxInt64, true},
		{"unpriced model", ModelRef{Provider: "p", Model: "free"}, 1, 1, 1, 1, 0, false},
		{"unknown model", ModelRef{Provider: "p", Model: "x"}, 1, 1, 1, 1, 0, false},
		{"no provider", ModelRef{Model: "m"}, 1, 1, 1, 1, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg.ModelCost(tc.ref)
			if (c != nil) != tc.priced {
				t.Fatalf("ModelCost(%v) = %v, want priced %v", tc.ref, c, tc.priced)
			}
			if c == nil {
				return
			}
			if got := c.MicroUSD(tc.in, tc.out, tc.read, tc.write); got != tc.want {
				t.Errorf("MicroUSD = %d, want %d", got, tc.want)
			}
		})
	}
}
