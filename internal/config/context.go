package config

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// This file is the context-management part of the config: the keys of
// agents.defaults.compaction and agents.defaults.contextPruning (and an
// agent's own compaction and contextPruning, Talon's per-agent override),
// and the duration and byte-size values they are written in. What the
// values mean is internal/compaction's business; here they are only
// decoded and checked.

// Compaction is `agents.defaults.compaction` or `agents.list[].compaction`
// (spec context.md §5.1). Every field is optional; an agent's field, when
// set, replaces the defaults' one.
type Compaction struct {
	Enabled *bool  `json:"enabled"`
	Mode    string `json:"mode"` // default | safeguard
	// ReserveTokens and ReserveTokensFloor are OpenClaw's earlier keys
	// for the headroom kept free (the effective reserve is the larger,
	// capped at a quarter of the window).
	ReserveTokens      *int `json:"reserveTokens"`
	ReserveTokensFloor *int `json:"reserveTokensFloor"`
	KeepRecentTokens   *int `json:"keepRecentTokens"`
	TimeoutSeconds     *int `json:"timeoutSeconds"`
	// Model is the model summaries are made with: a model reference or an
	// alias of agents.defaults.models.
	Model string `json:"model"`
	// IdentifierPolicy is strict, off or custom; custom uses
	// IdentifierInstructions (an earlier OpenClaw key).
	IdentifierPolicy       string        `json:"identifierPolicy"`
	IdentifierInstructions string        `json:"identifierInstructions"`
	QualityGuard           *QualityGuard `json:"qualityGuard"`
	NotifyUser             *bool         `json:"notifyUser"`
	// MaxActiveTranscriptBytes is a byte size: a number of bytes or a
	// string such as "20mb" (ParseByteSize).
	MaxActiveTranscriptBytes *Raw        `json:"maxActiveTranscriptBytes"`
	MidTurnPrecheck          Toggle      `json:"midTurnPrecheck"`
	MemoryFlush              MemoryFlush `json:"memoryFlush"`
}

// QualityGuard is `compaction.qualityGuard`.
type QualityGuard struct {
	Enabled    *bool `json:"enabled"`
	MaxRetries *int  `json:"maxRetries"`
}

// MemoryFlush is `compaction.memoryFlush` (spec §6).
type MemoryFlush struct {
	Enabled             *bool  `json:"enabled"`
	SoftThresholdTokens *int   `json:"softThresholdTokens"`
	Model               string `json:"model"`
	// Prompt and SystemPrompt replace the built-in texts (earlier
	// OpenClaw keys).
	Prompt       string `json:"prompt"`
	SystemPrompt string `json:"systemPrompt"`
	// ForceFlushTranscriptBytes is a byte size; 0 turns the size trigger
	// off.
	ForceFlushTranscriptBytes *Raw `json:"forceFlushTranscriptBytes"`
}

// ContextPruning is `agents.defaults.contextPruning` or
// `agents.list[].contextPruning` (spec §7).
type ContextPruning struct {
	Mode string `json:"mode"` // off | cache-ttl
	// TTL is a duration; a bare number is minutes (ParseDuration).
	TTL string `json:"ttl"`
	// The knobs below are OpenClaw's earlier ones, built in since 9.6.
	KeepLastAssistants   *int      `json:"keepLastAssistants"`
	SoftTrimRatio        *float64  `json:"softTrimRatio"`
	HardClearRatio       *float64  `json:"hardClearRatio"`
	MinPrunableToolChars *int      `json:"minPrunableToolChars"`
	SoftTrim             SoftTrim  `json:"softTrim"`
	HardClear            HardClear `json:"hardClear"`
	// Tools are the tool names whose results may be pruned: globs as the
	// tool policy reads them; deny wins, an empty allow allows all.
	Tools struct {
		Allow List `json:"allow"`
		Deny  List `json:"deny"`
	} `json:"tools"`
}

// SoftTrim is `contextPruning.softTrim`.
type SoftTrim struct {
	MaxChars  *int `json:"maxChars"`
	HeadChars *int `json:"headChars"`
	TailChars *int `json:"tailChars"`
}

// HardClear is `contextPruning.hardClear`.
type HardClear struct {
	Enabled     *bool  `json:"enabled"`
	Placeholder string `json:"placeholder"`
}

var (
	compactionModes  = []string{"default", "safeguard"}
	identifierPolicy = []string{"strict", "off", "custom"}
	pruningModes     = []string{"off", "cache-ttl"}
)

// MaxContextTokens bounds every token count of the config: ten million,
// far above any model's window, so that sums of them never overflow.
const MaxContextTokens = 10_000_000

