package api

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
)

// decode reads the request's JSON body into v: the content type must be
// JSON (415), the body one object with no unknown fields (400 naming the
// field), within MaxBody (413, from the MaxBytesReader wrap put there).
func decode(r *http.Request, v any) error {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return errorf(http.StatusUnsupportedMediaType, "unsupported_media_type", "Content-Type is %q; send application/json", ct)
	}
	return decodeJSON(r.Body, v)
}

func decodeJSON(body io.Reader, v any) error {
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return bodyError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return err
		}
		return errorf(http.StatusBadRequest, "invalid_body", "the body must hold one JSON object and nothing after it")
	}
	return nil
}

func bodyError(err error) error {
	var (
		mb   *http.MaxBytesError
		typ  *json.UnmarshalTypeError
		syn  *json.SyntaxError
		name string
	)
	switch {
	case errors.As(err, &mb):
		return err
	case errors.Is(err, io.EOF):
		return errorf(http.StatusBadRequest, "invalid_body", "the body is empty; send a JSON object")
	case errors.As(err, &typ):
		if typ.Field == "" {
			return errorf(http.StatusBadRequest, "invalid_body", "the body must be a JSON object, not %s", typ.Value)
		}
		return badField(typ.Field, "must be %s, not %s", jsonKind(typ.Type.Kind().String()), typ.Value)
	case errors.As(err, &syn):
		return errorf(http.StatusBadRequest, "invalid_body", "the body is not valid JSON at byte %d: %v", syn.Offset, err)
	}
	// DisallowUnknownFields reports `json: unknown field "x"`.
	if rest, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(rest, `"`)
		return errorf(http.StatusBadRequest, "unknown_field", "unknown field %q in the body", name)
	}
	return errorf(http.StatusBadRequest, "invalid_body", "the body is not valid JSON: %v", err)
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "map", "struct":
		return "an object"
	case "slice", "array":
		return "an array"
	case "bool":
		return "a boolean"
	}
	return "a number"
}
