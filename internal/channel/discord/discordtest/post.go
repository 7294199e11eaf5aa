package discordtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"
)

// MaxUpload is the fake's upload limit unless SetUploadLimit changes
// it: Discord's default for a bot.
const MaxUpload = 25 << 20

// SetUploadLimit sets the most bytes a post's files may have in all
// (Discord's limit depends on the server's boost level).
func (s *Server) SetUploadLimit(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.uploadLimit = n
}

// Poll is a poll the bot posted, as Discord received it.
type Poll struct {
	Question string
	Answers  []string
	Duration int // hours; 0 when the bot left Discord's default (24)
	Multi    bool
}

// Button is a button of a message the bot posted.
type Button struct {
	Label    string
	Style    int
	CustomID string
}

// postIn is the body of POST /channels/{id}/messages (JSON, or a
// multipart form's payload_json).
type postIn struct {
	Content          string           `json:"content"`
	Nonce            json.RawMessage  `json:"nonce"`
	EnforceNonce     bool             `json:"enforce_nonce"`
	Flags            int              `json:"flags"`
	MessageReference *messageRef      `json:"message_reference"`
	AllowedMentions  *AllowedMentions `json:"allowed_mentions"`
	Attachments      []struct {
		ID       json.RawMessage `json:"id"`
		Filename string          `json:"filename"`
	} `json:"attachments"`
	Poll       *pollIn         `json:"poll"`
	Components json.RawMessage `json:"components"`
}

type pollIn struct {
	Question struct {
		Text string `json:"text"`
	} `json:"question"`
	Answers []struct {
		PollMedia struct {
			Text string `json:"text"`
		} `json:"poll_media"`
	} `json:"answers"`
	Duration         *int `json:"duration"`
	AllowMultiselect bool `json:"allow_multiselect"`
	LayoutType       int  `json:"layout_type"`
}

type component struct {
	Type       int         `json:"type"`
	Style      int         `json:"style,omitempty"`
	Label      string      `json:"label,omitempty"`
	CustomID   string      `json:"custom_id,omitempty"`
	URL        string      `json:"url,omitempty"`
	Components []component `json:"components,omitempty"`
}

// formError is a 400 Invalid Form Body (code 50035) naming the field.
type formError struct {
	status, code int
	msg          string
}

func invalid(field, why string) *formError {
	return &formError{http.StatusBadRequest, 50035, "Invalid Form Body: " + field + ": " + why}
}

// readPost reads a post as JSON or as multipart/form-data with
// payload_json and files[n], as Discord takes either.
func readPost(r *http.Request, limit int64) (postIn, []File, *formError) {
	var in postIn
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" {
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&in); err != nil {
			return in, nil, &formError{http.StatusBadRequest, 50109, "The request body contains invalid JSON."}
		}
		return in, nil, nil
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return in, nil, invalid("body", err.Error())
	}
	var files []File
	var total int64
	sawPayload := false
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return in, nil, invalid("body", err.Error())
		}
		data, err := io.ReadAll(io.LimitReader(part, limit+1-total))
		if err != nil {
			return in, nil, invalid("body", err.Error())
		}
		if total += int64(len(data)); total > limit {
			return in, nil, &formError{http.StatusRequestEntityTooLarge, 40005, "Request entity too large"}
		}
		switch name := part.FormName(); {
		case name == "payload_json":
			if json.Unmarshal(data, &in) != nil {
				return in, nil, &formError{http.StatusBadRequest, 50109, "The request body contains invalid JSON."}
			}
			sawPayload = true
		case strings.HasPrefix(name, "files[") && strings.HasSuffix(name, "]"):
			if part.FileName() == "" {
				return in, nil, invalid(name, "a file part needs a filename")
			}
			files = append(files, File{Name: part.FileName(), MIME: part.Header.Get("Content-Type"), Data: data})
		default:
			return in, nil, invalid(name, "unknown form field")
		}
	}
	if !sawPayload {
		return in, nil, invalid("payload_json", "missing")
	}
	if len(files) > 10 {
		return in, nil, invalid("files", "Must be 10 or fewer in length.")
	}
	return in, files, nil
}

