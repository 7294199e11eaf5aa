package tools

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode"
)

// maxErrorBody is how much of a refusal's body is read for its message.
const maxErrorBody = 64 << 10

// maxErrorMessage bounds the remote message quoted to the model.
const maxErrorMessage = 300

// APIError explains a remote API's non-2xx answer for the model: a
// refused key (401, 403), a rate limit (429, with Retry-After when
// given), a refused request (other 4xx) or a failure of the service
// (5xx), with the message the body carries. Every secret (the call's
// key) is cut out of that message, as some APIs quote the key they
// refused. It reads at most 64 KiB of the body.
func APIError(service string, resp *http.Response, secrets ...string) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	msg := apiMessage(body, secrets)
	code := resp.StatusCode
	var what string
	switch {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		what = fmt.Sprintf("the API key was refused (HTTP %d)", code)
	case code == http.StatusTooManyRequests:
		what = "rate limited (HTTP 429): the account's request rate or quota is used up; "
		if ra := retryAfter(resp.Header.Get("Retry-After")); ra != "" {
			what += "retry after " + ra
		} else {
			what += "it gave no retry time, so wait before trying again"
		}
	case code >= 400 && code < 500:
		what = fmt.Sprintf("the request was refused (HTTP %d)", code)
	default:
		what = fmt.Sprintf("the service failed (HTTP %d); try again later", code)
	}
	if msg != "" {
		return fmt.Errorf("%s: %s: %s", service, what, msg)
	}
	return fmt.Errorf("%s: %s", service, what)
}

// retryAfter words a Retry-After header: delay seconds or an HTTP date;
// anything else is dropped.
func retryAfter(h string) string {
	h = strings.TrimSpace(h)
	if n, err := strconv.Atoi(h); err == nil && n >= 0 {
		if n == 1 {
			return "1 second"
		}
		return strconv.Itoa(n) + " seconds"
	}
	if t, err := http.ParseTime(h); err == nil {
		return t.UTC().Format("15:04:05 UTC")
	}
	return ""
}

// apiMessage is the message of an error body in the shapes APIs use —
// {"error":{"message"}} (OpenAI), {"detail":{"message"}} or
// {"detail":"…"} (ElevenLabs), {"detail":[{"msg"}]} (validation),
// {"error":"…"}, {"message":"…"} — else the body's text when it is
// short plain text; one line, without control characters or secrets.
func apiMessage(body []byte, secrets []string) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Detail  json.RawMessage `json:"detail"`
		Message string          `json:"message"`
	}
	msg := ""
	if json.Unmarshal(body, &v) == nil {
		msg = firstText(v.Error, v.Detail)
		if msg == "" {
			msg = v.Message
		}
	} else if t := strings.TrimSpace(string(body)); !strings.HasPrefix(t, "<") {
		msg = t
	}
	for _, s := range secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "[redacted]")
		}
	}
	msg = strings.Join(strings.FieldsFunc(msg, func(r rune) bool { return unicode.IsControl(r) || r == unicode.ReplacementChar }), " ")
	if r := []rune(strings.TrimSpace(msg)); len(r) > maxErrorMessage {
		return string(r[:maxErrorMessage]) + "…"
	}
	return strings.TrimSpace(msg)
}

// firstText is the first message among JSON values that are a string,
// an object with message (or msg, or detail: Brave's), or a list of such
// objects.
func firstText(vals ...json.RawMessage) string {
	for _, raw := range vals {
		var s string
		if json.Unmarshal(raw, &s) == nil && s != "" {
			return s
		}
		var o struct{ Message, Msg, Detail string }
		if json.Unmarshal(raw, &o) == nil && (o.Message != "" || o.Msg != "" || o.Detail != "") {
			return firstOf(firstOf(o.Message, o.Msg), o.Detail)
		}
		var l []struct{ Message, Msg string }
		if json.Unmarshal(raw, &l) == nil && len(l) > 0 {
			return firstOf(l[0].Message, l[0].Msg)
		}
	}
	return ""
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
