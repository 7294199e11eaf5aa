package channel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"talon/internal/config"
)

// Importing OpenClaw's pairing files (spec channels.md R7.7). Before its
// SQLite state OpenClaw kept DM pairing as JSON in ~/.openclaw/credentials:
// <channel>-pairing.json holds the pending requests of all the channel's
// accounts, <channel>-allowFrom.json the senders approved on the channel's
// default account and <channel>-<account>-allowFrom.json those of another
// account. These functions read the names and the contents; the caller
// reads the files and stores what they return.

// LegacyKind says what a legacy pairing file holds.
type LegacyKind int

// The kinds of legacy pairing files.
const (
	LegacyRequests  LegacyKind = iota + 1 // <channel>-pairing.json
	LegacyAllowFrom                       // <channel>[-<account>]-allowFrom.json
)

const (
	legacyRequestsSuffix = "-pairing.json"
	legacyAllowSuffix    = "-allowFrom.json"
	// maxLegacyID bounds a sender id: platform ids are a few dozen bytes.
	maxLegacyID = 256
)

// LegacyFile is what the name of a legacy pairing file says.
type LegacyFile struct {
	Name    string
	Kind    LegacyKind
	Channel string
	// AccountID is the normalised account of a LegacyAllowFrom file; a
	// pairing file's requests name their own.
	AccountID string
	// Skip, when not "", says why the file is not imported.
	Skip string
}

// ParseLegacyName reads the name of a file in OpenClaw's credentials
// directory; ok is false for a file that holds no pairing state (the
// directory keeps other channels' sessions and tokens too). cfg, nil for
// none, gives the channel's default account, the one
// <channel>-allowFrom.json belongs to, as OpenClaw reads it.
func ParseLegacyName(name string, cfg *config.Config) (f LegacyFile, ok bool) {
	f.Name = name
	stem, ok := strings.CutSuffix(name, legacyRequestsSuffix)
	if ok {
		f.Kind, f.Channel = LegacyRequests, stem
	} else if stem, ok = strings.CutSuffix(name, legacyAllowSuffix); ok {
		f.Kind = LegacyAllowFrom
		f.Channel, f.AccountID, f.Skip = allowFileTarget(stem, cfg)
	} else {
		return LegacyFile{}, false
	}
	if f.Skip == "" && !slices.Contains(config.BuiltChannels, f.Channel) {
		f.Skip = fmt.Sprintf("%q is not a channel Talon runs (%s)", stem, strings.Join(config.BuiltChannels, ", "))
	}
	return f, true
}

// allowFileTarget splits the stem of an allowFrom file name into channel
// and account; skip says why it cannot be imported.
func allowFileTarget(stem string, cfg *config.Config) (ch, account, skip string) {
	for _, ch := range config.BuiltChannels {
		if stem == ch {
			return ch, legacyDefaultAccount(cfg, ch), ""
		}
		if key, ok := strings.CutPrefix(stem, ch+"-"); ok {
			if strings.TrimSpace(key) == "" {
				return ch, "", "the name has no account id between the channel and -allowFrom.json"
			}
			return ch, config.NormalizeAccountID(key), ""
		}
	}
	return stem, "", ""
}

func legacyDefaultAccount(cfg *config.Config, ch string) string {
	if cfg != nil {
		if id, _ := DefaultAccountID(cfg, ch); id != "" {
			return id
		}
	}
	return config.NormalizeAccountID("")
}

// LegacySkip is an entry of a legacy file that is not imported, and why.
type LegacySkip struct {
	Index  int    // of the entry in the file's list
	Entry  string // where in the file: "requests[2]", "allowFrom[0]"
	Reason string
}

// LegacyRequest is a pending request read from a pairing file.
type LegacyRequest struct {
	Index      int    // in the file's requests
	Entry      string // where in the file, for reports
	AccountID  string // normalised
	SenderID   string
	Code       string // normalised and valid
	CreatedAt  time.Time
	LastSeenAt time.Time
	// Meta is the request's string metadata (OpenClaw keeps only strings),
	// accountId set to AccountID.
	Meta map[string]string
}

