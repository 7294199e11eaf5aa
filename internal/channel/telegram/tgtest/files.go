package tgtest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Telegram's limits as the fake applies them.
const (
	maxUpload   = 50 << 20 // a bot's upload
	maxRequest  = maxUpload + 1<<20
	maxMemory   = 1 << 20 // multipart parts beyond this go to temporary files
	maxPhoto    = 10 << 20
	maxDownload = 20 << 20 // getFile on the cloud Bot API
	maxCaption  = 1024
)

// File is a PhotoSize, Document, Audio, Voice, Video, VideoNote or
// Sticker: the fields Telegram gives, as each has them.
type File struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id"`
	FileSize     int64  `json:"file_size,omitempty"`
	FileName     string `json:"file_name,omitempty"`
	MIMEType     string `json:"mime_type,omitempty"`
	Width        int64  `json:"width,omitempty"`
	Height       int64  `json:"height,omitempty"`
	Duration     int64  `json:"duration,omitempty"`
	Type         string `json:"type,omitempty"` // a sticker's: regular
	IsAnimated   bool   `json:"is_animated,omitempty"`
	IsVideo      bool   `json:"is_video,omitempty"`
}

// Attachment is the file on a message a user sends (Say.File).
type Attachment struct {
	// Kind is the message's field: photo, document, audio, voice,
	// video, video_note or sticker.
	Kind string
	Name string // file_name, for the kinds that have one
	MIME string // mime_type, for the kinds that have one
	Data []byte
	// Size, when not 0, is the file_size announced instead of
	// len(Data), as a server that misstates it would.
	Size int64
	// Chunked serves the download without Content-Length, so only
	// counting tells its size.
	Chunked bool
}

// stored is a file users sent, as getFile and the download serve it.
type stored struct {
	id, path string
	data     []byte
	size     int64
	chunked  bool
}

// attachLocked stores a's bytes and puts the file on msg as Telegram
// would: a photo in two sizes (a thumbnail first), the rest as one.
func (s *Server) attachLocked(msg *Message, a Attachment) {
	size := a.Size
	if size == 0 {
		size = int64(len(a.Data))
	}
	add := func(dir, ext string, data []byte, size int64) File {
		n := len(s.files) + 1
		st := &stored{id: fmt.Sprintf("AgAC-file-%d", n), path: fmt.Sprintf("%s/file_%d%s", dir, n, ext),
			data: data, size: size, chunked: a.Chunked}
		s.files[st.id] = st
		return File{FileID: st.id, FileUniqueID: fmt.Sprintf("AQAD%d", n), FileSize: size}
	}
	switch a.Kind {
	case "photo":
		thumb := add("photos", ".jpg", a.Data[:min(len(a.Data), 64)], int64(min(len(a.Data), 64)))
		thumb.Width, thumb.Height = 90, 60
		full := add("photos", ".jpg", a.Data, size)
		full.Width, full.Height = 1280, 853
		msg.Photo = []File{thumb, full}
	case "sticker":
		f := add("stickers", ".webp", a.Data, size)
		f.Width, f.Height, f.Type = 512, 512, "regular"
		msg.Sticker = &f
	default:
		f := add(a.Kind+"s", "", a.Data, size)
		f.FileName, f.MIMEType = a.Name, a.MIME
		switch a.Kind {
		case "document":
			msg.Document = &f
		case "audio":
			msg.Audio = &f
		case "voice":
			f.FileName = ""
			msg.Voice = &f
		case "video":
			msg.Video = &f
		case "video_note":
			f.FileName, f.MIMEType = "", ""
			msg.VideoNote = &f
		default:
			panic("tgtest: unknown attachment kind " + a.Kind)
		}
	}
}