// contextWindowKeys checks the window a models.providers entry or one of
// its models states: a positive number of tokens.
func (k *checker) contextWindowKeys(path string, window, tokens *float64) {
	for _, f := range []struct {
		key string
		v   *float64
	}{{"contextWindow", window}, {"contextTokens", tokens}} {
		if f.v != nil && !(*f.v >= 1 && *f.v <= MaxContextTokens) {
			k.fail(path+"."+f.key, fmt.Sprintf("expected a number of tokens from 1 to %d (got %v)", MaxContextTokens, *f.v))
		}
	}
}

// compaction checks one compaction block.
func (k *checker) compaction(path string, c *Compaction) {
	k.oneOf(path+".mode", c.Mode, compactionModes)
	k.oneOf(path+".identifierPolicy", c.IdentifierPolicy, identifierPolicy)
	k.upTo(path+".reserveTokens", c.ReserveTokens, 0)
	k.upTo(path+".reserveTokensFloor", c.ReserveTokensFloor, 0)
	k.upTo(path+".keepRecentTokens", c.KeepRecentTokens, 1)
	k.between(path+".timeoutSeconds", c.TimeoutSeconds, 24*3600)
	if c.QualityGuard != nil && c.QualityGuard.MaxRetries != nil && (*c.QualityGuard.MaxRetries < 0 || *c.QualityGuard.MaxRetries > 10) {
		k.fail(path+".qualityGuard.maxRetries", fmt.Sprintf("expected an integer from 0 to 10 (got %d)", *c.QualityGuard.MaxRetries))
	}
	if c.IdentifierPolicy == "custom" && strings.TrimSpace(c.IdentifierInstructions) == "" {
		k.fail(path+".identifierInstructions", `identifierPolicy "custom" needs identifierInstructions`)
	}
	k.byteSize(path+".maxActiveTranscriptBytes", c.MaxActiveTranscriptBytes)
	k.upTo(path+".memoryFlush.softThresholdTokens", c.MemoryFlush.SoftThresholdTokens, 0)
	k.byteSize(path+".memoryFlush.forceFlushTranscriptBytes", c.MemoryFlush.ForceFlushTranscriptBytes)
	for _, m := range []struct{ key, ref string }{{".model", c.Model}, {".memoryFlush.model", c.MemoryFlush.Model}} {
		if m.ref != "" {
			if _, err := ParseModelRef(m.ref); err != nil {
				k.fail(path+m.key, err.Error())
			}
		}
	}
}

// userTimezone checks agents.defaults.userTimezone names a time zone.
func (k *checker) userTimezone(path, name string) {
	if _, err := UserLocation(name); err != nil {
		k.fail(path, err.Error())
	}
}

// UserLocation is the time zone agents.defaults.userTimezone names: nil
// for none (UTC), an error for a name that is not an IANA zone.
func UserLocation(name string) (*time.Location, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return nil, nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil || strings.EqualFold(name, "local") {
		return nil, fmt.Errorf("unknown time zone %q: expected an IANA name such as \"Europe/Vienna\"", name)
	}
	return loc, nil
}

// contextPruning checks one contextPruning block.
func (k *checker) contextPruning(path string, p *ContextPruning) {
	k.oneOf(path+".mode", p.Mode, pruningModes)
	if p.TTL != "" {
		if _, err := ParseDuration(p.TTL, time.Minute); err != nil {
			k.fail(path+".ttl", err.Error())
		}
	}
	k.upTo(path+".keepLastAssistants", p.KeepLastAssistants, 0)
	k.upTo(path+".minPrunableToolChars", p.MinPrunableToolChars, 0)
	for _, r := range []struct {
		key string
		v   *float64
	}{{".softTrimRatio", p.SoftTrimRatio}, {".hardClearRatio", p.HardClearRatio}} {
		if r.v != nil && !(*r.v >= 0 && *r.v <= 1) {
			k.fail(path+r.key, fmt.Sprintf("expected a ratio from 0 to 1 (got %v)", *r.v))
		}
	}
	k.upTo(path+".softTrim.maxChars", p.SoftTrim.MaxChars, 0)
	k.upTo(path+".softTrim.headChars", p.SoftTrim.HeadChars, 0)
	k.upTo(path+".softTrim.tailChars", p.SoftTrim.TailChars, 0)
}

// upTo checks an optional integer is from min to MaxContextTokens.
func (k *checker) upTo(path string, v *int, min int) {
	if v != nil && (*v < min || *v > MaxContextTokens) {
		k.fail(path, fmt.Sprintf("expected an integer from %d to %d (got %d)", min, MaxContextTokens, *v))
	}
}

