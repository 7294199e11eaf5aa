package slack

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"unicode/utf8"

	"talon/internal/channel"
)

var _ channel.Attacher = (*App)(nil)

// maxUpload is Slack's limit on one file.
const maxUpload = 1 << 30

// uploadTicket is files.getUploadURLExternal's answer.
type uploadTicket struct {
	UploadURL string `json:"upload_url"`
	FileID    string `json:"file_id"`
}

// SendFile shares f in t the way Slack's files.uploadV2 does: ask
// files.getUploadURLExternal for an upload URL, POST the bytes there, then
// files.completeUploadExternal with channel_id (and thread_ts,
// initial_comment). Slack answers the file's id, not the ts of the message
// it shares the file in (that comes later, asynchronously), so Sent's
// MessageID is the file id (F…). Only a 429 is retried, as for Send.
func (a *App) SendFile(ctx context.Context, t channel.Target, f channel.File, replyTo string) (channel.Sent, error) {
	thread, comment, err := checkFile(t, f, replyTo, maxUpload)
	if err != nil {
		return channel.Sent{}, fmt.Errorf("slack send file: %w", err)
	}
	ch, err := a.conversation(ctx, t)
	if err != nil {
		return channel.Sent{}, fmt.Errorf("slack send file: %w", err)
	}
	id, err := a.uploadBytes(ctx, f)
	if err != nil {
		a.report(ctx, err)
		return channel.Sent{}, fmt.Errorf("slack send file: %w", err)
	}
	files, _ := json.Marshal([]map[string]string{{"id": id, "title": f.Name}})
	args := url.Values{"files": {string(files)}, "channel_id": {ch}}
	if thread != "" {
		args.Set("thread_ts", thread)
	}
	if comment != "" {
		args.Set("initial_comment", comment)
	}
	if err := a.write(ctx, "files.completeUploadExternal", args, nil); err != nil {
		a.report(ctx, err)
		return channel.Sent{}, fmt.Errorf("slack send file: %w", err)
	}
	if thread != "" {
		a.threads.put(ch+"/"+thread, struct{}{})
	}
	a.mu.Lock()
	a.st.LastOutboundAt = a.now()
	a.mu.Unlock()
	return channel.Sent{MessageID: id}, nil
}

// checkFile validates a file to send, of at most limit bytes, and returns
// its thread and comment.
func checkFile(t channel.Target, f channel.File, replyTo string, limit int) (thread, comment string, err error) {
	if !validID(t.Peer.ID) {
		return "", "", fmt.Errorf("target %q is not a Slack channel or user id", clip(t.Peer.ID, 80))
	}
	thread = cmp.Or(t.ThreadID, replyTo)
	if thread != "" && !tsRE.MatchString(thread) {
		return "", "", fmt.Errorf("thread %q is not a Slack ts", clip(thread, 80))
	}
	switch {
	case f.Name == "" || len(f.Name) > 255 || !utf8.ValidString(f.Name):
		return "", "", errors.New("the file name must be 1 to 255 bytes of UTF-8")
	case len(f.Data) == 0:
		return "", "", errors.New("the file is empty")
	case len(f.Data) > limit:
		return "", "", fmt.Errorf("the file is %d bytes, over Slack's limit of %d: %w", len(f.Data), limit, channel.ErrTooLarge)
	}
	comment = cmp.Or(f.Caption, f.CaptionPlain)
	if comment != "" {
		if err := checkText(comment); err != nil {
			return "", "", fmt.Errorf("caption: %w", err)
		}
	}
	return thread, comment, nil
}

// uploadBytes gets an upload URL and POSTs f's bytes to it, returning the
// file's id. The URL carries its own authorisation: no token is sent.
func (a *App) uploadBytes(ctx context.Context, f channel.File) (string, error) {
	var tk uploadTicket
	args := url.Values{"filename": {f.Name}, "length": {strconv.Itoa(len(f.Data))}}
	if err := a.write(ctx, "files.getUploadURLExternal", args, &tk); err != nil {
		return "", err
	}
	if !validID(tk.FileID) {
		return "", errors.New("files.getUploadURLExternal answered no valid file_id")
	}
	u, err := a.fileURL(tk.UploadURL)
	if err != nil {
		return "", fmt.Errorf("files.getUploadURLExternal's upload_url: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(f.Data))
	if err != nil {
		return "", fmt.Errorf("uploading the bytes: %w", err)
	}
	req.Header.Set("Content-Type", cmp.Or(f.MIME, "application/octet-stream"))
	resp, err := a.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("uploading the bytes: %w", err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("uploading the bytes: HTTP %d", resp.StatusCode)
	}
	return tk.FileID, nil
}