func (s *Server) getFile(w http.ResponseWriter, p map[string]json.RawMessage) {
	id := strParam(p, "file_id")
	s.mu.Lock()
	st := s.files[id]
	s.mu.Unlock()
	switch {
	case id == "":
		refuse(w, badRequest("file_id not specified"))
	case st == nil:
		refuse(w, badRequest("invalid file_id"))
	case int64(len(st.data)) > maxDownload:
		refuse(w, badRequest("file is too big"))
	default:
		reply(w, map[string]any{"file_id": st.id, "file_unique_id": "AQAD" + st.id, "file_size": st.size, "file_path": st.path})
	}
}

// serveFile answers GET /file/bot<token>/<file_path>.
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request, rest string) {
	token, path, _ := strings.Cut(rest, "/")
	s.mu.Lock()
	var st *stored
	for _, f := range s.files {
		if f.path == path {
			st = f
		}
	}
	ok := token == s.Token && !s.revoked && r.Method == http.MethodGet
	s.mu.Unlock()
	if !ok || st == nil {
		refuse(w, Failure{Code: 404, Description: "Not Found"})
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	if st.chunked {
		_, _ = w.Write(st.data[:len(st.data)/2])
		http.NewResponseController(w).Flush() // no Content-Length from here on
		_, _ = w.Write(st.data[len(st.data)/2:])
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(st.data)))
	_, _ = w.Write(st.data)
}

// Upload is a file the bot sent (sendPhoto, sendDocument or sendVoice).
type Upload struct {
	MessageID int64
	Method    string // sendPhoto, sendDocument or sendVoice
	ChatID    string
	ThreadID  int64
	Name      string // the part's filename
	MIME      string // the part's Content-Type
	Data      []byte
	Caption   string // as sent (HTML when ParseMode is "HTML")
	ParseMode string
	ReplyTo   int64
	// Voice says the message is a voice note: a sendVoice of audio
	// Telegram plays as one.
	Voice bool
}

// Uploads are the files the bot has sent, in order.
func (s *Server) Uploads() []Upload {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.uploads)
}

func (s *Server) sendFile(w http.ResponseWriter, r *http.Request, method string, p map[string]json.RawMessage) {
	f := s.nextFailure(method)
	if f != nil && !f.Drop {
		refuse(w, *f)
		return
	}
	field := strings.ToLower(strings.TrimPrefix(method, "send"))
	up, bad := upload(r, field)
	chatID, ok := chatParam(p)
	caption, mode := strParam(p, "caption"), strParam(p, "parse_mode")
	thread := intParam(p, "message_thread_id")
	switch {
	case bad != "":
	case !ok:
		bad = "chat not found"
	case thread == 1:
		bad = "message thread not found"
	case field == "photo" && len(up.Data) > maxPhoto:
		bad = "PHOTO_SAVE_FILE_INVALID"
	case field == "photo" && !isImage(up.Data):
		bad = "IMAGE_PROCESS_FAILED"
	}
	shown := caption
	if bad == "" && caption != "" {
		shown, bad = captionText(caption, mode)
	}
	if bad != "" {
		refuse(w, badRequest(bad))
		return
	}
	var rp struct {
		MessageID int64 `json:"message_id"`
	}
	_ = json.Unmarshal(p["reply_parameters"], &rp)
	s.mu.Lock()
	chatNum, _ := strconv.ParseInt(chatID, 10, 64)
	var replied *Message
	if rp.MessageID != 0 {
		if replied = s.messages[msgKey(chatNum, rp.MessageID)]; replied == nil {
			s.mu.Unlock()
			refuse(w, badRequest("message to be replied not found"))
			return
		}
	}
	s.nextMsg++
	bot := s.Bot
	msg := Message{MessageID: s.nextMsg, From: &bot, Chat: s.botChatLocked(chatNum, thread), Date: time.Now().Unix(),
		Caption: shown, MessageThreadID: thread, IsTopicMessage: thread != 0, ReplyToMessage: replied}
	file := File{FileID: fmt.Sprintf("BQAC-sent-%d", msg.MessageID), FileUniqueID: fmt.Sprintf("AgAD%d", msg.MessageID), FileSize: int64(len(up.Data))}
	switch voiceType := voiceMIME(up.Data); {
	case field == "photo":
		msg.Photo = []File{file}
	case field == "voice" && voiceType != "":
		file.MIMEType, file.Duration = voiceType, intParam(p, "duration")
		if file.Duration == 0 {
			file.Duration = oggSeconds(up.Data)
		}
		msg.Voice, up.Voice = &file, true
	default:
		file.FileName, file.MIMEType = up.Name, up.MIME
		msg.Document = &file
	}
	s.messages[msgKey(chatNum, msg.MessageID)] = &msg
	up.MessageID, up.Method, up.ChatID, up.ThreadID = msg.MessageID, method, chatID, thread
	up.Caption, up.ParseMode, up.ReplyTo = caption, mode, rp.MessageID
	s.uploads = append(s.uploads, up)
	s.notify()
	s.mu.Unlock()
	answer(w, f, msg)
}

