package config

// MergePatch applies patch to base as OpenClaw's config.patch does
// (gateway-protocol.md §6): an RFC 7386 merge patch, where objects merge
// recursively, null deletes a key, and scalars and arrays replace, except
// that an array whose elements, in both base and patch, are all objects with
// a non-empty string "id" is merged by id. A patch element with a known id is
// merge-patched into that element in place; unknown ids are appended in patch
// order. The keys __proto__, constructor and prototype are dropped wherever
// they appear in the patch. The result is a new tree (base member order
// kept, new keys appended in patch order); base and patch are not modified.
// A nil patch changes nothing.
//
// Two choices where OpenClaw's code and the RFC part ways:
//   - An empty patch array replaces, so `"list": []` empties a list. In
//     OpenClaw "every element has an id" is vacuously true for [], which
//     silently keeps the whole base list; that surprises anyone who meant
//     to clear it, and null remains the way to delete the key.
//   - An appended id element is itself merge-patched into an empty object, so
//     nulls inside it are dropped as RFC 7386 says for new objects (OpenClaw
//     copies it verbatim, nulls included).
func MergePatch(base, patch *Value) *Value {
	if patch == nil {
		return base.Clone()
	}
	if patch.Kind != Object {
		return cloneUnblocked(patch)
	}
	out := &Value{Kind: Object, Members: []Member{}}
	if base != nil && base.Kind == Object {
		out = base.Clone()
	}
	// An index instead of Get/Set/Delete keeps a large patch linear.
	at := make(map[string]int, len(out.Members)+len(patch.Members))
	for i, m := range out.Members {
		if _, dup := at[m.Key]; !dup {
			at[m.Key] = i
		}
	}
	gone := map[int]bool{}
	for _, m := range patch.Members {
		if blockedKey(m.Key) {
			continue
		}
		i, ok := at[m.Key]
		if m.Value.IsNull() {
			if ok {
				gone[i] = true
				delete(at, m.Key)
			}
			continue
		}
		var cur *Value
		if ok {
			cur = out.Members[i].Value
		}
		var next *Value
		if merged, isIDMerge := mergeByID(cur, m.Value); isIDMerge {
			next = merged
		} else if m.Value.Kind == Object {
			next = MergePatch(cur, m.Value)
		} else {
			next = cloneUnblocked(m.Value)
		}
		if ok {
			out.Members[i].Value = next
		} else {
			at[m.Key] = len(out.Members)
			out.Members = append(out.Members, Member{Key: m.Key, Value: next})
		}
	}
	if len(gone) > 0 {
		kept := out.Members[:0]
		for i, m := range out.Members {
			if !gone[i] {
				kept = append(kept, m)
			}
		}
		out.Members = kept
	}
	return out
}

// cloneUnblocked copies a replacing patch value without the ignored keys, so
// they are dropped wherever they appear in a patch, not only at merge points.
func cloneUnblocked(v *Value) *Value {
	c := v.Clone()
	var strip func(v *Value)
	strip = func(v *Value) {
		if v == nil {
			return
		}
		for _, it := range v.Items {
			strip(it)
		}
		kept := v.Members[:0]
		for _, m := range v.Members {
			if !blockedKey(m.Key) {
				strip(m.Value)
				kept = append(kept, m)
			}
		}
		if v.Members != nil {
			v.Members = kept
		}
	}
	strip(c)
	return c
}

// mergeByID merges two id-keyed arrays; ok is false when either is not one.
func mergeByID(base, patch *Value) (*Value, bool) {
	if base == nil || base.Kind != Array || patch.Kind != Array || len(patch.Items) == 0 ||
		!allHaveID(base.Items) || !allHaveID(patch.Items) {
		return nil, false
	}
	out := base.Clone()
	at := make(map[string]int, len(out.Items))
	for i, it := range out.Items {
		at[it.Get("id").Str] = i // a repeated id resolves to the last, as a JS Map does
	}
	for _, p := range patch.Items {
		id := p.Get("id").Str
		if i, ok := at[id]; ok {
			out.Items[i] = MergePatch(out.Items[i], p)
			continue
		}
		at[id] = len(out.Items)
		out.Items = append(out.Items, MergePatch(nil, p))
	}
	return out, true
}

func allHaveID(items []*Value) bool {
	for _, it := range items {
		if id := idOf(it); id == "" {
			return false
		}
	}
	return true
}

// idOf is the non-empty string id of an object element, or "".
func idOf(v *Value) string {
	if v == nil || v.Kind != Object {
		return ""
	}
	id := v.Get("id")
	if id == nil || id.Kind != String {
		return ""
	}
	return id.Str
}