// LegacyPairing is what a pairing file holds: the requests to import,
// how many had expired, and the entries skipped.
type LegacyPairing struct {
	Requests []LegacyRequest
	Expired  int
	Skipped  []LegacySkip
}

// ParseLegacyPairing reads pairing file f ({"version":1,"requests":[…]})
// at now. An entry OpenClaw would not have kept, or that Talon's rules
// refuse, is skipped with its reason; a request past PairingTTL is
// counted as expired. The error is for a file that is not such JSON.
func ParseLegacyPairing(f LegacyFile, data []byte, now time.Time) (LegacyPairing, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return LegacyPairing{}, fmt.Errorf("parsing %s: not a JSON object: %w", f.Name, err)
	}
	var entries []json.RawMessage
	if raw, ok := top["requests"]; !ok || json.Unmarshal(raw, &entries) != nil || entries == nil {
		return LegacyPairing{}, fmt.Errorf("parsing %s: no \"requests\" list", f.Name)
	}
	var out LegacyPairing
	for i, raw := range entries {
		at := fmt.Sprintf("requests[%d]", i)
		r, err := legacyRequest(raw, now)
		switch {
		case err != nil:
			out.Skipped = append(out.Skipped, LegacySkip{i, at, err.Error()})
		case (PairingRequest{CreatedAt: r.CreatedAt}).Expired(now):
			out.Expired++
		default:
			r.Index, r.Entry = i, at
			out.Requests = append(out.Requests, r)
		}
	}
	return out, nil
}

// legacyRequest reads one request as OpenClaw's normalizeLegacyPairingRequest
// does, and checks its id and code as Talon's own.
func legacyRequest(raw json.RawMessage, now time.Time) (LegacyRequest, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return LegacyRequest{}, errors.New("not a JSON object")
	}
	fields := map[string]string{}
	for _, k := range []string{"id", "code", "createdAt", "lastSeenAt"} {
		s, err := jsonText(m[k])
		if err != nil {
			return LegacyRequest{}, fmt.Errorf("%s is not a string", k)
		}
		if s == "" && k != "lastSeenAt" {
			return LegacyRequest{}, fmt.Errorf("no %s", k)
		}
		fields[k] = s
	}
	if err := checkLegacyID(fields["id"]); err != nil {
		return LegacyRequest{}, fmt.Errorf("sender id: %w", err)
	}
	r := LegacyRequest{SenderID: fields["id"], Code: NormalizeCode(fields["code"])}
	if !ValidCode(r.Code) {
		return LegacyRequest{}, fmt.Errorf("code %.32q is not %d characters of %s", fields["code"], PairingCodeLen, PairingAlphabet)
	}
	var err error
	if r.CreatedAt, err = time.Parse(time.RFC3339Nano, fields["createdAt"]); err != nil {
		return LegacyRequest{}, fmt.Errorf("createdAt %.40q is not an ISO 8601 time", fields["createdAt"])
	}
	if r.CreatedAt.After(now) {
		// It would outlive PairingTTL.
		return LegacyRequest{}, fmt.Errorf("createdAt %s is in the future", fields["createdAt"])
	}
	r.LastSeenAt = r.CreatedAt
	if s := fields["lastSeenAt"]; s != "" {
		if r.LastSeenAt, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return LegacyRequest{}, fmt.Errorf("lastSeenAt %.40q is not an ISO 8601 time", s)
		}
	}
	if r.LastSeenAt.Before(r.CreatedAt) {
		r.LastSeenAt = r.CreatedAt
	}
	if r.LastSeenAt.After(now) {
		r.LastSeenAt = now
	}
	r.Meta = legacyMeta(m["meta"])
	r.AccountID = config.NormalizeAccountID(r.Meta["accountId"])
	r.Meta["accountId"] = r.AccountID
	return r, nil
}