// check validates a post as Discord does.
func (in *postIn) check(files []File) (*Poll, []Button, *formError) {
	switch {
	case utf8.RuneCountInString(in.Content) > 2000:
		return nil, nil, invalid("content", "Must be 2000 or fewer in length.")
	case strings.TrimSpace(in.Content) == "" && len(files) == 0 && in.Poll == nil && len(in.Components) == 0:
		return nil, nil, &formError{http.StatusBadRequest, 50006, "Cannot send an empty message"}
	}
	poll, err := in.poll()
	if err != nil {
		return nil, nil, err
	}
	buttons, err := buttons(in.Components)
	return poll, buttons, err
}

func (in *postIn) poll() (*Poll, *formError) {
	p := in.Poll
	if p == nil {
		return nil, nil
	}
	q := p.Question.Text
	switch {
	case strings.TrimSpace(q) == "":
		return nil, invalid("poll.question.text", "This field is required")
	case utf8.RuneCountInString(q) > 300:
		return nil, invalid("poll.question.text", "Must be 300 or fewer in length.")
	case len(p.Answers) < 1 || len(p.Answers) > 10:
		return nil, invalid("poll.answers", "Must be between 1 and 10 in length.")
	case p.Duration != nil && (*p.Duration < 1 || *p.Duration > 768):
		return nil, invalid("poll.duration", "int value should be between 1 and 768.")
	case p.LayoutType != 0 && p.LayoutType != 1:
		return nil, invalid("poll.layout_type", "Value must be one of {1}.")
	}
	out := &Poll{Question: q, Multi: p.AllowMultiselect}
	if p.Duration != nil {
		out.Duration = *p.Duration
	}
	for i, a := range p.Answers {
		t := a.PollMedia.Text
		if strings.TrimSpace(t) == "" || utf8.RuneCountInString(t) > 55 {
			return nil, invalid(fmt.Sprintf("poll.answers.%d.poll_media.text", i), "Must be between 1 and 55 in length.")
		}
		out.Answers = append(out.Answers, t)
	}
	return out, nil
}

// buttons checks components as Discord does for a bot's message: action
// rows (type 1, at most 5) of 1–5 buttons (type 2); a non-link button
// needs a custom_id of 1–100 characters, unique in the message, and a
// label of at most 80.
func buttons(raw json.RawMessage) ([]Button, *formError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var rows []component
	if json.Unmarshal(raw, &rows) != nil {
		return nil, invalid("components", "Must be an array of components.")
	}
	if len(rows) > 5 {
		return nil, invalid("components", "Must be 5 or fewer in length.")
	}
	var out []Button
	seen := map[string]bool{}
	for i, row := range rows {
		field := fmt.Sprintf("components.%d", i)
		if row.Type != 1 || len(row.Components) < 1 || len(row.Components) > 5 {
			return nil, invalid(field, "an action row (type 1) of 1 to 5 components")
		}
		for j, c := range row.Components {
			field := fmt.Sprintf("%s.components.%d", field, j)
			switch {
			case c.Type != 2:
				return nil, invalid(field+".type", "only buttons (2) are supported here")
			case c.Style < 1 || c.Style > 5:
				return nil, invalid(field+".style", "Value must be one of {1, 2, 3, 4, 5}.")
			case c.Style == 5 && (c.URL == "" || c.CustomID != ""):
				return nil, invalid(field, "a link button has a url and no custom_id")
			case c.Style != 5 && (c.CustomID == "" || utf8.RuneCountInString(c.CustomID) > 100):
				return nil, invalid(field+".custom_id", "Must be between 1 and 100 in length.")
			case utf8.RuneCountInString(c.Label) > 80:
				return nil, invalid(field+".label", "Must be 80 or fewer in length.")
			case c.CustomID != "" && seen[c.CustomID]:
				return nil, invalid(field+".custom_id", "Component custom id cannot be duplicated")
			}
			seen[c.CustomID] = true
			out = append(out, Button{Label: c.Label, Style: c.Style, CustomID: c.CustomID})
		}
	}
	return out, nil
}