// byteSize checks an optional byte size.
func (k *checker) byteSize(path string, raw *Raw) {
	if _, err := ByteSize(raw); err != nil {
		k.fail(path, err.Error())
	}
}

// ByteSize reads a byte-size value: absent is 0, a whole number of bytes,
// or a string ParseByteSize reads.
func ByteSize(raw *Raw) (int64, error) {
	if raw == nil || raw.Value == nil || raw.Kind == Null {
		return 0, nil
	}
	switch raw.Kind {
	case Number:
		f, ok := floatValue(raw.Value)
		if !ok || f < 0 || f != math.Trunc(f) || f > maxByteSize {
			return 0, fmt.Errorf("expected a whole number of bytes from 0 to %d, or a size such as \"20mb\"", int64(maxByteSize))
		}
		return int64(f), nil
	case String:
		return ParseByteSize(raw.Str)
	}
	return 0, fmt.Errorf("expected a number of bytes or a size such as \"20mb\" (got %s)", raw.Kind)
}

// maxByteSize bounds byte sizes: a terabyte, which no transcript reaches.
const maxByteSize = 1 << 40

var byteSizeRE = regexp.MustCompile(`^(\d+(?:\.\d+)?)([a-z]*)$`)

// byteUnits are OpenClaw's byte-size units: binary multiples.
var byteUnits = map[string]float64{"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "t": 1 << 40, "tb": 1 << 40}

// ParseByteSize reads a byte size as OpenClaw does: a number with an
// optional binary unit (b, kb, mb, gb, tb or their first letter, any
// case), "2mb" being 2 MiB; a bare number is bytes.
func ParseByteSize(s string) (int64, error) {
	m := byteSizeRE.FindStringSubmatch(strings.ToLower(strings.TrimSpace(s)))
	if m == nil {
		return 0, fmt.Errorf("invalid byte size %q: use values like 512kb, 10mb, 1gb or 500", s)
	}
	unit, ok := byteUnits[m[2]]
	if !ok {
		return 0, fmt.Errorf("invalid byte size %q: unknown unit %q (use b, kb, mb, gb or tb)", s, m[2])
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil || math.Round(n*unit) > maxByteSize {
		return 0, fmt.Errorf("invalid byte size %q: at most 1tb", s)
	}
	return int64(math.Round(n * unit)), nil
}

var (
	durationOneRE  = regexp.MustCompile(`^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$`)
	durationPartRE = regexp.MustCompile(`(\d+(?:\.\d+)?)(ms|s|m|h|d)`)
)

var durationUnits = map[string]time.Duration{"ms": time.Millisecond, "s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}

// maxDuration bounds config durations: a year.
const maxDuration = 366 * 24 * time.Hour

// ParseDuration reads a duration as OpenClaw does: "500ms", "30s", "5m",
// "2h", "1d" or composites such as "1h30m", any case; a bare number is in
// bare (contextPruning.ttl: minutes).
func ParseDuration(s string, bare time.Duration) (time.Duration, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	bad := fmt.Errorf("invalid duration %q: use values like 500ms, 30s, 5m, 2h or 1h30m", s)
	if t == "" {
		return 0, bad
	}
	if m := durationOneRE.FindStringSubmatch(t); m != nil {
		unit := bare
		if m[2] != "" {
			unit = durationUnits[m[2]]
		}
		return scaleDuration(m[1], unit, bad)
	}
	var total time.Duration
	consumed := 0
	for _, ix := range durationPartRE.FindAllStringSubmatchIndex(t, -1) {
		if ix[0] != consumed {
			return 0, bad
		}
		d, err := scaleDuration(t[ix[2]:ix[3]], durationUnits[t[ix[4]:ix[5]]], bad)
		if err != nil {
			return 0, err
		}
		total += d
		consumed = ix[1]
		if total > maxDuration {
			return 0, bad
		}
	}
	if consumed != len(t) {
		return 0, bad
	}
	return total, nil
}

func scaleDuration(num string, unit time.Duration, bad error) (time.Duration, error) {
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || n*float64(unit) > float64(maxDuration) {
		return 0, bad
	}
	return time.Duration(math.Round(n * float64(unit))), nil
}

// models checks the context windows and prices models.providers states.
func (k *checker) models(providers map[string]Provider) {
	for _, name := range slices.Sorted(maps.Keys(providers)) {
		p, at := providers[name], joinKey("models.providers", name)
		k.contextWindowKeys(at, p.ContextWindow, p.ContextTokens)
		for i, m := range p.Models {
			k.contextWindowKeys(joinIndex(at+".models", i), m.ContextWindow, m.ContextTokens)
			k.cost(joinIndex(at+".models", i)+".cost", m.Cost)
		}
	}
}