// jsonText is a JSON string trimmed; "" for none or null.
func jsonText(raw json.RawMessage) (string, error) {
	if raw == nil || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", err
	}
	return strings.TrimSpace(s), nil
}

// legacyMeta keeps the non-empty string values of a request's meta, as
// OpenClaw's import does; anything else there is dropped.
func legacyMeta(raw json.RawMessage) map[string]string {
	out := map[string]string{}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return out
	}
	for k, v := range m {
		if s, err := jsonText(v); err == nil && s != "" {
			out[k] = s
		}
	}
	return out
}

// checkLegacyID refuses what cannot be one sender's platform id. A
// colon marks a prefix EntryID does not know, or "accessGroup:", which
// in the pairing store would let a whole config group in.
func checkLegacyID(id string) error {
	switch {
	case id == "*":
		return errors.New(`"*" (anyone) is not imported: dmPolicy "open" in the config says that`)
	case len(id) > maxLegacyID:
		return fmt.Errorf("longer than %d bytes", maxLegacyID)
	case strings.ContainsFunc(id, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r == unicode.ReplacementChar }):
		return fmt.Errorf("%.64q has spaces, control characters or invalid UTF-8", id)
	case strings.HasPrefix(strings.ToLower(id), "accessgroup:"):
		return fmt.Errorf("%.64q is an access group: those belong in the config's allowFrom", id)
	case strings.Contains(id, ":"):
		return fmt.Errorf("%.64q has a prefix this channel does not use", id)
	}
	return nil
}

// LegacyAllow is what an allowFrom file holds: the approved senders to
// import, de-duplicated, and the entries skipped.
type LegacyAllow struct {
	SenderIDs []string
	Skipped   []LegacySkip
}

// ParseLegacyAllowFrom reads allowFrom file f: a JSON list, or an object
// whose "allowFrom" is one, of strings or integers. The channel's
// prefixes are stripped (EntryID); blank entries are dropped; "*" and
// what is not one sender's id are skipped with the reason. The error is
// for a file that is not such JSON.
func ParseLegacyAllowFrom(f LegacyFile, data []byte) (LegacyAllow, error) {
	var list []json.RawMessage
	if err := json.Unmarshal(data, &list); err != nil {
		var obj map[string]json.RawMessage
		if json.Unmarshal(data, &obj) != nil {
			return LegacyAllow{}, fmt.Errorf("parsing %s: not a JSON list or object: %w", f.Name, err)
		}
		if raw, ok := obj["allowFrom"]; !ok || json.Unmarshal(raw, &list) != nil || list == nil {
			return LegacyAllow{}, fmt.Errorf("parsing %s: no \"allowFrom\" list", f.Name)
		}
	}
	var out LegacyAllow
	for i, raw := range list {
		id, err := legacyAllowEntry(f.Channel, raw)
		switch {
		case err != nil:
			out.Skipped = append(out.Skipped, LegacySkip{i, fmt.Sprintf("allowFrom[%d]", i), err.Error()})
		case id != "" && !slices.Contains(out.SenderIDs, id):
			out.SenderIDs = append(out.SenderIDs, id)
		}
	}
	return out, nil
}

// legacyAllowEntry is one allowFrom entry as a sender id; "" for a blank
// one.
func legacyAllowEntry(ch string, raw json.RawMessage) (string, error) {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber() // a Discord snowflake does not fit a float64
	if err := d.Decode(&v); err != nil {
		return "", errors.New("not JSON")
	}
	var entry string
	switch v := v.(type) {
	case string:
		entry = strings.TrimSpace(v)
	case json.Number:
		if _, err := v.Int64(); err != nil {
			return "", fmt.Errorf("%s is not an integer id", v)
		}
		entry = v.String()
	default:
		return "", fmt.Errorf("%.64s is not a string or a number", raw)
	}
	id := EntryID(ch, entry)
	if id == "" {
		return "", nil
	}
	return id, checkLegacyID(id)
}
