package automation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// patchRule is how cron.update treats one top-level key of a patch.
type patchRule int

const (
	patchSet      patchRule = iota // replaced; null clears
	patchRequired                  // replaced; null refused
	patchMerge                     // an object merged key by key (delivery)
	patchKinded                    // merged while the kind stays, replaced when it changes
)

var patchRules = map[string]patchRule{
	"name": patchRequired, "description": patchSet, "enabled": patchRequired,
	"deleteAfterRun": patchRequired, "agentId": patchSet, "sessionKey": patchSet,
	"schedule": patchKinded, "sessionTarget": patchRequired, "wakeMode": patchSet,
	"payload": patchKinded, "delivery": patchMerge, "failureAlert": patchSet,
}

// serverKeys are a job's keys that only the server writes.
var serverKeys = map[string]string{
	"id": "the job's id", "jobId": "the job's id", "createdAtMs": "set by the server",
	"updatedAtMs": "set by the server", "configRevision": "set by the server",
	"creator": "set by the server", "state": "kept by the scheduler",
}

// ApplyPatch is cron.update's partial patch: each key of patch replaces
// the job's, null clears an optional one (description, agentId,
// sessionKey, wakeMode, delivery, failureAlert), delivery is merged key
// by key, and schedule and payload are merged key by key unless the
// patch changes their kind, which replaces them. The result is neither
// normalized nor validated: cron.update sets UpdatedAtMs, then calls
// Normalize (a new cron schedule gets its zone; a cleared delivery of an
// isolated turn is the default announce again) and Validate, and when
// scheduleChanged — {enabled, schedule} changed — Reschedule (R4.1).
func ApplyPatch(j Job, patch json.RawMessage) (next Job, scheduleChanged bool, err error) {
	if len(patch) > MaxJobJSON {
		return j, false, fmt.Errorf("patch: larger than %d bytes", MaxJobJSON)
	}
	var edits map[string]json.RawMessage
	if err := json.Unmarshal(patch, &edits); err != nil || edits == nil {
		return j, false, errors.New("patch: expected a JSON object")
	}
	cur, err := members(j)
	if err != nil {
		return j, false, err
	}
	for k, v := range edits {
		if err := applyKey(cur, k, v); err != nil {
			return j, false, err
		}
	}
	data, err := json.Marshal(cur)
	if err != nil {
		return j, false, fmt.Errorf("patch: %w", err)
	}
	if err := strictUnmarshal(data, &next); err != nil {
		return j, false, fieldError(err)
	}
	changed := next.Enabled != j.Enabled || !reflect.DeepEqual(next.Schedule, j.Schedule)
	return next, changed, nil
}

// members is a value's JSON object as raw members.
func members(v any) (map[string]json.RawMessage, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("patch: %w", err)
	}
	m := map[string]json.RawMessage{}
	if !isNull(data) {
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("patch: %w", err)
		}
	}
	return m, nil
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

// applyKey applies one top-level key of a patch to the job's members.
func applyKey(cur map[string]json.RawMessage, k string, v json.RawMessage) error {
	if why, ok := serverKeys[k]; ok {
		return fmt.Errorf("%s: cannot be changed (%s)", k, why)
	}
	rule, ok := patchRules[k]
	if !ok {
		return fmt.Errorf("%s: unknown field", k)
	}
	if isNull(v) {
		if rule == patchRequired || rule == patchKinded {
			return fmt.Errorf("%s: required, cannot be cleared", k)
		}
		delete(cur, k)
		return nil
	}
	if rule == patchSet || rule == patchRequired {
		cur[k] = v
		return nil
	}
	merged, err := mergeObject(cur[k], v, rule == patchKinded)
	if err != nil {
		return fmt.Errorf("%s: %w", k, err)
	}
	cur[k] = merged
	return nil
}

// mergeObject merges patch into base one level deep (null deletes a
// key); with kinded, a patch naming another kind replaces base.
func mergeObject(base, patch json.RawMessage, kinded bool) (json.RawMessage, error) {
	var edits map[string]json.RawMessage
	if err := json.Unmarshal(patch, &edits); err != nil || edits == nil {
		return nil, errors.New("expected an object")
	}
	m := map[string]json.RawMessage{}
	if len(base) > 0 && !isNull(base) {
		if err := json.Unmarshal(base, &m); err != nil {
			return nil, err
		}
	}
	if kinded {
		if kind, ok := edits["kind"]; ok && kindOf(kind) != kindOf(m["kind"]) {
			return patch, nil
		}
	}
	for k, v := range edits {
		if isNull(v) {
			delete(m, k)
			continue
		}
		m[k] = v
	}
	return json.Marshal(m)
}

// kindOf reads a raw "kind" member; "" when absent or not a string.
func kindOf(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// fieldError names the field of a JSON type error: "payload.timeoutSeconds:
// expected int".
func fieldError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Errorf("%s: expected %s, got %s", te.Field, te.Type, te.Value)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Errorf("unknown field %s", name)
	}
	return err
}
