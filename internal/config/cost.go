package config

import (
	"fmt"
	"math"
)

// MaxPrice bounds a price per million tokens: far above any model's, so
// that a call's cost fits in int64 micro-dollars whatever its counts.
const MaxPrice = 100_000

// cost checks a model's prices: each a number of dollars from 0 to
// MaxPrice.
func (k *checker) cost(path string, c *ModelCost) {
	if c == nil {
		return
	}
	for _, f := range []struct {
		key string
		v   *float64
	}{{"input", c.Input}, {"output", c.Output}, {"cacheRead", c.CacheRead}, {"cacheWrite", c.CacheWrite}} {
		if f.v != nil && !(*f.v >= 0 && *f.v <= MaxPrice) {
			k.fail(path+"."+f.key, fmt.Sprintf("expected US dollars per million tokens from 0 to %d (got %v)", MaxPrice, *f.v))
		}
	}
}

// ModelCost is the price models.providers sets for a model, nil when it
// sets none (the call's cost is then unknown, not zero).
func (c *Config) ModelCost(r ModelRef) *ModelCost {
	if c == nil || r.Provider == "" {
		return nil
	}
	for _, m := range c.Models.Providers[r.Provider].Models {
		if m.ID == r.Model {
			return m.Cost
		}
	}
	return nil
}

// MicroUSD is what a call with these token counts costs, in millionths
// of a dollar, rounded: a price per million tokens is micro-dollars per
// token. Counts below zero count as zero; the result saturates at
// math.MaxInt64.
func (m *ModelCost) MicroUSD(input, output, cacheRead, cacheWrite int64) int64 {
	price := func(p *float64) float64 {
		if p == nil || !(*p > 0) {
			return 0
		}
		return *p
	}
	n := func(v int64) float64 { return float64(max(v, 0)) }
	total := n(input)*price(m.Input) + n(output)*price(m.Output) +
		n(cacheRead)*price(m.CacheRead) + n(cacheWrite)*price(m.CacheWrite)
	if total >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(math.Round(total))
}