// upload reads the file part named field, or Telegram's refusal.
func upload(r *http.Request, field string) (Upload, string) {
	if r.MultipartForm == nil || len(r.MultipartForm.File[field]) == 0 {
		if r.FormValue(field) != "" {
			return Upload{}, "wrong remote file identifier specified: Wrong string length"
		}
		return Upload{}, "there is no " + field + " in the request"
	}
	h := r.MultipartForm.File[field][0]
	fh, err := h.Open()
	if err != nil {
		return Upload{}, "can't read the file"
	}
	defer fh.Close()
	data, err := io.ReadAll(fh)
	switch {
	case err != nil:
		return Upload{}, "can't read the file"
	case len(data) == 0:
		return Upload{}, "file must be non-empty"
	}
	return Upload{Name: h.Filename, MIME: h.Header.Get("Content-Type"), Data: data}, ""
}

// isImage says data starts as a JPEG or PNG does.
func isImage(data []byte) bool {
	return bytes.HasPrefix(data, []byte("\xff\xd8\xff")) || bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n"))
}

// captionText is a caption as Telegram shows it, or its refusal.
func captionText(caption, mode string) (string, string) {
	shown, bad := messageText(caption, mode)
	switch {
	case bad == "message text is empty":
		return "", ""
	case bad != "":
		return "", bad
	case utf16Len(shown) > maxCaption:
		return "", "message caption is too long"
	}
	return shown, ""
}

// voiceMIME is the type of audio Telegram plays as a voice note (Bot API
// sendVoice: Ogg Opus, MP3, M4A), told from its first bytes; "" for
// anything else.
func voiceMIME(data []byte) string {
	switch {
	case len(data) >= 36 && string(data[:4]) == "OggS" && string(data[28:36]) == "OpusHead":
		return "audio/ogg"
	case bytes.HasPrefix(data, []byte("ID3")) || len(data) >= 2 && data[0] == 0xFF && data[1]&0xE0 == 0xE0:
		return "audio/mpeg"
	case len(data) >= 12 && string(data[4:8]) == "ftyp" && string(data[8:11]) == "M4A":
		return "audio/mp4"
	}
	return ""
}

// oggSeconds is an Ogg Opus stream's length in whole seconds, rounded:
// its last page's granule position less the OpusHead pre-skip, at
// Opus's 48 kHz (RFC 7845 §4); 0 when data is not one.
func oggSeconds(data []byte) int64 {
	last := bytes.LastIndex(data, []byte("OggS"))
	if voiceMIME(data) != "audio/ogg" || last < 0 || len(data) < last+14 {
		return 0
	}
	granule := int64(binary.LittleEndian.Uint64(data[last+6:]))
	preSkip := int64(binary.LittleEndian.Uint16(data[38:]))
	if granule <= preSkip {
		return 0
	}
	return (granule - preSkip + 24000) / 48000
}
